"""FindCoordinator v0-6 through the codec, and what the first call does to Metadata/Produce."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing
from groupcoordkit import running_group_coordinator, trio_ms

import wirebroker.handlers.find_coordinator
import wirebroker.handlers.join_group
import wirebroker.handlers.metadata
import wirebroker.handlers.offset_commit
import wirebroker.handlers.offset_fetch
import wirebroker.handlers.produce  # noqa: F401  (registers the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import build_batch
from tests.unit.local_metadata import LocalClusterView, coordinate_every_partition
from wirebroker.group.partitioning import partition_for
from wirebroker.group.runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime
from wirebroker.handlers.context import Services
from wirebroker.metadata.view import BrokerNode

START_MS = 1_700_000_000_000


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {"offsets.topic.num.partitions": "4"}


@pytest.fixture
async def coordinator(
    services: Services, nursery: trio.Nursery
) -> AsyncIterator[GroupCoordinatorRuntime]:
    async with running_group_coordinator(services, nursery) as runtime:
        yield runtime


FIND = ApiKey.FIND_COORDINATOR


@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_group_key_before_v4(call: Any, coordinator: object, version: int) -> None:
    body: dict[str, Any] = {"key": "my-group"}
    if version >= 1:
        body["key_type"] = 0
    resp = await call(FIND, version, body)
    assert resp.error_code == 0
    assert (resp.node_id, resp.host, resp.port) == (0, "127.0.0.1", 9092)
    if version >= 1:
        assert resp.error_message == "NONE"  # Kafka sends Errors.NONE.message()


@pytest.mark.parametrize("version", [4, 5, 6])
async def test_batched_keys_from_v4(call: Any, coordinator: object, version: int) -> None:
    resp = await call(FIND, version, {"key_type": 0, "coordinator_keys": ["a", "b", ""]})
    assert [c.key for c in resp.coordinators] == ["a", "b", ""]
    for c in resp.coordinators:
        assert (c.error_code, c.node_id, c.host, c.port) == (0, 0, "127.0.0.1", 9092)
        assert c.error_message == ""  # Kafka: "" (not null) per key from v4


async def test_first_call_creates_the_internal_offsets_topic(
    call: Any, services: Services, coordinator: object
) -> None:
    meta = await call(
        ApiKey.METADATA,
        12,
        {"topics": [{"name": OFFSETS_TOPIC}], "allow_auto_topic_creation": False},
    )
    assert meta.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    everything = await call(ApiKey.METADATA, 12, {"topics": None})
    assert [t.name for t in everything.topics] == []

    assert (await call(FIND, 3, {"key": "g", "key_type": 0})).error_code == 0

    meta = await call(ApiKey.METADATA, 12, {"topics": [{"name": OFFSETS_TOPIC}]})
    topic = meta.topics[0]
    assert (topic.error_code, topic.is_internal, len(topic.partitions)) == (0, True, 4)
    info = services.cluster.topic(OFFSETS_TOPIC)
    assert info is not None
    assert info.configs == {
        "cleanup.policy": "compact",
        "segment.bytes": "104857600",
        "compression.type": "producer",
    }
    # Clients may not produce to it.
    batch = build_batch([(b"k", b"v")], base_timestamp=services.clock())
    produced = await call(
        ApiKey.PRODUCE,
        9,
        {
            "acks": -1,
            "timeout_ms": 1000,
            "topic_data": [
                {"name": OFFSETS_TOPIC, "partition_data": [{"index": 0, "records": batch}]}
            ],
        },
    )
    assert produced.responses[0].partition_responses[0].error_code == E.INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("version", [1, 3, 4, 6])
async def test_transaction_keys_without_a_txn_coordinator(
    call: Any, coordinator: object, version: int
) -> None:
    """(With one: tests/unit/handlers/test_txn_coordinator_api.py.)"""
    if version < 4:
        resp = await call(FIND, version, {"key": "txn", "key_type": 1})
        assert resp.error_code == E.COORDINATOR_NOT_AVAILABLE
        assert (resp.node_id, resp.host, resp.port) == (-1, "", -1)
        assert resp.error_message == "The coordinator is not available."
    else:
        resp = await call(FIND, version, {"key_type": 1, "coordinator_keys": ["t1", "t2"]})
        assert [c.error_code for c in resp.coordinators] == [E.COORDINATOR_NOT_AVAILABLE] * 2
        assert [c.error_message for c in resp.coordinators] == ["", ""]


async def test_share_and_unknown_key_types(call: Any, coordinator: object) -> None:
    share = await call(FIND, 6, {"key_type": 2, "coordinator_keys": ["s"]})
    assert share.coordinators[0].error_code == E.INVALID_REQUEST
    assert share.coordinators[0].error_message == ""
    bogus = await call(FIND, 6, {"key_type": 7, "coordinator_keys": ["a", "b"]})
    assert [c.error_code for c in bogus.coordinators] == [E.INVALID_REQUEST] * 2
    assert bogus.coordinators[0].error_message is not None
    old = await call(FIND, 2, {"key": "a", "key_type": 9})
    assert old.error_code == E.INVALID_REQUEST and old.node_id == -1


async def test_without_an_active_coordinator(
    call: Any, services: Services, nursery: trio.Nursery
) -> None:
    resp = await call(FIND, 0, {"key": "g"})
    assert resp.error_code == E.COORDINATOR_NOT_AVAILABLE  # no coordinator at all
    runtime = GroupCoordinatorRuntime(
        services.config, services.replicas, admin=services.admin, clock=trio_ms
    )
    services.group_coordinator = runtime  # not loaded yet
    resp = await call(FIND, 6, {"key_type": 0, "coordinator_keys": ["g"]})
    assert resp.coordinators[0].error_code == E.COORDINATOR_NOT_AVAILABLE
    assert services.cluster.topic(OFFSETS_TOPIC) is None
    await nursery.start(runtime.run)
    await coordinate_every_partition(runtime)
    resp = await call(FIND, 6, {"key_type": 0, "coordinator_keys": ["g"]})
    assert resp.coordinators[0].error_code == 0


# -- the coordinator is the leader of the group's __consumer_offsets partition -----------------


async def test_the_coordinator_is_the_leader_of_the_group_partition(
    call: Any, services: Services, coordinator: GroupCoordinatorRuntime
) -> None:
    asked: list[tuple[str, int]] = []
    leaders = {0: (0, "127.0.0.1", 9092), 1: (1, "b1", 9093), 2: (2, "b2", 9094)}

    def partition_leader(topic: str, partition: int) -> tuple[int, str, int] | None:
        asked.append((topic, partition))
        return leaders.get(partition)  # partition 3: no live leader

    class Leaders(LocalClusterView):
        def leader(self, topic: str, index: int) -> BrokerNode | None:
            found = partition_leader(topic, index)
            return None if found is None else BrokerNode(*found)

    services.cluster = Leaders(
        0, lambda: ("127.0.0.1", 9092), services.replicas, services.cluster.topic_store
    )
    keys = {
        p: next(f"k{i}" for i in range(100) if partition_for(f"k{i}", 4) == p) for p in range(4)
    }
    resp = await call(FIND, 6, {"key_type": 0, "coordinator_keys": [keys[p] for p in range(4)]})
    got = [(c.key, c.error_code, c.node_id, c.host, c.port) for c in resp.coordinators]
    assert got == [
        (keys[0], 0, 0, "127.0.0.1", 9092),
        (keys[1], 0, 1, "b1", 9093),
        (keys[2], 0, 2, "b2", 9094),
        (keys[3], E.COORDINATOR_NOT_AVAILABLE, -1, "", -1),
    ]
    assert asked == [(OFFSETS_TOPIC, p) for p in range(4)]
    assert coordinator.partition_for(keys[1]) == 1
    old = await call(FIND, 3, {"key": keys[2], "key_type": 0})
    assert (old.error_code, old.node_id, old.host, old.port) == (0, 2, "b2", 9094)
    none = await call(FIND, 0, {"key": keys[3]})
    assert (none.error_code, none.node_id) == (E.COORDINATOR_NOT_AVAILABLE, -1)


async def test_a_single_broker_leads_partitions_that_exist(services: Services) -> None:
    assert services.leader_of(OFFSETS_TOPIC, 0) is None  # no such topic yet
    services.admin.create_topic("t", 2, now_ms=START_MS)
    assert services.leader_of("t", 1) == (0, "127.0.0.1", 9092)
    assert services.leader_of("t", 2) is None


async def test_group_requests_where_this_broker_does_not_lead(
    call: Any, services: Services, nursery: trio.Nursery
) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS)
    runtime = GroupCoordinatorRuntime(
        services.config,
        services.replicas,
        admin=services.admin,
        clock=trio_ms,
    )
    services.group_coordinator = runtime
    await nursery.start(runtime.run)
    assert (await call(FIND, 4, {"key_type": 0, "coordinator_keys": ["g"]})).coordinators[
        0
    ].error_code == 0
    commit = {
        "group_id": "g",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "committed_offset": 3, "committed_metadata": ""}
                ],
            }
        ],
    }
    resp = await call(ApiKey.OFFSET_COMMIT, 8, commit)
    assert resp.topics[0].partitions[0].error_code == E.NOT_COORDINATOR
    fetch = {"groups": [{"group_id": "g", "topics": None}]}
    assert (await call(ApiKey.OFFSET_FETCH, 8, fetch)).groups[0].error_code == E.NOT_COORDINATOR
    join = {
        "group_id": "g",
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    assert (await call(ApiKey.JOIN_GROUP, 7, join)).error_code == E.NOT_COORDINATOR

    runtime.on_became_leader(runtime.partition_for("g"), 0)
    await trio.testing.wait_all_tasks_blocked()
    resp = await call(ApiKey.OFFSET_COMMIT, 8, commit)
    assert resp.topics[0].partitions[0].error_code == 0
    assert (await call(ApiKey.OFFSET_FETCH, 8, fetch)).groups[0].topics[0].partitions[
        0
    ].committed_offset == 3
    runtime.on_resigned(runtime.partition_for("g"))
    resp = await call(ApiKey.OFFSET_COMMIT, 8, commit)
    assert resp.topics[0].partitions[0].error_code == E.NOT_COORDINATOR
    runtime.shutdown()
