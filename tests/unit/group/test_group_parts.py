"""The parts of the split coordinator core on their own: typed results' `failed`, the loader's
`take`, and the record builders."""

from __future__ import annotations

from protocol.errors import ErrorCode as E
from protocol.group_records import OffsetCommitValue, decode_offset_commit_value
from wirebroker.group import ClassicGroup, GroupConfig
from wirebroker.group.loader import GroupLoader
from wirebroker.group.messages import (
    CommitResult,
    DeletedGroup,
    DeleteGroupsResult,
    DeleteOffsetsResult,
    JoinMember,
    JoinResult,
    LeaveMember,
    LeaveResult,
    MemberLeft,
    PartitionError,
    SyncResult,
    TopicErrors,
)
from wirebroker.group.records import (
    empty_group_metadata_record,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)
from wirebroker.group.state import CoordinatorState, PartitionStatus


def test_failed_walks_every_error_field_and_keeps_the_rest() -> None:
    deleted = DeleteOffsetsResult(
        E.NONE,
        (
            TopicErrors(
                "t", (PartitionError(0, E.NONE), PartitionError(1, E.GROUP_SUBSCRIBED_TO_TOPIC))
            ),
        ),
    )
    assert deleted.failed(E.NOT_COORDINATOR) == DeleteOffsetsResult(
        E.NOT_COORDINATOR,
        (
            TopicErrors(
                "t",
                (
                    PartitionError(0, E.NOT_COORDINATOR),
                    PartitionError(1, E.GROUP_SUBSCRIBED_TO_TOPIC),
                ),
            ),
        ),
    )
    assert SyncResult(assignment=b"a").failed(E.UNKNOWN) == SyncResult(E.UNKNOWN, assignment=b"a")
    join = JoinResult(E.NONE, "m", 3, members=(JoinMember("m", None, b"x"),))
    failed = join.failed(E.NOT_COORDINATOR)
    assert failed.error == E.NOT_COORDINATOR and failed.members == join.members
    assert type(failed) is JoinResult and failed.generation_id == 3


def test_failed_replaces_only_success_codes() -> None:
    assert JoinResult(E.MEMBER_ID_REQUIRED, "m").failed(E.NOT_COORDINATOR).error == (
        E.NOT_COORDINATOR
    )
    assert JoinResult(E.UNKNOWN_MEMBER_ID).failed(E.NOT_COORDINATOR).error == E.UNKNOWN_MEMBER_ID
    leave = LeaveResult(
        members=(
            MemberLeft(LeaveMember("a"), E.NONE),
            MemberLeft(LeaveMember("b"), E.FENCED_INSTANCE_ID),
        )
    ).failed(E.UNKNOWN)
    assert (leave.error, [m.error for m in leave.members]) == (
        E.UNKNOWN,
        [E.UNKNOWN, E.FENCED_INSTANCE_ID],
    )
    commit = CommitResult(
        (
            TopicErrors(
                "t", (PartitionError(0, E.NONE), PartitionError(1, E.OFFSET_METADATA_TOO_LARGE))
            ),
        )
    )
    assert commit.failed(E.NOT_COORDINATOR).errors() == {
        ("t", 0): E.NOT_COORDINATOR,
        ("t", 1): E.OFFSET_METADATA_TOO_LARGE,
    }
    deleted = DeleteGroupsResult((DeletedGroup("a", E.NONE), DeletedGroup("b", E.NONE)))
    assert deleted.failed_where({"b": E.NOT_COORDINATOR}).results == (
        DeletedGroup("a", E.NONE),
        DeletedGroup("b", E.NOT_COORDINATOR),
    )


def test_loader_takes_what_it_replayed_per_partition() -> None:
    state = CoordinatorState(GroupConfig(num_partitions=50))
    loader = GroupLoader(state)
    groups = ["g1", "g2", "g3"]
    for g in groups:
        state.partitions[state.partition_for(g)] = PartitionStatus.LOADING
    value = OffsetCommitValue(offset=7, metadata="", commit_timestamp=5)
    for g in groups:
        r = offset_commit_record(state.partition_for(g), g, "t", 0, value)
        assert loader.replay(r.key, r.value)
    p3 = state.partition_for("g3")
    group_record = empty_group_metadata_record(p3, ClassicGroup("g3"))
    assert loader.replay(group_record.key, group_record.value)
    tomb = group_tombstone(p3, "g3")
    assert loader.replay(tomb.key, tomb.value)  # the group goes, its offsets stay
    gone = offset_tombstone(state.partition_for("g2"), "g2", "t", 0)
    assert loader.replay(gone.key, gone.value)

    first = loader.take([state.partition_for("g1"), p3])
    assert list(first.groups) == ["g1"]
    assert {g: {t: dict(ps) for t, ps in o.items()} for g, o in first.offsets.items()} == {
        "g1": {"t": {0: first.offsets["g1"]["t"][0]}},
        "g3": {"t": {0: first.offsets["g3"]["t"][0]}},
    }
    assert first.offsets["g1"]["t"][0].committed_offset == 7
    rest = loader.take(range(50))
    assert list(rest.groups) == ["g2"] and rest.offsets == {}
    assert loader.take(range(50)).groups == {}


def test_offset_commit_record_roundtrip() -> None:
    value = OffsetCommitValue(offset=3, metadata="m", commit_timestamp=9, leader_epoch=2)
    r = offset_commit_record(4, "g", "t", 1, value)
    assert r.partition == 4 and r.value is not None
    assert decode_offset_commit_value(r.value).offset == 3
