"""KIP-932 share groups on the group coordinator: the same ShareGroupHeartbeat /
ShareGroupDescribe (and the other group APIs on such a group) to wirebroker and to Apache
Kafka 4.4, the same assertions: request validation and its texts, unknown groups and members,
a member joining, its partitions once their share state is initialized, the description,
epoch fencing, group types that do not mix, ListGroups' share type, leaving, DeleteGroups."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E

GROUP_RESOURCE = 32


@pytest.fixture
def wire(single_broker: str) -> Iterator[Wire]:
    with Wire(single_broker) as w:
        w.ensure_offsets_topic()
        yield w


def _hb(w: Wire, group: str, member: str, epoch: int, **fields: Any) -> Any:
    body: dict[str, Any] = {
        "group_id": group,
        "member_id": member,
        "member_epoch": epoch,
        "rack_id": None,
        "subscribed_topic_names": None,
    }
    body.update(fields)
    return w.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)


def _describe(w: Wire, group: str) -> Any:
    body = {"group_ids": [group], "include_authorized_operations": False}
    [described] = w.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, body).groups
    return described


def _err(answer: Any) -> tuple[int, str | None]:
    assert answer.member_id is None and answer.member_epoch == 0, answer
    return answer.error_code, answer.error_message


def _until(what: str, probe: Callable[[], Any], timeout: float = 30.0) -> Any:
    """`probe()` until it gives something true: Kafka initializes a share partition's state
    through its share coordinator on other threads, so the assignment comes a few heartbeats
    later there (at once on wirebroker, whose first answer waits for the initialization)."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _no_assignment_interval(w: Wire, group: str) -> None:
    """share.assignment.interval.ms=0 for `group` (Kafka computes at most one assignment per
    interval, 1 s by default), applied once DescribeConfigs shows it."""
    entry = {"name": "share.assignment.interval.ms", "config_operation": 0, "value": "0"}
    resource = {"resource_type": GROUP_RESOURCE, "resource_name": group, "configs": [entry]}
    body = {"resources": [resource], "validate_only": False}
    assert w.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0].error_code == 0
    keys = {
        "resources": [
            {
                "resource_type": GROUP_RESOURCE,
                "resource_name": group,
                "configuration_keys": ["share.assignment.interval.ms"],
            }
        ],
        "include_synonyms": False,
        "include_documentation": False,
    }

    def applied() -> bool:
        answer = w.call(ApiKey.DESCRIBE_CONFIGS, 4, keys)
        return any(c.value == "0" for r in answer.results for c in r.configs)

    _until("the group config", applied)


def test_validation_and_unknown_groups(wire: Wire, unique: Callable[[str], str]) -> None:
    g = unique("sga")
    assert _err(_hb(wire, g, "m", 5)) == (E.GROUP_ID_NOT_FOUND, f"Share group {g} not found.")
    assert _err(_hb(wire, g, "m", -1)) == (E.GROUP_ID_NOT_FOUND, f"Group {g} not found.")
    bad: list[tuple[dict[str, Any], str | None]] = [
        ({"member": ""}, None),
        ({"group": ""}, "GroupId can't be empty."),
        ({"rack_id": ""}, "RackId can't be empty."),
        ({"subscribed_topic_names": None}, "SubscribedTopicNames must be set in first request."),
        ({"subscribed_topic_names": []}, "SubscribedTopicNames must be set in first request."),
        ({"epoch": -2}, "MemberEpoch is invalid."),
    ]
    for fields, text in bad:
        args: dict[str, Any] = {"group": g, "member": "m", "epoch": 0}
        args["subscribed_topic_names"] = ["t"]
        args.update(fields)
        group, member, epoch = str(args.pop("group")), str(args.pop("member")), args.pop("epoch")
        answer = _hb(wire, group, member, int(epoch), **args)
        assert _err(answer) == (E.INVALID_REQUEST, text), fields
    described = _describe(wire, g)
    assert (described.error_code, described.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        f"Group {g} not found.",
    )


def test_a_member_joins_is_assigned_described_fenced_and_leaves(
    wire: Wire, unique: Callable[[str], str]
) -> None:
    g, t = unique("sgb"), unique("sgb-t")
    wire.create_topic(t, 2)
    _no_assignment_interval(wire, g)
    first = _hb(wire, g, "m1", 0, subscribed_topic_names=[t])
    assert (first.error_code, first.member_id, first.heartbeat_interval_ms) == (0, "m1", 5000)
    # a new group is at epoch 1 (Kafka 4.4): the first member joins at 2, assigned nothing
    # until the partitions' share state is initialized
    assert first.member_epoch == 2 and first.assignment is not None
    assert list(first.assignment.topic_partitions) == []

    def assigned() -> Any:
        epoch = _describe(wire, g).members[0].member_epoch
        answer = _hb(wire, g, "m1", epoch)
        assert answer.error_code == 0, answer
        ok = answer.assignment is not None and answer.assignment.topic_partitions
        return answer if ok else None

    answer = _until("the share partitions' assignment", assigned)
    [tp] = answer.assignment.topic_partitions
    assert sorted(tp.partitions) == [0, 1]
    described = _describe(wire, g)
    assert (described.error_code, described.group_state, described.assignor_name) == (
        0,
        "Stable",
        "simple",
    )
    assert described.group_epoch == described.assignment_epoch == answer.member_epoch
    [m] = described.members
    assert (m.member_id, m.member_epoch, m.rack_id) == ("m1", answer.member_epoch, None)
    assert (m.client_id, list(m.subscribed_topic_names)) == ("compat-oracle", [t])
    [a] = m.assignment.topic_partitions
    assert (a.topic_id, a.topic_name, sorted(a.partitions)) == (tp.topic_id, t, [0, 1])
    epoch = answer.member_epoch
    assert _err(_hb(wire, g, "m1", epoch + 1)) == (
        E.FENCED_MEMBER_EPOCH,
        f"The share group member has a greater member epoch ({epoch + 1}) than the one known "
        f"by the group coordinator ({epoch}). The member must abandon all its partitions and "
        "rejoin.",
    )
    assert _err(_hb(wire, g, "m2", 1)) == (
        E.UNKNOWN_MEMBER_ID,
        f"Member m2 is not a member of group {g}.",
    )
    left = _hb(wire, g, "m1", -1)
    assert (left.error_code, left.member_id, left.member_epoch) == (0, "m1", -1)
    empty = _describe(wire, g)
    assert (empty.group_state, empty.group_epoch, list(empty.members)) == ("Empty", epoch + 1, [])
    deleted = wire.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [g]})
    assert [(r.group_id, r.error_code) for r in deleted.results] == [(g, 0)]
    assert _describe(wire, g).error_code == E.GROUP_ID_NOT_FOUND


def test_group_types_do_not_mix(wire: Wire, unique: Callable[[str], str]) -> None:
    g, t = unique("sgc"), unique("sgc-t")
    wire.create_topic(t, 1)
    assert _hb(wire, g, "m1", 0, subscribed_topic_names=[t]).error_code == 0
    listed = wire.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
    mine = [x for x in listed.groups if x.group_id == g]
    assert [(x.protocol_type, x.group_state, x.group_type) for x in mine] == [
        ("share", "Stable", "share")
    ]
    consumer = {
        "group_id": g,
        "member_id": "c1",
        "member_epoch": 0,
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": 30000,
        "subscribed_topic_names": [t],
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": [],
    }
    answer = wire.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer)
    assert (answer.error_code, answer.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        f"Group {g} is not a consumer group.",
    )
    join = {
        "group_id": g,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    joined = wire.call(ApiKey.JOIN_GROUP, 5, join)
    assert (joined.error_code, joined.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    body = {"groups": [g], "include_authorized_operations": False}
    [classic] = wire.call(ApiKey.DESCRIBE_GROUPS, 6, body).groups
    assert (classic.error_code, classic.error_message) == (
        E.GROUP_ID_NOT_FOUND,
        f"Group {g} is not a classic group.",
    )
    other = unique("sgc-consumer")
    consumer["group_id"] = other
    assert wire.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, consumer).error_code == 0
    assert _err(_hb(wire, other, "m1", 0, subscribed_topic_names=[t])) == (
        E.GROUP_ID_NOT_FOUND,
        f"Group {other} is not a share group.",
    )
    refused = wire.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": [g]})
    assert [r.error_code for r in refused.results] == [E.NON_EMPTY_GROUP]
    for version in (8, 9):  # GROUP_ID_NOT_FOUND before v9 too (not ILLEGAL_GENERATION)
        part = {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1}
        body = {
            "group_id": g,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": t, "partitions": [{**part, "committed_metadata": ""}]}],
        }
        answer = wire.call(ApiKey.OFFSET_COMMIT, version, body)
        assert [p.error_code for x in answer.topics for p in x.partitions] == [69], version
    fetch = {"groups": [{"group_id": g, "topics": None}], "require_stable": False}
    [fetched] = wire.call(ApiKey.OFFSET_FETCH, 8, fetch).groups
    assert (fetched.error_code, list(fetched.topics)) == (0, [])
    delete = {"group_id": g, "topics": [{"name": t, "partitions": [{"partition_index": 0}]}]}
    assert wire.call(ApiKey.OFFSET_DELETE, 0, delete).error_code == E.GROUP_ID_NOT_FOUND
    assert _hb(wire, g, "m1", -1).error_code == 0
    empty = _describe(wire, g)  # the last member out moves the assignment epoch along
    assert (empty.group_state, empty.assignment_epoch) == ("Empty", empty.group_epoch)


def test_the_simple_assignor_as_kafka(wire: Wire, unique: Callable[[str], str]) -> None:
    """Members of different topics: balanced topic by topic, the same partitions as Kafka's."""
    g, t, u = unique("sgd"), unique("sgd-t"), unique("sgd-u")
    wire.create_topic(t, 4)
    wire.create_topic(u, 2)
    _no_assignment_interval(wire, g)
    names: dict[Any, str] = {}

    def parts(answer: Any) -> dict[str, list[int]]:
        assert answer.error_code == 0, answer
        if answer.assignment is None:
            return {}
        return {
            names[tp.topic_id]: sorted(tp.partitions) for tp in answer.assignment.topic_partitions
        }

    epochs: dict[str, int] = {}

    def hb(member: str, topics: list[str] | None = None) -> Any:
        answer = _hb(wire, g, member, epochs.get(member, 0), subscribed_topic_names=topics)
        epochs[member] = answer.member_epoch
        return answer

    first = hb("m1", [t])
    assert list(first.assignment.topic_partitions) == []
    hb("m2", [u])

    def both_assigned() -> bool:
        for m in ("m1", "m2"):
            hb(m)
        members = _describe(wire, g).members
        return len(members) == 2 and all(m.assignment.topic_partitions for m in members)

    _until("m1 and m2 assigned", both_assigned)
    for m in _describe(wire, g).members:
        names.update({a.topic_id: a.topic_name for a in m.assignment.topic_partitions})
    third = hb("m3", [t, u])
    assert parts(third) == {t: [0, 1], u: [0]}
    assert parts(hb("m1")) == {t: [2, 3]}
    assert parts(hb("m2")) == {u: [1]}
    for m in ("m1", "m2", "m3"):
        assert hb(m).error_code == 0
    for m in ("m1", "m2", "m3"):
        assert _hb(wire, g, m, -1).error_code == 0
