"""KIP-848 consumer group records: their bytes (Kafka 4.4's layouts), what each heartbeat
writes, and a reload from the log giving back the same groups (no rebalance after it)."""

from __future__ import annotations

import uuid

import pytest

from protocol import consumer_group_records as cr
from protocol.group_records import GroupRecordError
from tests.unit.group.consumerkit import SESSION, CKit, T, parts
from wirebroker.group import GroupConfig, GroupCoordinatorCore

ALL = frozenset(range(4))


def test_key_and_value_bytes() -> None:
    assert cr.encode_key(cr.ConsumerKey(cr.GROUP_METADATA, "cg")) == b"\x00\x03\x00\x02cg"
    assert cr.encode_key(cr.ConsumerKey(cr.CURRENT_ASSIGNMENT, "g", "m")) == (
        b"\x00\x08\x00\x01g\x00\x01m"
    )
    # version 0, epoch 7, no tagged fields
    assert cr.encode_group_epoch(cr.GroupEpochValue(7)) == b"\x00\x00\x00\x00\x00\x07\x00"
    value = cr.encode_target_member({T: frozenset({1, 0})})
    assert value == (
        b"\x00\x00" + b"\x02" + T.bytes + b"\x03" + b"\x00\x00\x00\x00\x00\x00\x00\x01"
        b"\x00" + b"\x00"
    )


def test_values_round_trip() -> None:
    epoch = cr.GroupEpochValue(5, -1234567890123)
    assert cr.decode_group_epoch(cr.encode_group_epoch(epoch)) == epoch
    meta = cr.MemberMetadataValue("i", None, "c", "/h", ("a", "b"), None, 30000, "range")
    assert cr.decode_member_metadata(cr.encode_member_metadata(meta)) == meta
    current = cr.CurrentAssignmentValue(3, 2, 1, {T: ALL}, {uuid.UUID(int=9): frozenset({0})})
    assert cr.decode_current_assignment(cr.encode_current_assignment(current)) == current
    assert cr.decode_target_epoch(cr.encode_target_epoch(4)) == 4
    assert cr.decode_consumer_key(b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00") is None
    with pytest.raises(GroupRecordError):
        cr.decode_current_assignment(b"\x00\x00\x00")
    with pytest.raises(GroupRecordError):
        cr.decode_group_epoch(b"\x00\x01\x00\x00\x00\x01\x00")  # version 1


def _types(kit: CKit, since: int) -> list[int | None]:
    out = []
    for r in kit.records[since:]:
        k = cr.decode_consumer_key(r.key)
        out.append(None if k is None else k.record_type)
    return out


def test_what_a_join_and_a_leave_write() -> None:
    k = CKit()
    k.hb("m1", 0)
    assert _types(k, 0) == [
        cr.MEMBER_METADATA,
        cr.GROUP_METADATA,
        cr.TARGET_MEMBER,
        cr.TARGET_METADATA,
        cr.CURRENT_ASSIGNMENT,
    ]
    n = len(k.records)
    k.hb("m1", 2)
    assert len(k.records) == n  # a plain heartbeat writes nothing
    k.hb("m1", -1)
    assert _types(k, n) == [
        cr.CURRENT_ASSIGNMENT,
        cr.TARGET_MEMBER,
        cr.MEMBER_METADATA,
        cr.GROUP_METADATA,
        cr.TARGET_METADATA,  # the assignment epoch follows at once
    ]
    assert [r.value for r in k.records[n : n + 3]] == [None, None, None]


def _reload(kit: CKit) -> GroupCoordinatorCore:
    """A new core that loads what `kit` wrote (the latest value of each key, as the
    runtime's fold replays them)."""
    latest: dict[bytes, bytes | None] = {}
    for r in kit.records:
        latest[r.key] = r.value
    core = GroupCoordinatorCore(GroupConfig(num_partitions=1))
    core.begin_loading()
    for key, value in reversed(latest.items()):  # any order
        core.replay(key, value)
    core.complete_loading(kit.now)
    return core


def test_reload_gives_back_the_groups_and_members_continue() -> None:
    k = CKit()
    k.hb("m1", 0, instance_id="i1")
    k.hb("m2", 0)
    k.hb("m1", 2, instance_id="i1", owned={T: ALL})  # m1 revoking 2,3
    before = k.group()
    core = _reload(k)
    after = core.state.consumer_groups["cg"]
    assert (after.group_epoch, after.assignment_epoch, after.metadata_hash) == (
        before.group_epoch,
        before.assignment_epoch,
        before.metadata_hash,
    )
    assert after.members == before.members
    assert after.target == before.target
    assert after.owners == before.owners
    assert after.static_members == {"i1": "m1"}
    k.core = core  # the members go on against the reloaded coordinator
    r1 = k.hb("m1", 2, instance_id="i1", owned={T: frozenset({0, 1})})
    assert r1.member_epoch == 3
    r2 = k.hb("m2", 3)
    assert (r2.member_epoch, parts(r2)) == (3, {2, 3})
    assert k.group().group_epoch == 3  # no rebalance


def test_loaded_members_time_out_without_heartbeats() -> None:
    k = CKit()
    k.hb("m1", 0)
    k.core = _reload(k)
    k.tick(SESSION)
    assert k.group().members == {}
    assert k.group().group_epoch == 3


def test_offsets_of_a_consumer_group_do_not_make_a_classic_group() -> None:
    from wirebroker.group import CommitPartition, CommitRequest, CommitTopic

    k = CKit()
    k.hb("m1", 0)
    result = k.core.commit_offsets(
        0,
        CommitRequest("cg", [CommitTopic("t", [CommitPartition(0, 5)])], 2, "m1"),
    )
    assert result.response is not None
    k.records.extend(result.records)
    core = _reload(k)
    assert core.group("cg") is None
    assert core.committed_offsets("cg")[("t", 0)].committed_offset == 5
    assert "cg" in core.state.consumer_groups


def test_delete_groups_deletes_an_empty_consumer_group_only() -> None:
    from protocol.errors import ErrorCode

    k = CKit()
    k.hb("m1", 0)
    (refused,) = k.core.delete_groups(0, group_ids=["cg"]).response.results  # type: ignore[union-attr]
    assert refused.error is ErrorCode.NON_EMPTY_GROUP
    k.hb("m1", -1)
    result = k.core.delete_groups(0, group_ids=["cg"])
    assert result.response is not None and result.response.results[0].error is ErrorCode.NONE
    k.records.extend(result.records)
    assert "cg" not in k.core.state.consumer_groups
    assert "cg" not in _reload(k).state.consumer_groups


def test_offsets_of_an_empty_consumer_group_expire_then_the_group_goes() -> None:
    from protocol.errors import ErrorCode
    from wirebroker.group import CommitPartition, CommitRequest, CommitTopic

    config = GroupConfig(
        num_partitions=1, offsets_retention_ms=60_000, offsets_retention_check_interval_ms=1000
    )
    k = CKit(config)
    k.hb("m1", 0)
    commit = CommitRequest("cg", [CommitTopic("t", [CommitPartition(0, 5)])], 2, "m1")
    k.records.extend(k.core.commit_offsets(k.now, commit).records)
    for _ in range(4):  # "t" is subscribed: kept while the member is there
        k.tick(30_000)
        assert k.hb("m1", 2).error is ErrorCode.NONE
    assert ("t", 0) in k.core.committed_offsets("cg")
    assert k.hb("m1", -1).error is ErrorCode.NONE
    k.tick(1000)  # empty now: the offset (committed long ago) expires, the group goes
    assert k.core.committed_offsets("cg") == {}
    assert "cg" not in k.core.state.consumer_groups
    assert "cg" not in _reload(k).state.consumer_groups


def test_offset_delete_of_a_consumer_group() -> None:
    from protocol.errors import ErrorCode
    from wirebroker.group import CommitPartition, CommitRequest, CommitTopic, TopicPartitions

    k = CKit()
    k.hb("m1", 0)
    topics = [CommitTopic(t, [CommitPartition(0, 5)]) for t in ("t", "u")]
    k.core.commit_offsets(0, CommitRequest("cg", topics, 2, "m1"))
    asked = [TopicPartitions("t", [0]), TopicPartitions("u", [0])]
    result = k.core.delete_offsets(0, group_id="cg", topics=asked).response
    assert result is not None and result.error is ErrorCode.NONE
    assert [(t.name, [p.error for p in t.partitions]) for t in result.topics] == [
        ("t", [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC]),
        ("u", [ErrorCode.NONE]),
    ]
    assert set(k.core.committed_offsets("cg")) == {("t", 0)}
