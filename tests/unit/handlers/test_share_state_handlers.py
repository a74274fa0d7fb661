"""The share coordinator's handlers through the real codec: FindCoordinator key type 2, the
state RPCs InitializeShareGroupState / WriteShareGroupState v0-1 / ReadShareGroupState /
ReadShareGroupStateSummary v0-1 / DeleteShareGroupState, and the share group offsets APIs
(Describe / Alter / DeleteShareGroupOffsets) over the persister's local path, with a fake
share group lookup. The runtime leads every `__share_group_state` partition."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
import trio

import wirebroker.handlers.alter_share_group_offsets
import wirebroker.handlers.delete_share_group_offsets
import wirebroker.handlers.delete_share_group_state
import wirebroker.handlers.describe_share_group_offsets
import wirebroker.handlers.find_coordinator
import wirebroker.handlers.initialize_share_group_state
import wirebroker.handlers.read_share_group_state
import wirebroker.handlers.read_share_group_state_summary
import wirebroker.handlers.write_share_group_state  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from tests.unit.local_metadata import coordinate_every_partition
from wirebroker.handlers.context import Services
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.security.acls import AclOperation, NoAuthorizer, ResourceType
from wirebroker.share_coordinator.keys import SharePartitionKey
from wirebroker.share_coordinator.offsets_admin import ShareGroupView
from wirebroker.share_coordinator.persister import CoordinatorPersister
from wirebroker.share_coordinator.runtime import ShareCoordinatorRuntime

INIT = ApiKey.INITIALIZE_SHARE_GROUP_STATE
READ = ApiKey.READ_SHARE_GROUP_STATE
WRITE = ApiKey.WRITE_SHARE_GROUP_STATE
DELETE = ApiKey.DELETE_SHARE_GROUP_STATE
SUMMARY = ApiKey.READ_SHARE_GROUP_STATE_SUMMARY
NOT_AVAILABLE = "Share coordinator is not available."
TOPIC = E.TOPIC_AUTHORIZATION_FAILED
#: the offsets APIs' text for an error without one of its own: its name
TOPIC_TEXT = "TOPIC_AUTHORIZATION_FAILED"


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {"share.coordinator.state.topic.num.partitions": "3"}


class Groups:
    def __init__(self) -> None:
        self.views: dict[str, ShareGroupView] = {}
        self.altered: list[tuple[str, dict[uuid.UUID, set[int]]]] = []
        self.deleted: list[tuple[str, set[uuid.UUID]]] = []

    def lookup(self, group_id: str) -> ShareGroupView | E:
        return self.views.get(group_id, E.GROUP_ID_NOT_FOUND)

    def offsets_altered(self, group_id: str, partitions: Mapping[uuid.UUID, set[int]]) -> None:
        self.altered.append((group_id, dict(partitions)))

    def offsets_deleted(self, group_id: str, topic_ids: set[uuid.UUID]) -> None:
        self.deleted.append((group_id, topic_ids))


@pytest.fixture
async def topic(services: Services) -> AsyncIterator[uuid.UUID]:
    """Topic "t" (2 partitions) and a running share coordinator leading every partition."""

    def count(topic_id: uuid.UUID) -> int | None:
        info = services.cluster.topic_by_id(topic_id)
        return None if info is None else info.partitions

    rt = ShareCoordinatorRuntime(
        services.config,
        services.replicas,
        admin=services.admin,
        clock=services.clock,
        partition_count=count,
    )
    [info] = services.admin.create_topics([NewTopic("t", 2, 1)], now_ms=services.clock())
    assert not isinstance(info, Exception)
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.run)
        assert rt.ensure_topic() is E.NONE
        await coordinate_every_partition(rt)
        services.share_coordinator = rt
        services.share_persister = CoordinatorPersister(
            rt, lambda p: (0, "127.0.0.1", 9092), node_id=0
        )
        services.share_groups = Groups()
        yield info.topic_id
        nursery.cancel_scope.cancel()


def _req(topic_id: uuid.UUID, *partitions: dict[str, Any], group: str = "g") -> dict[str, Any]:
    return {"group_id": group, "topics": [{"topic_id": topic_id, "partitions": list(partitions)}]}


def _one(response: Any) -> Any:
    [result] = response.results
    [partition] = result.partitions
    return partition


async def test_initialize_write_read_summary_delete(call: Any, topic: uuid.UUID) -> None:
    init = await call(INIT, 0, _req(topic, {"partition": 1, "state_epoch": 0, "start_offset": 5}))
    assert (_one(init).error_code, _one(init).error_message) == (0, None)
    batches = [
        {"first_offset": 5, "last_offset": 9, "delivery_state": 2, "delivery_count": 1},
        {"first_offset": 10, "last_offset": 12, "delivery_state": 0, "delivery_count": 2},
    ]
    write = {"partition": 1, "state_epoch": 0, "leader_epoch": 4, "start_offset": 7}
    written = await call(WRITE, 1, _req(topic, {**write, "state_batches": batches}))
    assert _one(written).error_code == 0
    read = _one(await call(READ, 0, _req(topic, {"partition": 1, "leader_epoch": 4})))
    assert (read.error_code, read.state_epoch, read.start_offset) == (0, 0, 7)
    assert [(b.first_offset, b.last_offset, b.delivery_state) for b in read.state_batches] == [
        (7, 9, 2),
        (10, 12, 0),
    ]
    summary = _one(await call(SUMMARY, 1, _req(topic, {"partition": 1, "leader_epoch": 4})))
    assert (summary.error_code, summary.start_offset, summary.leader_epoch) == (0, 7, 4)
    fenced = _one(await call(READ, 0, _req(topic, {"partition": 1, "leader_epoch": 3})))
    assert fenced.error_code == E.FENCED_LEADER_EPOCH
    assert fenced.error_message == (
        "The leader epoch in the request is older than the epoch on the broker."
    )
    assert _one(await call(DELETE, 0, _req(topic, {"partition": 1}))).error_code == 0
    gone = _one(await call(READ, 0, _req(topic, {"partition": 1, "leader_epoch": 4})))
    assert gone.error_code == E.INVALID_REQUEST
    assert gone.error_message == "Read operation on uninitialized share partition not allowed."
    assert (gone.state_epoch, gone.start_offset, list(gone.state_batches)) == (0, 0, [])


async def test_unknown_topic_and_empty_requests(call: Any, topic: uuid.UUID) -> None:
    other = uuid.uuid4()
    init = {"partition": 0, "state_epoch": 0, "start_offset": 0}
    assert _one(await call(INIT, 0, _req(other, init))).error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    summary = _one(await call(SUMMARY, 0, _req(topic, {"partition": 0, "leader_epoch": 0})))
    assert (summary.error_code, summary.start_offset) == (0, -1)  # never initialised
    assert list((await call(INIT, 0, _req(topic, init, group=""))).results) == []
    assert list((await call(INIT, 0, {"group_id": "g", "topics": []})).results) == []


async def test_no_coordinator(call: Any, services: Services) -> None:
    body = _req(uuid.uuid4(), {"partition": 0, "leader_epoch": 0})
    result = _one(await call(READ, 0, body))
    assert (result.error_code, result.error_message) == (E.COORDINATOR_NOT_AVAILABLE, NOT_AVAILABLE)


async def test_find_coordinator_share_key(call: Any, topic: uuid.UUID) -> None:
    key = SharePartitionKey("g", topic, 0).coordinator_key
    found = await call(ApiKey.FIND_COORDINATOR, 6, {"key_type": 2, "coordinator_keys": [key]})
    [entry] = found.coordinators
    assert (entry.error_code, entry.node_id, entry.port) == (0, 0, 9092)
    bad = await call(ApiKey.FIND_COORDINATOR, 6, {"key_type": 2, "coordinator_keys": ["g:x"]})
    assert bad.coordinators[0].error_code == E.INVALID_REQUEST
    old = await call(ApiKey.FIND_COORDINATOR, 5, {"key_type": 2, "coordinator_keys": [key]})
    assert old.coordinators[0].error_code == E.INVALID_REQUEST


async def test_share_group_offsets(
    call: Any, services: Services, topic: uuid.UUID, produce: Any
) -> None:
    produce(services, "t", 0, n=5)
    groups = services.share_groups
    assert isinstance(groups, Groups)
    alter = {
        "group_id": "sg",
        "topics": [
            {"topic_name": "t", "partitions": [{"partition_index": 0, "start_offset": 3}]},
            {"topic_name": "nope", "partitions": [{"partition_index": 0, "start_offset": 3}]},
        ],
    }
    missing = await call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert missing.error_code == E.GROUP_ID_NOT_FOUND
    groups.views["sg"] = ShareGroupView("sg", empty=False)
    busy = await call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert (busy.error_code, busy.error_message) == (E.NON_EMPTY_GROUP, "The group is not empty.")
    groups.views["sg"] = ShareGroupView("sg", empty=True, state_epoch=1)
    altered = await call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert altered.error_code == 0
    assert [(r.topic_name, r.partitions[0].error_code) for r in altered.responses] == [
        ("t", 0),
        ("nope", E.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert groups.altered == [("sg", {topic: {0}})]
    wanted = [{"topic_name": "t", "partitions": [0, 1]}]
    describe = {"groups": [{"group_id": "sg", "topics": wanted}]}
    [group] = (await call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, describe)).groups
    [t] = group.topics
    # lag: high watermark 5 - start offset 3 - 0 delivered; never initialised: -1
    assert [(p.partition_index, p.start_offset, p.error_code, p.lag) for p in t.partitions] == [
        (0, 3, 0, 2),
        (1, -1, 0, -1),
    ]
    unknown = {"groups": [{"group_id": "zz", "topics": None}]}
    [nothing] = (await call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, unknown)).groups
    assert (nothing.error_code, list(nothing.topics)) == (0, [])  # Kafka's answer
    groups.views["sg"] = ShareGroupView("sg", empty=True, partitions={topic: frozenset({0})})
    [every] = (
        await call(
            ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, {"groups": [{"group_id": "sg", "topics": None}]}
        )
    ).groups
    assert [(t.topic_name, [p.start_offset for p in t.partitions]) for t in every.topics] == [
        ("t", [3])
    ]
    delete = {"group_id": "sg", "topics": [{"topic_name": "t"}]}
    deleted = await call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, delete)
    assert (deleted.error_code, deleted.responses[0].error_code) == (0, 0)
    assert groups.deleted == [("sg", {topic})]
    [after] = (await call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, describe)).groups
    assert after.topics[0].partitions[0].start_offset == -1
    empty_id = await call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {"group_id": "", "topics": []})
    assert empty_id.error_code == E.INVALID_GROUP_ID


class _SecretTopics(NoAuthorizer):
    """Everything allowed but the topic "secret" (and, with `group_op`, that operation on
    the group)."""

    enabled = True

    def __init__(self, group_op: AclOperation | None = None) -> None:
        self.group_op = group_op

    def authorize(self, principal: Any, host: str, op: int, resource_type: int, name: str) -> bool:
        if resource_type == ResourceType.GROUP:
            return op != self.group_op
        return not (resource_type == ResourceType.TOPIC and name == "secret")


async def test_share_group_offsets_refusals(
    call: Any, services: Services, topic: uuid.UUID
) -> None:
    groups = services.share_groups
    assert isinstance(groups, Groups)
    groups.views["sg"] = ShareGroupView("sg", empty=True, state_epoch=1)
    services.authorizer = _SecretTopics()
    parts = [{"partition_index": 0, "start_offset": 0}, {"partition_index": 1, "start_offset": 0}]
    alter = {
        "group_id": "sg",
        "topics": [
            {"topic_name": "secret", "partitions": parts},
            {"topic_name": "t", "partitions": parts[:1]},
        ],
    }
    altered = await call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert altered.error_code == 0
    # the topics it may read first, then the refused ones, every partition
    assert [
        (r.topic_name, [(p.partition_index, p.error_code, p.error_message) for p in r.partitions])
        for r in altered.responses
    ] == [
        ("t", [(0, 0, None)]),
        ("secret", [(0, TOPIC, TOPIC_TEXT), (1, TOPIC, TOPIC_TEXT)]),
    ]
    assert altered.responses[1].topic_id == uuid.UUID(int=0)
    delete = {"group_id": "sg", "topics": [{"topic_name": "secret"}, {"topic_name": "t"}]}
    deleted = await call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, delete)
    assert [(r.topic_name, r.error_code, r.error_message) for r in deleted.responses] == [
        ("t", 0, None),
        ("secret", TOPIC, TOPIC_TEXT),
    ]
    services.authorizer = _SecretTopics(AclOperation.DELETE)
    refused = await call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, delete)
    assert (refused.error_code, list(refused.responses)) == (E.GROUP_AUTHORIZATION_FAILED, [])
    assert (await call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)).error_code == 0
    services.authorizer = _SecretTopics(AclOperation.READ)
    refused = await call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert (refused.error_code, refused.error_message) == (
        E.GROUP_AUTHORIZATION_FAILED,
        "GROUP_AUTHORIZATION_FAILED",
    )
