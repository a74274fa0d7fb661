"""KIP-932 share groups in the pure core: join and share-state initialization, assignment
(several members per partition), heartbeats, leaving, session expiry, fencing, validation,
group types, listing, describing, deleting."""

from __future__ import annotations

import uuid

from protocol import share_group_records as sr
from protocol.errors import ErrorCode
from tests.unit.group.sharekit import INTERVAL, SESSION, SKit, T, U, parts
from wirebroker.group import GroupConfig
from wirebroker.group.consumer.messages import ConsumerHeartbeatRequest
from wirebroker.group.messages import CommitPartition, CommitRequest, CommitTopic, JoinRequest
from wirebroker.group.share.model import InitValue
from wirebroker.group.state import GroupOverrides

ALL = {0, 1, 2, 3}


def test_join_initializes_the_share_state_then_assigns() -> None:
    k = SKit()
    first = k.hb("m1", 0)
    assert (first.error, first.member_id, first.member_epoch) == (ErrorCode.NONE, "m1", 2)
    assert first.heartbeat_interval_ms == 5_000
    assert first.assignment == {}  # nothing initialized yet: nothing to assign
    assert first.initialize is not None
    assert first.initialize.group_epoch == 2
    assert k.initialized == [("sg", T, p, 2) for p in range(4)]
    state = k.core.state.share_states["sg"]
    assert state.initialized == {T: InitValue("t", frozenset(ALL), k.now)}
    assert state.initializing == {}
    # the next heartbeat (after the assignment interval) moves the epoch and assigns them
    k.tick(INTERVAL)
    second = k.hb("m1", 2)
    assert second.member_epoch == 3
    assert parts(second) == ALL
    assert second.initialize is None
    # a steady heartbeat changes nothing and sends no assignment
    third = k.hb("m1", 3)
    assert (third.member_epoch, third.assignment) == (3, None)


def test_initialization_waits_for_the_assignment_interval() -> None:
    k = SKit()
    k.hb("m1", 0)
    too_soon = k.hb("m1", 2)
    assert (too_soon.member_epoch, too_soon.assignment) == (2, None)
    assert k.group().group_epoch == 3  # moved, but assigned after the interval
    k.tick(INTERVAL)
    assert parts(k.hb("m1", 2)) == ALL


def test_a_pending_initialization_is_not_asked_again_until_the_retry_interval() -> None:
    k = SKit()
    k.hb("m1", 0, init=False)  # the persister has not answered
    assert k.core.state.share_states["sg"].initializing[T].partitions == frozenset(ALL)
    assert k.hb("m1", 2, init=False).initialize is None
    k.tick(30_000)
    again = k.hb("m1", 2, init=False)
    assert again.initialize is not None
    assert again.initialize.topics[T].partitions == frozenset(ALL)


def test_a_persister_failure_uninitializes() -> None:
    k = SKit()
    request = k.hb("m1", 0, init=False).initialize
    assert request is not None
    k.records.extend(k.core.share.uninitialized(request).records)
    state = k.core.state.share_states["sg"]
    assert state.initializing == {} and state.initialized == {}
    assert k.hb("m1", 2, init=False).initialize is not None  # asked again at once


def test_two_members_share_the_partitions_evenly() -> None:
    k = SKit()
    k.joined("m1")
    k.tick(INTERVAL)
    b = k.hb("m2", 0)
    a = k.hb("m1", 3)  # m1 at the new epoch: half of the partitions
    assert a.member_epoch == b.member_epoch == 4
    assert len(parts(a)) == len(parts(b)) == 2
    assert parts(a) | parts(b) == ALL


def test_more_members_than_partitions_share_partitions() -> None:
    k = SKit()
    k.topics["t"] = (T, 2)
    k.joined("m1")
    for m in ("m2", "m3"):
        k.hb(m, 0)
    k.tick(INTERVAL)
    answers = {m: k.hb(m, k.group().members[m].member_epoch) for m in ("m1", "m2", "m3")}
    held = {m: frozenset(k.group().members[m].assigned.get(T, ())) for m in answers}
    assert all(len(ps) >= 1 for ps in held.values())
    counts = [sum(p in ps for ps in held.values()) for p in (0, 1)]
    assert counts == [2, 2]  # ceil(3/2) = 2 members per partition
    assert sorted(len(ps) for ps in held.values()) == [1, 1, 2]


def test_members_of_different_topics() -> None:
    k = SKit()
    k.joined("m1", topics=("t",))
    k.hb("m2", 0, topics=("u",))
    k.hb("m3", 0, topics=("t", "u"))
    k.tick(INTERVAL)
    for m in ("m1", "m2", "m3"):
        k.hb(m, k.group().members[m].member_epoch)
    k.tick(INTERVAL)
    for m in ("m1", "m2", "m3"):
        k.hb(m, k.group().members[m].member_epoch)
    members = k.group().members
    assert set(members["m1"].assigned) <= {T}
    assert set(members["m2"].assigned) <= {U}
    t_parts = [members[m].assigned.get(T, frozenset()) for m in ("m1", "m3")]
    u_parts = [members[m].assigned.get(U, frozenset()) for m in ("m2", "m3")]
    assert frozenset().union(*t_parts) == frozenset(ALL)
    assert frozenset().union(*u_parts) == frozenset({0, 1})
    assert [len(p) for p in t_parts] == [2, 2] and [len(p) for p in u_parts] == [1, 1]


def test_leave_moves_the_epoch_and_the_others_take_over() -> None:
    k = SKit()
    k.joined("m1")
    k.tick(INTERVAL)
    k.hb("m2", 0)
    k.hb("m1", 3)
    left = k.hb("m2", -1)
    assert (left.error, left.member_id, left.member_epoch) == (ErrorCode.NONE, "m2", -1)
    assert set(k.group().members) == {"m1"}
    assert k.group().group_epoch == 5
    k.tick(INTERVAL)
    back = k.hb("m1", 4)  # the assignment at the leave's epoch gives m1 everything
    assert (back.member_epoch, parts(back)) == (5, ALL)


def test_a_silent_member_is_fenced_after_the_session_timeout() -> None:
    k = SKit()
    k.joined("m1")
    k.hb("m2", 0)
    epoch = k.group().group_epoch
    k.tick(SESSION - INTERVAL - 1)
    k.hb("m2", k.group().members["m2"].member_epoch)  # m2 keeps its session
    k.tick(INTERVAL + 1)
    assert set(k.group().members) == {"m2"}
    assert k.group().group_epoch == epoch + 1
    stale = k.hb("m1", 3)
    assert stale.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert stale.error_message == "Member m1 is not a member of group sg."


def test_session_timeout_and_interval_follow_the_group_configs() -> None:
    k = SKit()
    k.core.set_group_configs(
        "sg", GroupOverrides(share_session_timeout_ms=50_000, share_heartbeat_interval_ms=7_000)
    )
    assert k.hb("m1", 0).heartbeat_interval_ms == 7_000
    k.tick(45_000)
    assert "m1" in k.group().members
    k.tick(5_000)
    assert "m1" not in k.group().members


def test_fencing_by_epoch() -> None:
    k = SKit()
    k.joined("m1")  # epoch 3, previous 2
    greater = k.hb("m1", 4)
    assert greater.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert greater.error_message == (
        "The share group member has a greater member epoch (4) than the one known by the "
        "group coordinator (3). The member must abandon all its partitions and rejoin."
    )
    assert k.hb("m1", 2).error is ErrorCode.NONE  # its previous epoch: a lost answer
    smaller = k.hb("m1", 0, topics=("t",))  # a rejoin is accepted at any epoch
    assert smaller.error is ErrorCode.NONE
    k.hb("m2", 0)
    k.tick(INTERVAL)
    k.hb("m1", 3)
    k.tick(INTERVAL)
    k.hb("m2", 0, topics=("u",))
    k.hb("m1", k.group().members["m1"].member_epoch)
    m1 = k.group().members["m1"]
    old = m1.previous_member_epoch - 1
    smaller = k.hb("m1", old)
    assert smaller.error is ErrorCode.FENCED_MEMBER_EPOCH
    assert smaller.error_message == (
        f"The share group member has a smaller member epoch ({old}) than the one known by "
        f"the group coordinator ({m1.member_epoch}), and it does not match the previous "
        f"member epoch ({m1.previous_member_epoch}). The member must abandon all its "
        "partitions and rejoin."
    )


def test_request_checks() -> None:
    k = SKit()
    cases = [
        (dict(member="", epoch=0), "MemberId can't be empty."),
        (dict(member="m", epoch=0, group=""), "GroupId can't be empty."),
        (dict(member="m", epoch=0, rack_id=""), "RackId can't be empty."),
        (
            dict(member="m", epoch=0, topics=()),
            "SubscribedTopicNames must be set in first request.",
        ),
        (dict(member="m", epoch=-2), "MemberEpoch is invalid."),
    ]
    for kw, text in cases:
        result = k.hb(kw.pop("member"), kw.pop("epoch"), **kw)  # type: ignore[arg-type]
        assert (result.error, result.error_message) == (ErrorCode.INVALID_REQUEST, text)
        assert (result.member_id, result.member_epoch) == (None, 0)


def test_unknown_groups_and_members() -> None:
    k = SKit()
    hb = k.hb("m1", 4)
    assert (hb.error, hb.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Share group sg not found.",
    )
    leave = k.hb("m1", -1)
    assert (leave.error, leave.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group sg not found.",
    )
    k.hb("m1", 0)
    other = k.hb("m9", -1)
    assert other.error is ErrorCode.UNKNOWN_MEMBER_ID
    assert other.error_message == "Member m9 is not a member of group sg."


def test_group_types_do_not_mix() -> None:
    k = SKit()
    consumer = ConsumerHeartbeatRequest(
        "cg", "c1", 0, rebalance_timeout_ms=1, subscribed_topic_names=("t",), owned={}
    )
    k.core.consumer_group_heartbeat(k.now, consumer, k.topics.get)
    wrong = k.hb("m1", 0, group="cg")
    assert (wrong.error, wrong.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group cg is not a share group.",
    )
    k.hb("m1", 0)
    as_consumer = ConsumerHeartbeatRequest(
        "sg", "c1", 0, rebalance_timeout_ms=1, subscribed_topic_names=("t",), owned={}
    )
    answer = k.core.consumer_group_heartbeat(k.now, as_consumer, k.topics.get).response
    assert answer is not None
    assert (answer.error, answer.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group sg is not a consumer group.",
    )
    join = JoinRequest("sg", "", "consumer", (("range", b""),), 10_000)
    joined = k.core.join_group("k", k.now, join).completions[0].result
    assert (joined.error, joined.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    [described] = k.core.share_group_describe(["cg"])
    assert (described.error, described.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group cg is not a share group.",
    )
    [classic] = k.core.describe_groups(group_ids=["sg"])
    assert (classic.state, classic.exists, classic.error_message) == (
        "Dead",
        False,
        "Group sg is not a classic group.",
    )


def test_group_size_limit() -> None:
    k = SKit(GroupConfig(num_partitions=1, share_max_size=1))
    k.hb("m1", 0)
    full = k.hb("m2", 0)
    assert (full.error, full.error_message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The share group has reached its maximum capacity of 1 members.",
    )


def test_list_describe_and_delete() -> None:
    k = SKit()
    k.joined("m1", rack_id="r1")
    listed = k.core.list_groups(types_filter=["Share"]).groups
    assert [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed] == [
        ("sg", "share", "Stable", "share")
    ]
    assert k.core.list_groups(types_filter=["consumer"]).groups == ()
    assert k.core.list_groups(states_filter=["empty"]).groups == ()
    [d] = k.core.share_group_describe(["sg"])
    assert (d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (
        "Stable",
        3,
        3,
        "simple",
    )
    [m] = d.members
    assert (m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host) == (
        "m1",
        "r1",
        3,
        "cli",
        "/127.0.0.1",
    )
    assert (m.subscribed_topic_names, dict(m.assignment)) == (("t",), {T: frozenset(ALL)})
    [missing] = k.core.share_group_describe(["nope"])
    assert (missing.error, missing.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
    )
    refused = k.core.delete_groups(k.now, group_ids=["sg"]).response
    assert refused is not None and refused.results[0].error is ErrorCode.NON_EMPTY_GROUP
    assert k.core.share.share_partitions("sg") == {T: frozenset(ALL)}
    k.hb("m1", -1)
    assert k.core.list_groups(states_filter=["Empty"]).groups[0].group_id == "sg"
    deleted = k.core.delete_groups(k.now, group_ids=["sg"])
    assert deleted.response is not None and deleted.response.results[0].error is ErrorCode.NONE
    assert "sg" not in k.core.state.share_groups and "sg" not in k.core.state.share_states
    assert deleted.records and all(r.value is None for r in deleted.records)


def test_offset_apis_and_share_groups() -> None:
    k = SKit()
    k.hb("m1", 0)
    commit = CommitRequest("sg", (CommitTopic("t", (CommitPartition(0, 5),)),))
    result = k.core.commit_offsets(k.now, commit).response
    assert result is not None and result.errors() == {("t", 0): ErrorCode.GROUP_ID_NOT_FOUND}
    fetched = k.core.fetch_offsets(group_id="sg", topics=None)  # Kafka: no offsets, no error
    assert (fetched.error, fetched.topics) == (ErrorCode.NONE, ())
    deleted = k.core.delete_offsets(k.now, group_id="sg", topics=[]).response
    assert deleted is not None and deleted.error is ErrorCode.GROUP_ID_NOT_FOUND
    assert "sg" not in k.core.state.groups


def test_new_partitions_are_initialized_then_assigned() -> None:
    k = SKit()
    k.joined("m1")
    k.topics["t"] = (T, 6)
    k.tick(INTERVAL)
    grown = k.hb("m1", 3)  # the metadata moved: a new epoch, partitions 4 and 5 initialized
    assert grown.member_epoch == 4 and grown.assignment is None
    assert k.initialized[-2:] == [("sg", T, 4, 4), ("sg", T, 5, 4)]
    k.tick(INTERVAL)
    assert parts(k.hb("m1", 4)) == set(range(6))


def test_a_topic_created_later_is_picked_up() -> None:
    k = SKit()
    joined = k.hb("m1", 0, topics=("t", "later"))
    assert joined.initialize is not None and set(joined.initialize.topics) == {T}
    k.topics["later"] = (uuid.UUID(int=7), 1)
    k.tick(INTERVAL)
    answer = k.hb("m1", 2)
    assert answer.initialize is not None and set(answer.initialize.topics) == {uuid.UUID(int=7)}


def test_the_assignment_interval_follows_the_group_config() -> None:
    k = SKit()
    k.core.set_group_configs("sg", GroupOverrides(share_assignment_interval_ms=0))
    k.hb("m1", 0)
    assert parts(k.hb("m1", 2)) == ALL  # no wait for the interval


def test_a_deleted_topic_leaves_the_share_state_bookkeeping() -> None:
    """Kafka's maybeCleanupShareGroupState: the topic leaves every group's initialized,
    initializing and deleting sets (one record per group that had it); re-created under its
    name (a new id) it is initialized anew and assigned, the group epoch then steady."""
    k = SKit()
    k.joined("m1", topics=("t", "u"))
    k.hb("m2", 0, group="other", topics=("u",))
    state = k.core.state.share_states
    state["sg"].deleting[uuid.UUID(int=7)] = "gone-too"
    result = k.core.share.topics_deleted({T, uuid.UUID(int=7)})
    keys = [sr.decode_share_key(r.key) for r in result.records]
    assert keys == [sr.ShareKey(sr.STATE_PARTITION_METADATA, "sg")]  # only "sg" had T
    assert set(state["sg"].initialized) == {U} and state["sg"].deleting == {}
    assert set(state["other"].initialized) == {U}
    assert k.core.share.topics_deleted({T}).records == []  # nothing left to clean
    # "t" re-created with a new id: the next heartbeat initializes and then assigns it
    new_t = uuid.UUID(int=99)
    k.topics["t"] = (new_t, 2)
    epoch = k.group().group_epoch
    k.tick(INTERVAL)
    moved = k.hb("m1", epoch)
    assert moved.initialize is not None and set(moved.initialize.topics) == {new_t}
    k.tick(INTERVAL)
    got = k.hb("m1", k.group().group_epoch)
    assert parts(got, new_t) == {0, 1} and T not in (got.assignment or {})
    steady = k.group().group_epoch
    k.tick(INTERVAL)
    k.hb("m1", steady)
    assert k.group().group_epoch == steady


def test_a_stale_topic_id_under_a_subscribed_name_does_not_move_the_epoch() -> None:
    """Bookkeeping of a topic deleted while the coordinator did not hear of it (the old id
    under the same name) never counts as an initialized partition waiting for assignment."""
    k = SKit()
    k.joined("m1")
    k.topics["t"] = (uuid.UUID(int=99), 4)
    k.tick(INTERVAL)
    k.hb("m1", k.group().group_epoch)
    k.tick(INTERVAL)
    k.hb("m1", k.group().group_epoch)
    assert T in k.core.state.share_states["sg"].initialized  # not told: still there
    steady = k.group().group_epoch
    for _ in range(3):
        k.tick(INTERVAL)
        assert k.hb("m1", steady).member_epoch == steady
    assert k.group().group_epoch == steady
