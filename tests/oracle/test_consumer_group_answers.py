"""KIP-848 consumer groups: the same ConsumerGroupHeartbeat / ConsumerGroupDescribe (and the
classic APIs on such a group) to wirebroker and to Apache Kafka 4.4, the same assertions:
request validation and its texts, unknown groups and members, epoch fencing, static members,
leaving, OffsetCommit/OffsetFetch with member epochs, ListGroups' type, DescribeGroups v5/v6,
a classic Heartbeat. (The joins, revocations and descriptions of whole memberships are
compared field by field by compat/conformance's `cg-v*` scenarios.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E


@pytest.fixture
def wire(single_broker: str) -> Iterator[Wire]:
    with Wire(single_broker) as w:
        w.ensure_offsets_topic()
        yield w


def _hb(w: Wire, version: int = 1, **fields: Any) -> Any:
    body: dict[str, Any] = {
        "group_id": "",
        "member_id": "",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": None,
    }
    body.update(fields)
    return w.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, body)


def _join(w: Wire, group: str, member: str, topic: str, **fields: Any) -> Any:
    return _hb(
        w,
        group_id=group,
        member_id=member,
        rebalance_timeout_ms=30000,
        topic_partitions=[],
        subscribed_topic_names=[topic],
        **fields,
    )


def _err(answer: Any) -> tuple[int, str | None]:
    assert answer.member_id is None and answer.member_epoch == 0, answer
    return answer.error_code, answer.error_message


def test_heartbeat_validation_and_unknown_groups(wire: Wire, unique: Callable[[str], str]) -> None:
    g = unique("cga")
    assert _err(_hb(wire, group_id=g, member_id="m", member_epoch=5)) == (
        E.GROUP_ID_NOT_FOUND,
        f"Consumer group {g} not found.",
    )
    assert _err(_hb(wire, group_id=g, member_id="m", member_epoch=-1)) == (
        E.GROUP_ID_NOT_FOUND,
        f"Group {g} not found.",
    )
    bad = [
        ({"member_id": "m"}, "RebalanceTimeoutMs must be provided in first request."),
        (
            {"member_id": "m", "rebalance_timeout_ms": 1000},
            "TopicPartitions must be empty when (re-)joining.",
        ),
        (
            {"member_id": "m", "rebalance_timeout_ms": 1000, "topic_partitions": []},
            "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
            "(re-)joining.",
        ),
        ({"member_id": ""}, "MemberId can't be empty."),
        ({"member_id": "m", "member_epoch": -3}, "MemberEpoch is invalid."),
    ]
    for fields, text in bad:
        assert _err(_hb(wire, group_id=g, **fields)) == (E.INVALID_REQUEST, text), fields
    assert _err(_hb(wire, group_id="", member_id="m")) == (
        E.INVALID_REQUEST,
        "GroupId can't be empty.",
    )
    answer = _hb(
        wire,
        group_id=g,
        member_id="m",
        rebalance_timeout_ms=1000,
        topic_partitions=[],
        subscribed_topic_names=["t"],
        server_assignor="x",
    )
    assert _err(answer) == (
        E.UNSUPPORTED_ASSIGNOR,
        "ServerAssignor x is not supported. Supported assignors: uniform, range.",
    )
    code, text = _err(_join(wire, g, "m", "t", subscribed_topic_regex="["))
    assert code == E.INVALID_REGULAR_EXPRESSION
    assert text is not None and text.startswith("SubscribedTopicRegex `[` is not a valid")


def test_members_epochs_static_members_and_leaving(
    wire: Wire, unique: Callable[[str], str]
) -> None:
    g, t = unique("cgb"), unique("cgb-t")
    wire.create_topic(t, 3)
    first = _join(wire, g, "m1", t)
    assert (first.error_code, first.member_id, first.member_epoch) == (0, "m1", 2)
    assert first.heartbeat_interval_ms == 5000
    # (its partitions: not compared here, Kafka's coordinator may not see a topic this new yet)
    assert first.assignment is not None
    assert _err(_hb(wire, group_id=g, member_id="m2", member_epoch=1)) == (
        E.UNKNOWN_MEMBER_ID,
        f"Member m2 is not a member of group {g}.",
    )
    code, text = _err(_hb(wire, group_id=g, member_id="m1", member_epoch=7))
    assert code == E.FENCED_MEMBER_EPOCH
    assert text is not None and text.startswith(
        "The consumer group member has a greater member epoch (7) than the one known by the "
        "group coordinator (2)."
    )
    assert _err(_hb(wire, group_id=g, member_id="m9", member_epoch=-2, instance_id="i9")) == (
        E.UNKNOWN_MEMBER_ID,
        "Instance id i9 is unknown.",
    )
    assert _join(wire, g, "s1", t, instance_id="i1").error_code == 0
    assert _err(_join(wire, g, "s2", t, instance_id="i1")) == (
        E.UNRELEASED_INSTANCE_ID,
        "Static member s2 with instance id i1 cannot join the group because the instance id "
        "is owned by s1 member.",
    )
    assert _err(_hb(wire, group_id=g, member_id="s2", member_epoch=-2, instance_id="i1")) == (
        E.FENCED_INSTANCE_ID,
        "Static member s2 with instance id i1 was fenced by member s1.",
    )
    left = _hb(wire, group_id=g, member_id="m1", member_epoch=-1)
    assert (left.error_code, left.member_id, left.member_epoch) == (0, "m1", -1)
    assert left.heartbeat_interval_ms == 0 and left.assignment is None
    assert _err(_hb(wire, group_id=g, member_id="m1", member_epoch=-1)) == (
        E.UNKNOWN_MEMBER_ID,
        f"Member m1 is not a member of group {g}.",
    )


def _commit(w: Wire, version: int, group: str, topic: str, epoch: int, member: str) -> int:
    body: dict[str, Any] = {
        "group_id": group,
        "generation_id_or_member_epoch": epoch,
        "member_id": member,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 0,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }
    answer = w.call(ApiKey.OFFSET_COMMIT, version, body)
    code: int = answer.topics[0].partitions[0].error_code
    return code


def _fetch(w: Wire, group: str, member: str | None, epoch: int) -> int:
    body = {
        "groups": [{"group_id": group, "member_id": member, "member_epoch": epoch, "topics": None}],
        "require_stable": False,
    }
    code: int = w.call(ApiKey.OFFSET_FETCH, 9, body).groups[0].error_code
    return code


def test_offsets_and_classic_apis_on_a_consumer_group(
    wire: Wire, unique: Callable[[str], str]
) -> None:
    g, t = unique("cgc"), unique("cgc-t")
    wire.create_topic(t, 1)
    assert _join(wire, g, "m1", t).member_epoch == 2
    assert _commit(wire, 9, g, t, 2, "m1") == E.NONE
    assert _commit(wire, 9, g, t, 1, "m1") == E.STALE_MEMBER_EPOCH
    assert _commit(wire, 9, g, t, 99, "m1") == E.STALE_MEMBER_EPOCH
    assert _commit(wire, 9, g, t, 2, "zz") == E.UNKNOWN_MEMBER_ID
    assert _commit(wire, 9, g, t, -1, "") == E.UNKNOWN_MEMBER_ID  # not while it has members
    assert _commit(wire, 7, g, t, 2, "m1") == E.UNSUPPORTED_VERSION
    assert _fetch(wire, g, "m1", 2) == E.NONE
    assert _fetch(wire, g, "m1", 99) == E.STALE_MEMBER_EPOCH
    assert _fetch(wire, g, "zz", 2) == E.UNKNOWN_MEMBER_ID
    assert _fetch(wire, g, None, -1) == E.NONE  # the admin client's fetch
    listed = wire.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})
    assert [(x.protocol_type, x.group_type) for x in listed.groups if x.group_id == g] == [
        ("consumer", "consumer")
    ]
    classic_only = wire.call(
        ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["classic"]}
    )
    assert g not in {x.group_id for x in classic_only.groups}
    body = {"groups": [g], "include_authorized_operations": False}
    (v5,) = wire.call(ApiKey.DESCRIBE_GROUPS, 5, body).groups
    assert (v5.error_code, v5.group_state, v5.members) == (0, "Dead", [])
    (v6,) = wire.call(ApiKey.DESCRIBE_GROUPS, 6, body).groups
    assert (v6.error_code, v6.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        f"Group {g} is not a classic group.",
    )
    heartbeat = {"group_id": g, "generation_id": 2, "member_id": "m1", "group_instance_id": None}
    assert wire.call(ApiKey.HEARTBEAT, 4, heartbeat).error_code == E.UNKNOWN_MEMBER_ID
    described = wire.call(
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        1,
        {"group_ids": [g], "include_authorized_operations": False},
    )
    (group,) = described.groups
    assert (group.error_code, group.group_epoch, group.assignor_name) == (0, 2, "uniform")
    assert [(m.member_id, m.member_epoch, m.member_type) for m in group.members] == [("m1", 2, 1)]
