"""Share group records (KIP-932) in `__consumer_offsets`: the codecs (byte layouts from
Kafka 4.4's JSON), what a heartbeat writes, and a reload that gives the groups back."""

from __future__ import annotations

import struct
import uuid

import pytest

from protocol import share_group_records as sr
from protocol.group_records import GroupRecordError
from tests.unit.group.sharekit import INTERVAL, SESSION, SKit, T, U
from wirebroker.group import GroupConfig, GroupCoordinatorCore
from wirebroker.group.share.model import InitValue

ALL = frozenset(range(4))


def test_keys() -> None:
    key = sr.encode_key(sr.ShareKey(sr.CURRENT_ASSIGNMENT, "g", "m"))
    assert key == b"\x00\x0e" + b"\x00\x01g" + b"\x00\x01m"
    assert sr.decode_share_key(key) == sr.ShareKey(14, "g", "m")
    group_key = sr.encode_key(sr.ShareKey(sr.STATE_PARTITION_METADATA, "g"))
    assert group_key == b"\x00\x0f\x00\x01g"
    assert sr.decode_share_key(group_key) == sr.ShareKey(15, "g")
    assert sr.decode_share_key(b"\x00\x03\x00\x01g") is None  # a consumer group record
    with pytest.raises(GroupRecordError):
        sr.decode_share_key(b"\x00\x0b\x00\x05g")


def test_group_epoch_layout() -> None:
    data = sr.encode_group_epoch(sr.GroupEpochValue(7, -2))
    assert data == b"\x00\x00" + struct.pack(">iq", 7, -2) + b"\x00"
    assert sr.decode_group_epoch(data) == sr.GroupEpochValue(7, -2)


def test_target_metadata_writes_its_timestamp_as_tag_0() -> None:
    plain = sr.encode_target_metadata(sr.TargetMetadataValue(3))
    assert plain == b"\x00\x00\x00\x00\x00\x03\x00"
    stamped = sr.encode_target_metadata(sr.TargetMetadataValue(3, 1234))
    assert stamped == b"\x00\x00\x00\x00\x00\x03\x01\x00\x08" + struct.pack(">q", 1234)
    assert sr.decode_target_metadata(stamped) == sr.TargetMetadataValue(3, 1234)
    assert sr.decode_target_metadata(plain) == sr.TargetMetadataValue(3, 0)


def test_values_round_trip() -> None:
    member = sr.MemberMetadataValue(None, "cli", "/1.2.3.4", ("a", "b"))
    assert sr.decode_member_metadata(sr.encode_member_metadata(member)) == member
    with_rack = sr.MemberMetadataValue("r", "", "", ())
    assert sr.encode_member_metadata(with_rack) == b"\x00\x00\x02r\x01\x01\x01\x00"
    target = {T: frozenset({0, 2}), U: frozenset({1})}
    assert sr.decode_target_member(sr.encode_target_member(target)) == target
    current = sr.CurrentAssignmentValue(4, 3, 0, target)
    assert sr.decode_current_assignment(sr.encode_current_assignment(current)) == current
    state = sr.StatePartitionMetadataValue(
        initializing=(sr.TopicPartitionsInfo(U, "u", frozenset({1})),),
        initialized=(sr.TopicPartitionsInfo(T, "t", ALL),),
        deleting=((uuid.UUID(int=9), "gone"),),
    )
    data = sr.encode_state_partition_metadata(state)
    assert sr.decode_state_partition_metadata(data) == state
    empty = sr.encode_state_partition_metadata(sr.StatePartitionMetadataValue())
    assert empty == b"\x00\x00\x01\x01\x01\x00"


def test_bad_values_raise() -> None:
    with pytest.raises(GroupRecordError):
        sr.decode_group_epoch(b"\x00\x01" + b"\x00" * 13)  # version 1
    with pytest.raises(GroupRecordError):
        sr.decode_current_assignment(b"\x00\x00\x00\x00")


def _decoded(kit: SKit) -> list[tuple[int, str | None, object]]:
    out: list[tuple[int, str | None, object]] = []
    for r in kit.records:
        key = sr.decode_share_key(r.key)
        assert key is not None
        out.append((key.record_type, key.member, r.value is None))
    return out


def test_what_a_join_writes() -> None:
    k = SKit()
    k.hb("m1", 0)
    types = [t for t, _, _ in _decoded(k)]
    assert types == [
        sr.MEMBER_METADATA,
        sr.GROUP_METADATA,
        sr.TARGET_MEMBER,
        sr.TARGET_METADATA,
        sr.CURRENT_ASSIGNMENT,
        sr.STATE_PARTITION_METADATA,  # initializing
        sr.STATE_PARTITION_METADATA,  # initialized (after the persister)
    ]
    last = sr.decode_state_partition_metadata(k.records[-1].value or b"")
    assert last.initialized == (sr.TopicPartitionsInfo(T, "t", ALL),)
    assert last.initializing == ()
    k.records.clear()
    k.hb("m1", -1)
    assert _decoded(k) == [
        (sr.CURRENT_ASSIGNMENT, "m1", True),
        (sr.TARGET_MEMBER, "m1", True),
        (sr.MEMBER_METADATA, "m1", True),
        (sr.GROUP_METADATA, None, False),
        (sr.TARGET_METADATA, None, False),  # the last one out: the assignment epoch follows
    ]
    assert (k.group().group_epoch, k.group().assignment_epoch) == (3, 3)


def _reload(kit: SKit) -> GroupCoordinatorCore:
    """A new core that loads what `kit` wrote (the latest value of each key, any order)."""
    latest: dict[bytes, bytes | None] = {}
    for r in kit.records:
        latest[r.key] = r.value
    core = GroupCoordinatorCore(GroupConfig(num_partitions=1))
    core.begin_loading()
    for key, value in reversed(latest.items()):
        assert core.replay(key, value)
    core.complete_loading(kit.now)
    return core


def test_reload_gives_back_the_group_and_members_continue() -> None:
    k = SKit()
    k.joined("m1", rack_id="r")
    k.tick(INTERVAL)
    k.hb("m2", 0, topics=("t", "u"))
    before = k.group()
    core = _reload(k)
    after = core.state.share_groups["sg"]
    assert (after.group_epoch, after.assignment_epoch, after.metadata_hash) == (
        before.group_epoch,
        before.assignment_epoch,
        before.metadata_hash,
    )
    assert after.assignment_timestamp_ms == before.assignment_timestamp_ms
    assert after.members == before.members
    assert after.target == before.target
    state = core.state.share_states["sg"]
    assert state.initialized[T].partitions == ALL and state.initialized[U].partitions == {0, 1}
    assert state.initialized[T].name == "t"
    # members go on with their epochs
    k.core = core
    assert k.hb("m1", before.members["m1"].member_epoch).error.name == "NONE"


def test_loaded_members_time_out_without_heartbeats() -> None:
    k = SKit()
    k.joined("m1")
    k.core = _reload(k)
    k.tick(SESSION - 1)
    assert "m1" in k.group().members
    k.tick(1)
    assert k.group().members == {}


def test_a_deleted_group_is_gone_after_a_reload() -> None:
    k = SKit()
    k.joined("m1")
    k.hb("m1", -1)
    k.records.extend(k.core.delete_groups(k.now, group_ids=["sg"]).records)
    core = _reload(k)
    assert core.state.share_groups == {} and core.state.share_states == {}


def test_initializing_partitions_are_retried_after_a_reload() -> None:
    k = SKit()
    k.hb("m1", 0, init=False)
    k.core = _reload(k)
    assert k.core.state.share_states["sg"].initializing[T] == InitValue("t", ALL)
    again = k.hb("m1", 2, init=False)
    assert again.initialize is not None and again.initialize.topics[T].partitions == ALL
