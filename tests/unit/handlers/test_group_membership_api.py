"""JoinGroup, SyncGroup, Heartbeat, LeaveGroup through the codec, at old and new versions."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing
from groupcoordkit import running_group_coordinator

import wirebroker.handlers.describe_groups
import wirebroker.handlers.heartbeat
import wirebroker.handlers.join_group
import wirebroker.handlers.leave_group
import wirebroker.handlers.sync_group  # noqa: F401  (registers the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from wirebroker.group.runtime import GroupCoordinatorRuntime
from wirebroker.handlers.context import Services

START_MS = 1_700_000_000_000
JOIN, SYNC, HEARTBEAT, LEAVE = (
    ApiKey.JOIN_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
)


def subscription(*topics: str) -> bytes:
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {"offsets.topic.num.partitions": "4"}


@pytest.fixture
async def coordinator(
    services: Services, nursery: trio.Nursery
) -> AsyncIterator[GroupCoordinatorRuntime]:
    async with running_group_coordinator(services, nursery) as runtime:
        yield runtime


def join_body(
    version: int, member_id: str = "", *, group: str = "g", **extra: Any
) -> dict[str, Any]:
    return {
        "group_id": group,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 30_000,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription("t")}],
        **extra,
    }


def sync_body(member_id: str, generation: int, assignments: dict[str, bytes]) -> dict[str, Any]:
    return {
        "group_id": "g",
        "generation_id": generation,
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()],
    }


@pytest.mark.parametrize("version", [4, 5, 6, 7, 8, 9])
async def test_member_id_handshake_then_stable(
    call: Any, coordinator: object, version: int
) -> None:
    first = await call(JOIN, version, join_body(version))
    assert first.error_code == E.MEMBER_ID_REQUIRED
    member_id = first.member_id
    assert member_id.startswith("test-client-")
    joined = await call(JOIN, version, join_body(version, member_id))
    assert joined.error_code == 0
    assert (joined.generation_id, joined.leader, joined.member_id) == (1, member_id, member_id)
    assert joined.protocol_name == "range"
    assert [m.member_id for m in joined.members] == [member_id]
    assert joined.members[0].metadata == subscription("t")
    sync_version = min(version - 4, 5) if version < 9 else 5
    synced = await call(SYNC, sync_version, sync_body(member_id, 1, {member_id: b"mine"}))
    assert (synced.error_code, synced.assignment) == (0, b"mine")
    hb_version = min(version - 5, 4) if version >= 5 else 0
    beat = await call(
        HEARTBEAT,
        hb_version,
        {"group_id": "g", "generation_id": 1, "member_id": member_id, "group_instance_id": None},
    )
    assert beat.error_code == 0
    stale = await call(
        HEARTBEAT, hb_version, {"group_id": "g", "generation_id": 0, "member_id": member_id}
    )
    assert stale.error_code == E.ILLEGAL_GENERATION


@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_old_versions_join_without_a_handshake(
    call: Any, coordinator: object, version: int
) -> None:
    joined = await call(JOIN, version, join_body(version))
    assert joined.error_code == 0 and joined.generation_id == 1
    assert joined.member_id.startswith("test-client-")
    left = await call(LEAVE, min(version, 2), {"group_id": "g", "member_id": joined.member_id})
    assert left.error_code == 0


async def test_rebalance_with_a_second_member_over_the_wire(
    call: Any, coordinator: object, autojump_clock: object
) -> None:
    a = (await call(JOIN, 7, join_body(7))).member_id
    assert (await call(JOIN, 7, join_body(7, a))).generation_id == 1
    b = (await call(JOIN, 7, join_body(7))).member_id
    answers: dict[str, Any] = {}
    async with trio.open_nursery() as nursery:

        async def join_b() -> None:
            answers["b"] = await call(JOIN, 7, join_body(7, b))

        nursery.start_soon(join_b)
        await trio.testing.wait_all_tasks_blocked()
        beat = await call(HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": a})
        assert beat.error_code == E.REBALANCE_IN_PROGRESS
        answers["a"] = await call(JOIN, 7, join_body(7, a))
    assert answers["a"].generation_id == answers["b"].generation_id == 2
    assert answers["a"].leader == a and len(answers["a"].members) == 2
    assert list(answers["b"].members) == []

    async with trio.open_nursery() as nursery:

        async def sync_b() -> None:
            answers["sync_b"] = await call(SYNC, 3, sync_body(b, 2, {}))

        nursery.start_soon(sync_b)
        await trio.testing.wait_all_tasks_blocked()
        await call(SYNC, 5, sync_body(a, 2, {a: b"1", b: b"2"}))
    assert answers["sync_b"].assignment == b"2"

    described = await call(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g"]})
    group = described.groups[0]
    assert group.group_state == "Stable"
    assert {m.client_host for m in group.members} == {"/127.0.0.1"}
    assert {m.client_id for m in group.members} == {"test-client"}

    # LeaveGroup v3+ batch: per member answers.
    left = await call(
        LEAVE,
        5,
        {
            "group_id": "g",
            "members": [
                {"member_id": b, "group_instance_id": None, "reason": "bye"},
                {"member_id": "nobody", "group_instance_id": None},
            ],
        },
    )
    assert left.error_code == 0
    assert [(m.member_id, m.error_code) for m in left.members] == [
        (b, 0),
        ("nobody", E.UNKNOWN_MEMBER_ID),
    ]
    beat = await call(HEARTBEAT, 4, {"group_id": "g", "generation_id": 2, "member_id": a})
    assert beat.error_code == E.REBALANCE_IN_PROGRESS


async def test_request_checks(call: Any, coordinator: object) -> None:
    assert (await call(JOIN, 7, join_body(7, group=""))).error_code == E.INVALID_GROUP_ID
    bad_session = join_body(7, session_timeout_ms=100)
    assert (await call(JOIN, 7, bad_session)).error_code == E.INVALID_SESSION_TIMEOUT
    unknown = await call(JOIN, 7, join_body(7, "ghost"))
    assert unknown.error_code == E.UNKNOWN_MEMBER_ID
    # v5 SyncGroup needs protocol type and name
    body = sync_body("ghost", 1, {})
    body["protocol_type"] = None
    assert (await call(SYNC, 5, body)).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    assert (await call(SYNC, 4, sync_body("ghost", 1, {}))).error_code == E.UNKNOWN_MEMBER_ID
    beat = await call(HEARTBEAT, 0, {"group_id": "", "generation_id": 1, "member_id": "m"})
    assert beat.error_code == E.INVALID_GROUP_ID
    left = await call(LEAVE, 1, {"group_id": "nope", "member_id": "m"})
    assert left.error_code == E.UNKNOWN_MEMBER_ID


async def test_static_member_rejoins_without_rebalance(call: Any, coordinator: object) -> None:
    body = join_body(7, group_instance_id="instance-1")
    first = await call(JOIN, 7, body)
    assert first.error_code == 0  # static members skip the handshake
    await call(SYNC, 5, sync_body(first.member_id, 1, {first.member_id: b"x"}))
    again = await call(JOIN, 7, body)  # restarted: empty member id, same instance id
    assert again.error_code == 0
    assert again.member_id != first.member_id and again.generation_id == 1
    fenced = await call(
        HEARTBEAT,
        4,
        {
            "group_id": "g",
            "generation_id": 1,
            "member_id": first.member_id,
            "group_instance_id": "instance-1",
        },
    )
    assert fenced.error_code == E.FENCED_INSTANCE_ID


async def test_no_coordinator_answers_coordinator_not_available(call: Any) -> None:
    assert (await call(JOIN, 7, join_body(7))).error_code == E.COORDINATOR_NOT_AVAILABLE
    assert (await call(SYNC, 5, sync_body("m", 1, {}))).error_code == E.COORDINATOR_NOT_AVAILABLE
    beat = await call(HEARTBEAT, 4, {"group_id": "g", "generation_id": 1, "member_id": "m"})
    assert beat.error_code == E.COORDINATOR_NOT_AVAILABLE
    left = await call(LEAVE, 5, {"group_id": "g", "members": []})
    assert left.error_code == E.COORDINATOR_NOT_AVAILABLE
