"""ElectLeaders, List/AlterPartitionReassignments, DescribeTopicPartitions and
AlterReplicaLogDirs on one broker.

Found by kafka-python's own integration suite (compat/kafka-python-suite): these APIs were not
served, so the admin calls got a closed connection.
"""

from __future__ import annotations

import pytest

import wirebroker.handlers.alter_partition_reassignments
import wirebroker.handlers.alter_replica_log_dirs
import wirebroker.handlers.describe_topic_partitions
import wirebroker.handlers.elect_leaders
import wirebroker.handlers.list_partition_reassignments  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode


@pytest.fixture
def topics(services):
    now = services.clock()
    services.admin.create_topic("b", 3, 1, {}, now_ms=now)
    services.admin.create_topic("a", 2, 1, {}, now_ms=now)
    services.admin.create_topic("c", 1, 1, {}, now_ms=now)


# -- ElectLeaders ----------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2])
async def test_elect_leaders_is_never_needed(call, topics, version):
    body = {
        "election_type": 0,
        "topic_partitions": [
            {"topic": "b", "partitions": [2, 0, 2, 7]},
            {"topic": "nope", "partitions": [0]},
        ],
        "timeout_ms": 1000,
    }
    resp = await call(ApiKey.ELECT_LEADERS, version, body)
    if version >= 1:
        assert resp.error_code == ErrorCode.NONE
    got = [
        (r.topic, [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result])
        for r in resp.replica_election_results
    ]
    # Kafka's controller echoes the request: every partition as asked, duplicates included.
    not_needed = (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition.")
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert got == [
        (
            "b",
            [
                (2, *not_needed),
                (0, *not_needed),
                (2, *not_needed),
                (7, unknown, "No such partition as b-7"),
            ],
        ),
        ("nope", [(0, unknown, "No such topic as nope")]),
    ]


async def test_elect_leaders_for_every_partition_reports_nothing(call, topics):
    resp = await call(
        ApiKey.ELECT_LEADERS, 2, {"election_type": 1, "topic_partitions": None, "timeout_ms": 1}
    )
    assert resp.error_code == ErrorCode.NONE
    assert resp.replica_election_results == []


async def test_elect_leaders_unknown_election_type(call, topics):
    """Kafka 4.4: INVALID_REQUEST for each partition asked for, as asked; none asked for (an
    empty list): NONE; null (every partition): INVALID_REQUEST without results."""

    async def elect(topic_partitions):
        body = {"election_type": 5, "topic_partitions": topic_partitions, "timeout_ms": 1}
        return await call(ApiKey.ELECT_LEADERS, 2, body)

    resp = await elect([{"topic": "b", "partitions": [0, 0]}, {"topic": "nope", "partitions": [1]}])
    assert resp.error_code == ErrorCode.INVALID_REQUEST
    bad = (ErrorCode.INVALID_REQUEST, "Unknown election type 5")
    assert [
        (r.topic, [(p.partition_id, p.error_code, p.error_message) for p in r.partition_result])
        for r in resp.replica_election_results
    ] == [("b", [(0, *bad), (0, *bad)]), ("nope", [(1, *bad)])]
    resp = await elect([])
    assert (resp.error_code, resp.replica_election_results) == (ErrorCode.NONE, [])
    resp = await elect(None)
    assert (resp.error_code, resp.replica_election_results) == (ErrorCode.INVALID_REQUEST, [])


# -- partition reassignments -----------------------------------------------------------------
async def test_list_partition_reassignments_is_empty(call, topics):
    for topics_arg in (None, [{"name": "b", "partition_indexes": [0, 1]}]):
        resp = await call(
            ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 1, "topics": topics_arg}
        )
        assert resp.error_code == ErrorCode.NONE
        assert resp.topics == []


@pytest.mark.parametrize("version", [0, 1])
async def test_alter_partition_reassignments(call, services, topics, version):
    node = services.node_id

    def part(index, replicas):
        return {"partition_index": index, "replicas": replicas}

    body = {
        "timeout_ms": 1,
        "topics": [
            {
                "name": "b",
                "partitions": [
                    part(0, [node]),
                    part(1, None),
                    part(2, [node, node + 1]),
                    part(3, [node]),
                ],
            },
            {"name": "a", "partitions": [part(0, []), part(1, [node, node])]},
        ],
    }
    resp = await call(ApiKey.ALTER_PARTITION_REASSIGNMENTS, version, body)
    assert resp.error_code == ErrorCode.NONE
    got = {(t.name, p.partition_index): p.error_code for t in resp.responses for p in t.partitions}
    invalid = ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    assert got == {
        ("b", 0): ErrorCode.NONE,
        ("b", 1): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
        ("b", 2): invalid,
        ("b", 3): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("a", 0): invalid,
        ("a", 1): invalid,
    }
    messages = {
        (t.name, p.partition_index): p.error_message for t in resp.responses for p in t.partitions
    }
    assert messages[("b", 0)] is None
    assert messages[("b", 1)] is None  # NO_REASSIGNMENT_IN_PROGRESS without a text, as Kafka
    assert messages[("b", 2)] == (
        f"The manual partition assignment includes broker {node + 1}, but no such broker is "
        "registered."
    )
    assert messages[("b", 3)] == "Unable to find partition b:3."
    assert messages[("a", 0)] == "The manual partition assignment includes an empty replica list."
    assert len(services.replicas.partitions_of("b")) == 3  # nothing changed


# -- DescribeTopicPartitions ---------------------------------------------------------------
async def describe(call, names, limit=2000, cursor=None):
    return await call(
        ApiKey.DESCRIBE_TOPIC_PARTITIONS,
        0,
        {
            "topics": [{"name": n} for n in names],
            "response_partition_limit": limit,
            "cursor": cursor,
        },
    )


def pages(resp):
    return [(t.name, [p.partition_index for p in t.partitions]) for t in resp.topics]


async def test_describe_topic_partitions_lists_sorted_topics(call, services, topics):
    resp = await describe(call, ["c", "b", "missing", "b"])
    assert pages(resp) == [("b", [0, 1, 2]), ("c", [0]), ("missing", [])]
    codes = {t.name: t.error_code for t in resp.topics}
    assert codes == {"b": 0, "c": 0, "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert resp.next_cursor is None
    b = resp.topics[0]
    assert b.topic_id == services.cluster.topic("b").topic_id
    assert all(p.leader_id == services.node_id for p in b.partitions)
    assert all(list(p.replica_nodes) == [services.node_id] for p in b.partitions)


async def test_describe_topic_partitions_pages_with_a_cursor(call, topics):
    first = await describe(call, [], limit=2)  # every topic: a(2) b(3) c(1)
    assert pages(first) == [("a", [0, 1])]
    assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("b", 0)
    cursor = {"topic_name": "b", "partition_index": 0}
    second = await describe(call, [], limit=2, cursor=cursor)
    assert pages(second) == [("b", [0, 1])]
    assert (second.next_cursor.topic_name, second.next_cursor.partition_index) == ("b", 2)
    third = await describe(call, [], limit=2, cursor={"topic_name": "b", "partition_index": 2})
    assert pages(third) == [("b", [2]), ("c", [0])]
    assert third.next_cursor is None


async def test_describe_topic_partitions_cursor_outside_the_request(call, topics):
    """As Kafka 4.4: with listed topics the cursor must name one of them (else INVALID_REQUEST
    for each, operations "not provided"); with every topic, a cursor naming no topic starts the
    page at the first name after it, and the partition limit still holds."""
    resp = await describe(call, ["a", "c"], cursor={"topic_name": "b", "partition_index": 0})
    assert {t.name: (t.error_code, t.topic_authorized_operations) for t in resp.topics} == {
        "a": (ErrorCode.INVALID_REQUEST, -(2**31)),
        "c": (ErrorCode.INVALID_REQUEST, -(2**31)),
    }
    page = await describe(call, [], limit=1, cursor={"topic_name": "a-", "partition_index": 0})
    first = page.topics[0]
    assert (first.name, first.error_code) == ("b", ErrorCode.NONE)
    assert sum(len(t.partitions) for t in page.topics) == 1
    assert page.next_cursor is not None


# -- AlterReplicaLogDirs ---------------------------------------------------------------------
@pytest.mark.parametrize("version", [1, 2])
async def test_alter_replica_log_dirs(make_services, call_with, tmp_path, version):
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    services = make_services(**{"log.dirs": f"{d1},{d2}"})
    services.admin.create_topic("t", 4, 1, {}, now_ms=services.clock())
    where = {i: str(services.logs.log_dir_of("t", i)) for i in range(4)}
    assert len(set(where.values())) == 2, "partitions should spread over both dirs"
    other = {str(d1): str(d2), str(d2): str(d1)}
    body = {
        "dirs": [
            {"path": where[0], "topics": [{"name": "t", "partitions": [0]}]},
            {"path": other[where[1]], "topics": [{"name": "t", "partitions": [1]}]},
            {"path": str(tmp_path / "nowhere"), "topics": [{"name": "t", "partitions": [2]}]},
            {"path": where[3], "topics": [{"name": "u", "partitions": [0]}]},
        ]
    }
    resp = await call_with(services, ApiKey.ALTER_REPLICA_LOG_DIRS, version, body)
    got = {
        (r.topic_name, p.partition_index): p.error_code for r in resp.results for p in r.partitions
    }
    assert got == {
        ("t", 0): ErrorCode.NONE,  # already there
        ("t", 1): ErrorCode.KAFKA_STORAGE_ERROR,  # would need a move
        ("t", 2): ErrorCode.LOG_DIR_NOT_FOUND,
        ("u", 0): ErrorCode.NONE,  # not hosted: nothing to move
    }
    assert {i: str(services.logs.log_dir_of("t", i)) for i in range(4)} == where
