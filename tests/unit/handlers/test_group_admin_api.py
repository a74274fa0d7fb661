"""ListGroups v0-5, DescribeGroups v0-6 and DeleteGroups v0-3 through the codec."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from groupcoordkit import running_group_coordinator

import wirebroker.handlers.delete_groups
import wirebroker.handlers.describe_groups
import wirebroker.handlers.join_group
import wirebroker.handlers.list_groups
import wirebroker.handlers.offset_commit
import wirebroker.handlers.offset_fetch  # noqa: F401  (registers the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from wirebroker.group.runtime import GroupCoordinatorRuntime
from wirebroker.handlers.context import Services
from wirebroker.handlers.describe_groups import GROUP_ALL_OPERATIONS

START_MS = 1_700_000_000_000
LIST, DESCRIBE, DELETE = ApiKey.LIST_GROUPS, ApiKey.DESCRIBE_GROUPS, ApiKey.DELETE_GROUPS
OMITTED = -2147483648


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {"offsets.topic.num.partitions": "4"}


@pytest.fixture
async def coordinator(
    services: Services, nursery: trio.Nursery, call: Any
) -> AsyncIterator[GroupCoordinatorRuntime]:
    """Groups: "active" (one member, CompletingRebalance, protocol type "consumer") and
    "simple" (offsets only, Empty)."""
    services.admin.create_topic("t", 1, now_ms=START_MS)
    async with running_group_coordinator(services, nursery) as runtime:
        join = {
            "group_id": "active",
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 10_000,
            "member_id": "",
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"sub"}],
        }
        join["member_id"] = (await call(ApiKey.JOIN_GROUP, 7, join)).member_id
        assert (await call(ApiKey.JOIN_GROUP, 7, join)).error_code == 0
        commit = {
            "group_id": "simple",
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
        await call(ApiKey.OFFSET_COMMIT, 8, commit)
        yield runtime


@pytest.mark.parametrize("version", range(6))
async def test_list_groups(call: Any, coordinator: object, version: int) -> None:
    resp = await call(LIST, version, {})
    assert resp.error_code == 0
    got = sorted((g.group_id, g.protocol_type) for g in resp.groups)
    assert got == [("active", "consumer"), ("simple", "")]
    if version >= 4:
        states = {g.group_id: g.group_state for g in resp.groups}
        assert states == {"active": "CompletingRebalance", "simple": "Empty"}
        only_empty = await call(LIST, version, {"states_filter": ["empty"]})
        assert [g.group_id for g in only_empty.groups] == ["simple"]
    if version >= 5:
        assert {g.group_type for g in resp.groups} == {"classic"}
        consumer = await call(LIST, version, {"types_filter": ["consumer"]})
        assert list(consumer.groups) == []
        classic = await call(LIST, version, {"types_filter": ["Classic"]})
        assert len(classic.groups) == 2


@pytest.mark.parametrize("version", range(7))
async def test_describe_groups(call: Any, coordinator: object, version: int) -> None:
    resp = await call(DESCRIBE, version, {"groups": ["active", "simple", "ghost"]})
    active, simple, ghost = resp.groups
    assert (active.group_id, active.group_state, active.protocol_type) == (
        "active",
        "CompletingRebalance",
        "consumer",
    )
    (member,) = active.members
    assert (member.client_id, member.client_host) == ("test-client", "/127.0.0.1")
    assert simple.group_state == "Empty" and list(simple.members) == []
    assert ghost.group_state == "Dead"
    assert ghost.error_code == (E.GROUP_ID_NOT_FOUND if version >= 6 else 0)
    if version >= 3:
        assert active.authorized_operations == OMITTED
        with_ops = await call(
            DESCRIBE,
            version,
            {"groups": ["active", "ghost"], "include_authorized_operations": True},
        )
        assert with_ops.groups[0].authorized_operations == GROUP_ALL_OPERATIONS
        expected_ghost = OMITTED if version >= 6 else GROUP_ALL_OPERATIONS
        assert with_ops.groups[1].authorized_operations == expected_ghost


def test_group_operations_bits() -> None:
    # READ 3, DELETE 6, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11
    assert GROUP_ALL_OPERATIONS == 0b1101_0100_1000 == 3400


@pytest.mark.parametrize("version", range(4))
async def test_delete_groups(call: Any, coordinator: object, version: int) -> None:
    resp = await call(DELETE, version, {"groups_names": ["simple", "active", "ghost", "simple"]})
    assert [(r.group_id, r.error_code) for r in resp.results] == [
        ("simple", 0),
        ("active", E.NON_EMPTY_GROUP),
        ("ghost", E.GROUP_ID_NOT_FOUND),
    ]
    # v3's error_message: null for every error a classic group has, as in Kafka 4.4
    messages = [r.get("error_message", "absent") for r in resp.results]
    assert messages == ([None] * 3 if version >= 3 else ["absent"] * 3)
    fetched = await call(
        ApiKey.OFFSET_FETCH, 8, {"groups": [{"group_id": "simple", "topics": None}]}
    )
    assert list(fetched.groups[0].topics) == []
    listed = await call(LIST, 4, {})
    assert [g.group_id for g in listed.groups] == ["active"]


async def test_no_coordinator(call: Any, services: Services) -> None:
    assert (await call(LIST, 5, {})).error_code == E.COORDINATOR_NOT_AVAILABLE
    described = await call(DESCRIBE, 5, {"groups": ["a"]})
    assert described.groups[0].error_code == E.COORDINATOR_NOT_AVAILABLE
    deleted = await call(DELETE, 2, {"groups_names": ["a", "a"]})
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        ("a", E.COORDINATOR_NOT_AVAILABLE)
    ]
