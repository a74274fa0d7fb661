"""The versions Kafka 4.4 added to APIs wirebroker serves, put to wirebroker and to Apache Kafka
4.4 (the oracle) alike: ApiVersions v5 (KIP-1242), DeleteGroups v3, TxnOffsetCommit v6
(KIP-1319).

Every test runs once against each broker (`bootstrap` is parametrized) and asserts the exact
decoded answer, so an expectation Kafka does not meet fails on Kafka's run and a difference of
wirebroker's fails on its run. What legitimately differs between the two is replaced before
comparing, each named where it happens: the cluster id and node id (each broker's own), topic
ids (made by each broker), and the order of DeleteGroups results (a collection keyed by group
id, `"mapKey": true` in Kafka's JSON; Kafka lists them by `__consumer_offsets` partition).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from wirebroker.testing import BrokerHandle

BROKERS = ["wirebroker", "apache-kafka"]
SOFTWARE = {"client_software_name": "wirebroker-tests", "client_software_version": "1"}
#: Retried answers while a coordinator loads or a transaction's markers are written.
_RETRIABLE = {
    E.COORDINATOR_NOT_AVAILABLE,
    E.COORDINATOR_LOAD_IN_PROGRESS,
    E.NOT_COORDINATOR,
    E.CONCURRENT_TRANSACTIONS,
}


@pytest.fixture(scope="module")
def wirebroker_bootstrap() -> Iterator[str]:
    """One wirebroker for the module (few coordinator partitions: created fast)."""
    broker = BrokerHandle(
        overrides={"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3}
    ).start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


@pytest.fixture(params=BROKERS)
def bootstrap(request: pytest.FixtureRequest) -> str:
    name = "wirebroker_bootstrap" if request.param == "wirebroker" else "apache_kafka"
    return str(request.getfixturevalue(name))


@pytest.fixture
def wire(bootstrap: str) -> Iterator[Wire]:
    with Wire(bootstrap) as w:
        yield w


def plain(value: Any) -> Any:
    """A decoded message as plain dicts and lists (construct's Containers are dicts)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def retried(call: Callable[[], tuple[int, Any]], timeout: float = 60.0) -> Any:
    """`call()` -> (error, answer) again while the error is a coordinator's retriable one."""
    deadline = time.monotonic() + timeout
    while True:
        code, answer = call()
        if code not in _RETRIABLE or time.monotonic() > deadline:
            return answer
        time.sleep(0.05)


def unique(prefix: str) -> str:
    """Names made on the shared oracle outlive the test."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


# -- ApiVersions v5 ------------------------------------------------------------------------------


#: The body of every ApiVersions error answer: no APIs, no features (Kafka's getErrorResponse).
def _error_answer(code: E) -> dict[str, Any]:
    return {
        "error_code": int(code),
        "api_keys": [],
        "throttle_time_ms": 0,
        "supported_features": [],
        "finalized_features_epoch": -1,
        "finalized_features": [],
        "zk_migration_ready": False,
    }


def test_api_versions_v5_checks_the_cluster_and_node_the_client_means(wire: Wire) -> None:
    meta = wire.call(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
    cluster, [node] = meta.cluster_id, [b.node_id for b in meta.brokers]
    cases = [  # (cluster_id, node_id, other fields) -> the error (NONE: the full answer)
        (None, -1, {}, E.NONE),
        (cluster, node, {}, E.NONE),
        ("not-" + cluster, node, {}, E.REBOOTSTRAP_REQUIRED),
        (cluster, node + 1, {}, E.REBOOTSTRAP_REQUIRED),
        (cluster, -1, {}, E.INVALID_REQUEST),  # one without the other
        (None, node, {}, E.INVALID_REQUEST),
        # the request's validity first, then the cluster check
        ("not-" + cluster, node, {"client_software_name": "-x"}, E.INVALID_REQUEST),
    ]
    for cluster_id, node_id, extra, expected in cases:
        body = {**SOFTWARE, "cluster_id": cluster_id, "node_id": node_id, **extra}
        answer = plain(wire.call(ApiKey.API_VERSIONS, 5, body))  # same connection throughout
        if expected is E.NONE:
            assert answer["error_code"] == 0
            ranges = {
                a["api_key"]: (a["min_version"], a["max_version"]) for a in answer["api_keys"]
            }
            assert (ranges[18], ranges[28], ranges[42]) == ((0, 5), (0, 6), (0, 3))
            assert answer["throttle_time_ms"] == 0
            features = {f["name"]: f["max_version_level"] for f in answer["finalized_features"]}
            assert features["transaction.version"] == 2
        else:
            assert answer == _error_answer(expected), (cluster_id, node_id, extra)


def test_api_versions_v5_without_the_new_fields_is_v4(wire: Wire) -> None:
    """A v5 request naming no cluster gets what v4 gets."""
    v4 = plain(wire.call(ApiKey.API_VERSIONS, 4, SOFTWARE))
    v5 = plain(wire.call(ApiKey.API_VERSIONS, 5, SOFTWARE))
    for answer in (v4, v5):
        answer.pop("finalized_features_epoch")  # Kafka's moves with its metadata log
    assert v5 == v4


# -- DeleteGroups v3 -----------------------------------------------------------------------------


def _delete_groups(wire: Wire, version: int, groups: list[str]) -> list[dict[str, Any]]:
    """The results by group id (the order is Kafka's `__consumer_offsets` partition order)."""
    address = wire._coordinator(groups[0])  # one coordinator: a single broker
    answer = plain(wire.call(ApiKey.DELETE_GROUPS, version, {"groups_names": groups}, address))
    assert answer["throttle_time_ms"] == 0
    return sorted(answer["results"], key=lambda r: r["group_id"])


def test_delete_groups_v3_answers_an_error_message_per_group(wire: Wire) -> None:
    wire.ensure_offsets_topic()
    topic, empty, never = unique("dg-topic"), unique("dg-empty"), unique("dg-never")
    wire.create_topic(topic)
    wire.commit(empty, topic, {0: 3})  # a group with offsets and no members: Empty
    results = _delete_groups(wire, 3, [empty, never, empty, ""])  # duplicates answered once
    assert results == sorted(
        [
            {"group_id": empty, "error_code": 0, "error_message": None},
            {"group_id": never, "error_code": E.GROUP_ID_NOT_FOUND, "error_message": None},
            {"group_id": "", "error_code": E.GROUP_ID_NOT_FOUND, "error_message": None},
        ],
        key=lambda r: r["group_id"],
    )
    assert wire.committed(empty, topic, [0]) == {0: -1}  # its offsets went with it
    # v2 has no error_message
    assert _delete_groups(wire, 2, [empty]) == [
        {"group_id": empty, "error_code": E.GROUP_ID_NOT_FOUND}
    ]


def test_delete_groups_v3_refuses_a_group_with_members(wire: Wire) -> None:
    wire.ensure_offsets_topic()
    group = unique("dg-members")
    address = wire._coordinator(group)
    join = {
        "group_id": group,
        "session_timeout_ms": 30_000,
        "rebalance_timeout_ms": 30_000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    first = wire.call(ApiKey.JOIN_GROUP, 5, join, address)
    assert first.error_code == E.MEMBER_ID_REQUIRED
    joined = wire.call(ApiKey.JOIN_GROUP, 5, {**join, "member_id": first.member_id}, address)
    assert joined.error_code == 0  # the group waits for its SyncGroup: not empty
    assert _delete_groups(wire, 3, [group]) == [
        {"group_id": group, "error_code": E.NON_EMPTY_GROUP, "error_message": None}
    ]
    leave = {"group_id": group, "members": [{"member_id": first.member_id}]}
    assert wire.call(ApiKey.LEAVE_GROUP, 3, leave, address).error_code == 0


# -- TxnOffsetCommit v6 --------------------------------------------------------------------------


class _Producer:
    """A transactional producer of transaction version 2, as raw requests: no
    AddOffsetsToTxn (TxnOffsetCommit v5+ makes the group coordinator add the partition)."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.tid = unique("txn")
        find = {"key": self.tid, "key_type": 1}

        def coordinator() -> tuple[int, str]:
            found = wire.call(ApiKey.FIND_COORDINATOR, 3, find)
            return found.error_code, f"{found.host}:{found.port}"

        self.coordinator = retried(coordinator)
        init = {
            "transactional_id": self.tid,
            "transaction_timeout_ms": 60_000,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        answer = retried(lambda: self._call(ApiKey.INIT_PRODUCER_ID, 5, init))
        assert answer.error_code == 0
        self.pid, self.epoch = answer.producer_id, answer.producer_epoch

    def _call(self, api: ApiKey, version: int, body: dict[str, Any]) -> tuple[int, Any]:
        answer = self.wire.call(api, version, body, self.coordinator)
        return answer.error_code, answer

    def commit_offsets(
        self, version: int, group: str, topics: list[dict[str, Any]], generation: int = -1
    ) -> dict[str, Any]:
        body = {
            "transactional_id": self.tid,
            "group_id": group,
            "producer_id": self.pid,
            "producer_epoch": self.epoch,
            "generation_id_or_member_epoch": generation,
            "member_id": "member" if generation >= 0 else "",
            "group_instance_id": None,
            "topics": topics,
        }

        def commit() -> tuple[int, Any]:
            answer = self.wire.call(
                ApiKey.TXN_OFFSET_COMMIT, version, body, self.wire._coordinator(group)
            )
            codes = [p.error_code for t in answer.topics for p in t.partitions]
            return next((c for c in codes if c in _RETRIABLE), 0), answer

        return plain(retried(commit))

    def end(self, commit: bool) -> None:
        body = {
            "transactional_id": self.tid,
            "producer_id": self.pid,
            "producer_epoch": self.epoch,
            "committed": commit,
        }
        answer = retried(lambda: self._call(ApiKey.END_TXN, 5, body))
        assert answer.error_code == 0
        self.epoch = answer.producer_epoch  # v5: every end bumps the epoch


def _partitions(*indexes: int, offset: int = 5) -> list[dict[str, Any]]:
    return [
        {
            "partition_index": i,
            "committed_offset": offset,
            "committed_leader_epoch": -1,
            "committed_metadata": "m",
        }
        for i in indexes
    ]


def _answer(*topics: tuple[dict[str, Any], list[tuple[int, int]]]) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {**naming, "partitions": [{"partition_index": i, "error_code": c} for i, c in parts]}
            for naming, parts in topics
        ],
    }


@pytest.fixture
def txn_topic(wire: Wire) -> tuple[str, uuid.UUID]:
    """A 2-partition topic, its id, and both coordinator topics ready."""
    wire.ensure_offsets_topic()
    wire.ensure_txn_state_topic()
    name = unique("txn-topic")
    wire.create_topic(name, 2)
    meta = wire.call(
        ApiKey.METADATA, 12, {"topics": [{"name": name}], "allow_auto_topic_creation": False}
    )
    return name, meta.topics[0].topic_id


def test_txn_offset_commit_v6_names_topics_by_id(
    wire: Wire, txn_topic: tuple[str, uuid.UUID]
) -> None:
    name, topic_id = txn_topic
    unknown = uuid.uuid4()
    group = unique("txn-group")
    producer = _Producer(wire)
    got = producer.commit_offsets(
        6,
        group,
        [
            {"topic_id": topic_id, "partitions": _partitions(0, 7)},
            {"topic_id": unknown, "partitions": _partitions(0)},
        ],
    )
    # errors found before the coordinator come first (Kafka's response builder)
    assert got == _answer(
        ({"topic_id": topic_id}, [(7, E.UNKNOWN_TOPIC_OR_PARTITION), (0, 0)]),
        ({"topic_id": unknown}, [(0, E.UNKNOWN_TOPIC_ID)]),
    )
    # the same topic twice, an error first: one entry (Kafka merges by topic id)
    got = producer.commit_offsets(
        6,
        group,
        [
            {"topic_id": topic_id, "partitions": _partitions(1, offset=8)},
            {"topic_id": topic_id, "partitions": _partitions(9)},
        ],
    )
    assert got == _answer(
        ({"topic_id": topic_id}, [(9, E.UNKNOWN_TOPIC_OR_PARTITION), (1, 0)]),
    )
    nil = uuid.UUID(int=0)
    got = producer.commit_offsets(6, group, [{"topic_id": nil, "partitions": _partitions(0)}])
    assert got == _answer(({"topic_id": nil}, [(0, E.UNKNOWN_TOPIC_ID)]))
    producer.end(commit=True)
    # committed under the topic's name, visible once the markers are written
    deadline = time.monotonic() + 30
    while (committed := wire.committed(group, name, [0, 1])) != {0: 5, 1: 8}:
        assert time.monotonic() < deadline, committed
        time.sleep(0.05)


def test_txn_offset_commit_v6_unknown_group_with_a_generation(
    wire: Wire, txn_topic: tuple[str, uuid.UUID]
) -> None:
    """GROUP_ID_NOT_FOUND from v6; ILLEGAL_GENERATION before (KIP-1319)."""
    name, topic_id = txn_topic
    producer = _Producer(wire)
    v6 = producer.commit_offsets(
        6, unique("txn-nogroup"), [{"topic_id": topic_id, "partitions": _partitions(1)}], 3
    )
    assert v6 == _answer(({"topic_id": topic_id}, [(1, E.GROUP_ID_NOT_FOUND)]))
    v5 = producer.commit_offsets(
        5, unique("txn-nogroup"), [{"name": name, "partitions": _partitions(1)}], 3
    )
    assert v5 == _answer(({"name": name}, [(1, E.ILLEGAL_GENERATION)]))
    producer.end(commit=False)
