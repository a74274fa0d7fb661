"""OffsetCommit v2-10, OffsetFetch v1-10 and OffsetDelete v0 through the codec."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from groupcoordkit import running_group_coordinator, trio_ms

import wirebroker.handlers.join_group
import wirebroker.handlers.offset_commit
import wirebroker.handlers.offset_delete
import wirebroker.handlers.offset_fetch  # noqa: F401  (registers the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from wirebroker.group.runtime import GroupCoordinatorRuntime
from wirebroker.handlers.context import Services

START_MS = 1_700_000_000_000
COMMIT, FETCH, DELETE = ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.OFFSET_DELETE


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {"offsets.topic.num.partitions": "4"}


@pytest.fixture
async def coordinator(
    services: Services, nursery: trio.Nursery
) -> AsyncIterator[GroupCoordinatorRuntime]:
    services.admin.create_topic("t", 2, now_ms=START_MS)
    services.admin.create_topic("u", 1, now_ms=START_MS)
    async with running_group_coordinator(services, nursery) as runtime:
        yield runtime


def topic_id(services: Services, name: str) -> uuid.UUID:
    info = services.cluster.topic(name)
    assert info is not None
    return info.topic_id


def commit_body(topics: list[dict[str, Any]], group: str = "g") -> dict[str, Any]:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": topics,
    }


def part(index: int, offset: int, metadata: str | None = "m") -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": offset,
        "committed_leader_epoch": 3,
        "committed_metadata": metadata,
    }


def errors(resp: Any, key: str = "name") -> list[tuple[Any, int, int]]:
    return [
        (getattr(t, key), p.partition_index, p.error_code)
        for t in resp.topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", range(2, 10))
async def test_commit_by_name_with_unknown_topics(
    call: Any, coordinator: object, version: int
) -> None:
    resp = await call(
        COMMIT,
        version,
        commit_body(
            [
                {"name": "t", "partitions": [part(0, 10), part(1, 11), part(7, 1)]},
                {"name": "missing", "partitions": [part(0, 1)]},
            ]
        ),
    )
    assert errors(resp) == [
        ("t", 0, 0),
        ("t", 1, 0),
        ("t", 7, E.UNKNOWN_TOPIC_OR_PARTITION),
        ("missing", 0, E.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    fetched = await call(
        FETCH, 7, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}
    )
    got = [
        (p.partition_index, p.committed_offset, p.metadata) for p in fetched.topics[0].partitions
    ]
    assert got == [(0, 10, "m"), (1, 11, "m")]
    epoch = fetched.topics[0].partitions[0].committed_leader_epoch
    assert epoch == (3 if version >= 6 else -1)


async def test_commit_v10_by_topic_id(call: Any, services: Services, coordinator: object) -> None:
    t_id = topic_id(services, "t")
    ghost = uuid.uuid4()
    resp = await call(
        COMMIT,
        10,
        commit_body(
            [
                {"topic_id": t_id, "partitions": [part(1, 5)]},
                {"topic_id": ghost, "partitions": [part(0, 1)]},
            ]
        ),
    )
    assert errors(resp, "topic_id") == [(t_id, 1, 0), (ghost, 0, E.UNKNOWN_TOPIC_ID)]
    fetched = await call(
        FETCH,
        10,
        {
            "groups": [
                {
                    "group_id": "g",
                    "topics": [
                        {"topic_id": t_id, "partition_indexes": [1]},
                        {"topic_id": ghost, "partition_indexes": [0]},
                    ],
                }
            ]
        },
    )
    group = fetched.groups[0]
    assert [
        (t.topic_id, [(p.committed_offset, p.error_code) for p in t.partitions])
        for t in group.topics
    ] == [(t_id, [(5, 0)]), (ghost, [(-1, E.UNKNOWN_TOPIC_ID)])]
    everything = await call(FETCH, 10, {"groups": [{"group_id": "g", "topics": None}]})
    assert [t.topic_id for t in everything.groups[0].topics] == [t_id]


async def test_member_commits_need_the_generation(call: Any, coordinator: object) -> None:
    first = await call(
        ApiKey.JOIN_GROUP,
        5,
        {
            "group_id": "g",
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 10_000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )
    member = first.member_id
    joined = await call(
        ApiKey.JOIN_GROUP,
        5,
        {
            "group_id": "g",
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 10_000,
            "member_id": member,
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}],
        },
    )
    body = commit_body([{"name": "t", "partitions": [part(0, 1)]}])
    body.update(generation_id_or_member_epoch=joined.generation_id, member_id=member)
    # CompletingRebalance (no SyncGroup yet): REBALANCE_IN_PROGRESS
    assert errors(await call(COMMIT, 8, body)) == [("t", 0, E.REBALANCE_IN_PROGRESS)]
    body.update(generation_id_or_member_epoch=99)
    assert errors(await call(COMMIT, 8, body)) == [("t", 0, E.ILLEGAL_GENERATION)]
    unknown_group = commit_body([{"name": "t", "partitions": [part(0, 1)]}], group="fresh")
    unknown_group.update(generation_id_or_member_epoch=3, member_id="x")
    assert errors(await call(COMMIT, 9, unknown_group)) == [("t", 0, E.GROUP_ID_NOT_FOUND)]
    assert errors(await call(COMMIT, 8, unknown_group)) == [("t", 0, E.ILLEGAL_GENERATION)]
    too_big = commit_body([{"name": "t", "partitions": [part(0, 1, "x" * 5000)]}], group="s")
    assert errors(await call(COMMIT, 8, too_big)) == [("t", 0, E.OFFSET_METADATA_TOO_LARGE)]


@pytest.mark.parametrize("version", range(1, 8))
async def test_fetch_single_group_versions(call: Any, coordinator: object, version: int) -> None:
    await call(COMMIT, 8, commit_body([{"name": "t", "partitions": [part(0, 4, None)]}]))
    resp = await call(
        FETCH, version, {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}]}
    )
    parts = [
        (p.partition_index, p.committed_offset, p.metadata, p.error_code)
        for p in resp.topics[0].partitions
    ]
    assert parts == [(0, 4, "", 0), (1, -1, "", 0)]
    if version >= 2:
        assert resp.error_code == 0
        every = await call(FETCH, version, {"group_id": "g", "topics": None})
        assert [(t.name, [p.committed_offset for p in t.partitions]) for t in every.topics] == [
            ("t", [4])
        ]


async def test_fetch_group_errors_by_version(call: Any, services: Services) -> None:
    runtime = GroupCoordinatorRuntime(
        services.config, services.replicas, admin=services.admin, clock=trio_ms
    )
    services.group_coordinator = runtime  # not loaded: COORDINATOR_NOT_AVAILABLE
    request = {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 2]}]}
    v1 = await call(FETCH, 1, request)  # no top-level error field: on the partitions
    assert [(p.partition_index, p.error_code) for p in v1.topics[0].partitions] == [
        (0, E.COORDINATOR_NOT_AVAILABLE),
        (2, E.COORDINATOR_NOT_AVAILABLE),
    ]
    v3 = await call(FETCH, 3, request)
    assert (v3.error_code, list(v3.topics)) == (E.COORDINATOR_NOT_AVAILABLE, [])
    v8 = await call(FETCH, 8, {"groups": [{"group_id": "g", "topics": None}]})
    assert v8.groups[0].error_code == E.COORDINATOR_NOT_AVAILABLE


async def test_fetch_several_groups_v8(call: Any, coordinator: object) -> None:
    await call(COMMIT, 8, commit_body([{"name": "t", "partitions": [part(1, 7)]}], group="a"))
    await call(COMMIT, 8, commit_body([{"name": "u", "partitions": [part(0, 8)]}], group="b"))
    resp = await call(
        FETCH,
        8,
        {
            "groups": [
                {"group_id": "a", "topics": [{"name": "t", "partition_indexes": [1]}]},
                {"group_id": "b", "topics": None},
                {"group_id": "nobody", "topics": None},
            ],
            "require_stable": True,
        },
    )
    got = {
        g.group_id: (
            g.error_code,
            [
                (t.name, p.partition_index, p.committed_offset)
                for t in g.topics
                for p in t.partitions
            ],
        )
        for g in resp.groups
    }
    assert got == {"a": (0, [("t", 1, 7)]), "b": (0, [("u", 0, 8)]), "nobody": (0, [])}


async def test_offset_delete(call: Any, coordinator: object) -> None:
    await call(
        COMMIT,
        8,
        commit_body([{"name": "t", "partitions": [part(0, 1), part(1, 2)]}], group="simple"),
    )
    resp = await call(
        DELETE,
        0,
        {
            "group_id": "simple",
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 0}, {"partition_index": 5}]},
                {"name": "missing", "partitions": [{"partition_index": 0}]},
            ],
        },
    )
    assert resp.error_code == 0
    assert errors(resp) == [
        ("t", 0, 0),
        ("t", 5, E.UNKNOWN_TOPIC_OR_PARTITION),
        ("missing", 0, E.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    fetched = await call(FETCH, 8, {"groups": [{"group_id": "simple", "topics": None}]})
    assert [
        (p.partition_index, p.committed_offset) for p in fetched.groups[0].topics[0].partitions
    ] == [(1, 2)]
    unknown = await call(DELETE, 0, {"group_id": "nobody", "topics": []})
    assert unknown.error_code == E.GROUP_ID_NOT_FOUND
    empty_id = await call(DELETE, 0, {"group_id": "", "topics": []})
    assert empty_id.error_code == E.INVALID_GROUP_ID


async def test_no_coordinator(call: Any, services: Services) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS)
    resp = await call(COMMIT, 8, commit_body([{"name": "t", "partitions": [part(0, 1)]}]))
    assert errors(resp) == [("t", 0, E.COORDINATOR_NOT_AVAILABLE)]
    fetched = await call(FETCH, 8, {"groups": [{"group_id": "g", "topics": None}]})
    assert fetched.groups[0].error_code == E.COORDINATOR_NOT_AVAILABLE
    deleted = await call(DELETE, 0, {"group_id": "g", "topics": []})
    assert deleted.error_code == E.COORDINATOR_NOT_AVAILABLE
