"""KIP-848 consumer groups in the pure core: joins, reconciliation (revoke before assign),
fencing, leaving, static members, session and rebalance timeouts, validation, listing."""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from tests.unit.group.consumerkit import REBALANCE, SESSION, CKit, T, U, parts
from wirebroker.group import GroupConfig
from wirebroker.group.consumer.model import ConsumerMember, MemberState
from wirebroker.group.consumer.reconciliation import reconcile
from wirebroker.group.state import GroupOverrides

ALL = frozenset(range(4))


def two_members() -> CKit:
    """m1 owned everything; m2 joined; m1 revoked 2,3 and m2 took them: both Stable at 2."""
    k = CKit()
    k.hb("m1", 0)
    k.hb("m2", 0)
    k.hb("m1", 2, owned={T: ALL})
    k.hb("m1", 2, owned={T: frozenset({0, 1})})
    k.hb("m2", 3, owned={})
    return k


# -- reconciliation (pure) ----------------------------------------------------------------
def test_reconcile_stable_at_target_epoch_is_unchanged() -> None:
    m = ConsumerMember("a", member_epoch=3, assigned={T: ALL})
    assert reconcile(m, {T: frozenset({0})}, 3, None, lambda t, p: None) is m


def test_reconcile_revokes_before_it_moves_the_epoch() -> None:
    m = ConsumerMember("a", member_epoch=3, assigned={T: ALL})
    out = reconcile(m, {T: frozenset({0, 1})}, 4, {T: ALL}, lambda t, p: "a")
    assert out.state is MemberState.UNREVOKED_PARTITIONS
    assert out.member_epoch == 3
    assert out.assigned == {T: frozenset({0, 1})}
    assert out.pending_revocation == {T: frozenset({2, 3})}
    # still owned: no change; reported gone: Stable at the new epoch
    assert reconcile(out, {T: frozenset({0, 1})}, 4, {T: ALL}, lambda t, p: "a") is out
    done = reconcile(out, {T: frozenset({0, 1})}, 4, {T: frozenset({0, 1})}, lambda t, p: None)
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (
        MemberState.STABLE,
        4,
        3,
    )
    assert done.pending_revocation == {}


def test_reconcile_waits_for_partitions_others_still_own() -> None:
    m = ConsumerMember("b", member_epoch=0)
    out = reconcile(m, {T: frozenset({2, 3})}, 2, {}, lambda t, p: "a" if p == 3 else None)
    assert out.state is MemberState.UNRELEASED_PARTITIONS
    assert (out.member_epoch, out.assigned) == (2, {T: frozenset({2})})
    freed = reconcile(out, {T: frozenset({2, 3})}, 2, None, lambda t, p: None)
    assert (freed.state, freed.assigned) == (MemberState.STABLE, {T: frozenset({2, 3})})


# -- heartbeats -----------------------------------------------------------------------------
def test_one_member_gets_every_partition() -> None:
    k = CKit()
    r = k.hb("m1", 0, client_id="c", client_host="/h")
    assert r.error is ErrorCode.NONE
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms) == ("m1", 2, 5000)
    assert parts(r) == set(ALL)
    again = k.hb("m1", 2)
    assert (again.error, again.member_epoch, again.assignment) == (ErrorCode.NONE, 2, None)
    g = k.group()
    assert (g.group_epoch, g.assignment_epoch, str(g.group_state())) == (2, 2, "Stable")


def test_second_member_gets_partitions_only_after_they_are_revoked() -> None:
    k = CKit()
    k.hb("m1", 0)
    r2 = k.hb("m2", 0)
    assert (r2.member_epoch, parts(r2)) == (3, set())  # 2 and 3 still owned by m1
    assert str(k.group().group_state()) == "Reconciling"
    r1 = k.hb("m1", 2, owned={T: ALL})
    assert (r1.member_epoch, parts(r1)) == (2, {0, 1})  # revoke 2,3 first, same epoch
    assert k.group().members["m1"].pending_revocation == {T: frozenset({2, 3})}
    assert k.hb("m2", 3).assignment is None  # nothing free yet
    r1 = k.hb("m1", 2, owned={T: frozenset({0, 1})})
    assert r1.member_epoch == 3
    r2 = k.hb("m2", 3)
    assert (r2.member_epoch, parts(r2)) == (3, {2, 3})
    assert str(k.group().group_state()) == "Stable"


def test_no_partition_is_ever_owned_twice() -> None:
    k = CKit()
    k.hb("m1", 0)
    for m in ("m2", "m3"):
        k.hb(m, 0)
        for _ in range(4):
            for mid, member in list(k.group().members.items()):
                owned = member.assigned
                k.hb(mid, member.member_epoch, owned=owned)
                seen: list[tuple[object, int]] = []
                for other in k.group().members.values():
                    for t, ps in {**other.assigned}.items():
                        seen.extend((t, p) for p in ps)
                    for t, ps in other.pending_revocation.items():
                        seen.extend((t, p) for p in ps)
                assert len(seen) == len(set(seen))
    owners = {p for m in k.group().members.values() for p in m.assigned.get(T, ())}
    assert owners == set(ALL)
    assert str(k.group().group_state()) == "Stable"


def test_epoch_fencing() -> None:
    k = two_members()
    assert k.hb("m1", 4).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert k.hb("m1", 0 + 2, owned={T: frozenset({0, 1})}).error is ErrorCode.NONE  # previous
    assert k.hb("m1", 2, owned={T: frozenset({0, 1, 2})}).error is ErrorCode.FENCED_MEMBER_EPOCH
    r = k.hb("m1", 2, owned={T: frozenset({0, 1, 2})})
    assert r.error_message is not None and "smaller member epoch (2)" in r.error_message
    assert (r.member_id, r.member_epoch) == (None, 0)


def test_unknown_member_and_unknown_group() -> None:
    k = CKit()
    r = k.hb("m1", 3)
    assert (r.error, r.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Consumer group cg not found.",
    )
    assert k.hb("m1", -1).error_message == "Group cg not found."
    k.hb("m1", 0)
    r = k.hb("zz", 2)
    assert (r.error, r.error_message) == (
        ErrorCode.UNKNOWN_MEMBER_ID,
        "Member zz is not a member of group cg.",
    )


def test_leave_moves_the_group_epoch_and_frees_the_partitions() -> None:
    k = two_members()
    r = k.hb("m2", -1)
    assert (r.error, r.member_id, r.member_epoch, r.heartbeat_interval_ms) == (
        ErrorCode.NONE,
        "m2",
        -1,
        0,
    )
    assert k.group().group_epoch == 4
    r1 = k.hb("m1", 3)
    assert (r1.member_epoch, parts(r1)) == (4, set(ALL))
    assert k.hb("m2", -1).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_group_epoch_moves_as_kafka_4_4_moves_it() -> None:
    """A new group goes to epoch 1, then one more when the member's subscription is not
    empty; a member joining with no topics does not move it (answers of Kafka 4.4)."""
    k = CKit()
    assert k.hb("a", 0, topics=()).member_epoch == 1
    assert k.hb("b", 0, topics=()).member_epoch == 1
    assert k.hb("a", 1, topics=("t",)).member_epoch == 2
    assert k.hb("c", 0, topics=("nope",)).member_epoch == 3  # a new name: epoch moves
    assert k.group().group_epoch == 3


def test_subscription_change_and_new_topic_move_the_group_epoch() -> None:
    k = CKit()
    k.hb("m1", 0)
    r = k.hb("m1", 2, topics=("t", "u"))
    assert r.member_epoch == 3 and parts(r, U) == {0, 1}
    k.topics["u"] = (U, 3)  # partitions added
    r = k.hb("m1", 3)
    assert r.member_epoch == 4 and parts(r, U) == {0, 1, 2}


def test_session_timeout_fences_a_silent_member() -> None:
    k = two_members()
    k.tick(SESSION - 1)
    k.hb("m1", 3)
    k.tick(1)
    assert set(k.group().members) == {"m1"}
    assert k.group().group_epoch == 4
    r = k.hb("m1", 3)
    assert (r.member_epoch, parts(r)) == (4, set(ALL))


def test_group_config_overrides_set_the_session_timeout_and_heartbeat_interval() -> None:
    """The GROUP config resource's consumer.session.timeout.ms / consumer.heartbeat.interval.ms
    of a group (GroupCoordinatorCore.set_group_configs) apply from its members' next
    heartbeat; other groups keep the broker's; removing them restores the broker's."""
    k = CKit()
    k.core.set_group_configs(
        "cg", GroupOverrides(session_timeout_ms=50_000, heartbeat_interval_ms=7_000)
    )
    assert k.hb("m1", 0).heartbeat_interval_ms == 7_000
    assert k.hb("o1", 0, group="other").heartbeat_interval_ms == 5_000
    k.tick(SESSION)  # past the broker's session timeout, within the group's
    assert set(k.group().members) == {"m1"}
    k.tick(50_000 - SESSION)
    assert k.group().members == {}
    k.core.set_group_configs("cg", None)
    assert k.hb("m2", 0).heartbeat_interval_ms == 5_000


def test_rebalance_timeout_fences_a_member_that_does_not_revoke() -> None:
    k = CKit()
    k.hb("m1", 0)
    k.hb("m2", 0)
    k.hb("m1", 2, owned={T: ALL})  # told to revoke 2,3
    k.tick(REBALANCE - 1)
    k.hb("m1", 2, owned={T: ALL})  # still holds them
    k.hb("m2", 3)
    assert "m1" in k.group().members
    k.tick(1)
    assert set(k.group().members) == {"m2"}
    r2 = k.hb("m2", 3)
    assert (r2.member_epoch, parts(r2)) == (4, set(ALL))


def test_static_member_leaves_and_comes_back_without_a_rebalance() -> None:
    k = CKit()
    k.hb("s1", 0, instance_id="i1")
    k.hb("m2", 0)
    k.hb("s1", 2, instance_id="i1", owned={T: ALL})
    k.hb("s1", 2, instance_id="i1", owned={T: frozenset({0, 1})})
    epoch = k.group().group_epoch
    r = k.hb("s1", -2, instance_id="i1")
    assert (r.error, r.member_epoch) == (ErrorCode.NONE, -2)
    assert k.group().group_epoch == epoch
    assert k.hb("s9", -2, instance_id="i9").error_message == "Instance id i9 is unknown."
    r = k.hb("s1b", 0, instance_id="i1")
    assert (r.error, r.member_epoch, parts(r)) == (ErrorCode.NONE, 3, {0, 1})
    assert k.group().group_epoch == epoch
    r = k.hb("s1c", 0, instance_id="i1")
    assert r.error is ErrorCode.UNRELEASED_INSTANCE_ID
    r = k.hb("s1c", -2, instance_id="i1")
    assert (r.error, r.error_message) == (
        ErrorCode.FENCED_INSTANCE_ID,
        "Static member s1c with instance id i1 was fenced by member s1b.",
    )


def test_request_validation() -> None:
    k = CKit()
    bad = [
        ({"member": "", "epoch": 0}, "MemberId can't be empty."),
        ({"member": "m", "epoch": 0, "group": ""}, "GroupId can't be empty."),
        ({"member": "m", "epoch": 0, "rebalance_timeout_ms": -1}, "RebalanceTimeoutMs must"),
        ({"member": "m", "epoch": 0, "owned": {T: frozenset({1})}}, "TopicPartitions must"),
        ({"member": "m", "epoch": -3}, "MemberEpoch is invalid."),
        ({"member": "m", "epoch": 0, "instance_id": ""}, "InstanceId can't be empty."),
    ]
    for args, text in bad:
        r = k.hb(args.pop("member"), args.pop("epoch"), **args)  # type: ignore[arg-type]
        assert r.error is ErrorCode.INVALID_REQUEST
        assert r.error_message is not None and r.error_message.startswith(text)
    r = k.hb("m", 0, server_assignor="x")
    assert (r.error, r.error_message) == (
        ErrorCode.UNSUPPORTED_ASSIGNOR,
        "ServerAssignor x is not supported. Supported assignors: uniform, range.",
    )
    r = k.hb("m", 0, subscribed_topic_regex="[")
    assert r.error is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert r.error_message is not None
    assert r.error_message.startswith(
        "SubscribedTopicRegex `[` is not a valid regular expression: "
    )
    generated = k.hb("", 0, member_id_required=False)  # v0: the coordinator names it
    assert generated.error is ErrorCode.NONE and generated.member_id


def test_list_and_describe_show_the_group_type() -> None:
    k = two_members()
    listed = k.core.list_groups()
    assert [(g.group_id, g.group_type, g.group_state) for g in listed.groups] == [
        ("cg", "consumer", "Stable")
    ]
    assert k.core.list_groups(types_filter=["classic"]).groups == ()
    (d,) = k.core.consumer_group_describe(["cg"])
    assert (d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == (
        "Stable",
        3,
        3,
        "uniform",
    )
    assert {m.member_id: m.assignment for m in d.members} == {
        "m1": {T: frozenset({0, 1})},
        "m2": {T: frozenset({2, 3})},
    }
    (missing,) = k.core.consumer_group_describe(["nope"])
    assert (missing.error, missing.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group nope not found.",
    )
    (classic,) = k.core.describe_groups(group_ids=["cg"])
    assert not classic.exists and classic.error_message == "Group cg is not a classic group."


def test_config_reads_the_consumer_settings() -> None:
    from wirebroker.config import BrokerConfig

    cfg = GroupConfig.from_broker_config(
        BrokerConfig(
            {
                "group.consumer.session.timeout.ms": "6000",
                "group.consumer.min.session.timeout.ms": "6000",
                "group.consumer.heartbeat.interval.ms": "500",
                "group.consumer.min.heartbeat.interval.ms": "500",
                "group.consumer.assignors": "range,uniform",
                "group.consumer.migration.policy": "UPGRADE",
            }
        )
    )
    assert cfg.consumer_session_timeout_ms == 6000
    assert cfg.consumer_heartbeat_interval_ms == 500
    assert cfg.consumer_assignors == ("range", "uniform")
    assert cfg.consumer_migration_policy == "upgrade"


def test_config_bounds_of_the_consumer_session_and_heartbeat() -> None:
    """Kafka 4.4's GroupCoordinatorConfig requirements: the broker does not start."""
    from wirebroker.config import BrokerConfig, ConfigError

    def error(**settings: str) -> str | None:
        props = {k.replace("_", "."): v for k, v in settings.items()}
        try:
            GroupConfig.from_broker_config(BrokerConfig(props))
        except ConfigError as e:
            return str(e)
        return None

    assert error() is None
    assert error(group_consumer_session_timeout_ms="6000") == (
        "group.consumer.session.timeout.ms must be greater than or equal to "
        "group.consumer.min.session.timeout.ms"
    )
    assert error(group_consumer_session_timeout_ms="90000") == (
        "group.consumer.session.timeout.ms must be less than or equal to "
        "group.consumer.max.session.timeout.ms"
    )
    assert error(group_consumer_heartbeat_interval_ms="20000") == (
        "group.consumer.heartbeat.interval.ms must be less than or equal to "
        "group.consumer.max.heartbeat.interval.ms"
    )
    assert error(group_consumer_min_heartbeat_interval_ms="20000") == (
        "group.consumer.max.heartbeat.interval.ms must be greater than or equal to "
        "group.consumer.min.heartbeat.interval.ms"
    )
    assert error(
        group_consumer_heartbeat_interval_ms="50000",
        group_consumer_max_heartbeat_interval_ms="60000",
    ) == (
        "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"
    )
    assert error(group_consumer_migration_policy="sideways") is not None


def test_regex_subscription_matches_whole_topic_names() -> None:
    k = CKit()
    k.topics["tt"] = (uuid.UUID(int=7), 1)
    r = k.hb("m1", 0, topics=(), subscribed_topic_regex="t|u")  # not "tt"
    assert r.error is ErrorCode.NONE
    k.tick(0)  # a new regex is resolved after the heartbeat
    r = k.hb("m1", r.member_epoch)
    assert r.assignment is not None and set(r.assignment) == {T, U}
    k.topics["u2"] = (uuid.UUID(int=8), 1)
    r = k.hb("m1", r.member_epoch)
    assert r.assignment is None  # "u2" does not match "t|u"
    r = k.hb("m1", r.member_epoch, subscribed_topic_regex="u.*")
    assert r.assignment == {}  # "t|u" is gone, "u.*" not resolved yet: all revoked first
    k.tick(0)
    r = k.hb("m1", r.member_epoch, owned={})
    assert r.assignment is not None and set(r.assignment) == {U, uuid.UUID(int=8)}
    k.topics["u3"] = (uuid.UUID(int=9), 2)  # a new matching topic moves the epoch
    epoch = k.group().group_epoch
    r = k.hb("m1", r.member_epoch)
    assert k.group().group_epoch == epoch + 1
    assert r.assignment is not None and r.assignment[uuid.UUID(int=9)] == frozenset({0, 1})


def test_new_regex_resolved_after_the_heartbeat() -> None:
    """Kafka resolves a regex no member of the group used before apart from the heartbeat
    that brings it: that heartbeat assigns the named topics only, the matched ones follow
    with a new group epoch at the next heartbeat (librdkafka's 0045
    resubscribe_with_regex expects exactly this of a KIP-848 broker)."""
    k = CKit()
    r = k.hb("m1", 0, topics=("u",), subscribed_topic_regex="t")
    assert r.assignment == {U: frozenset({0, 1})}
    epoch = k.group().group_epoch
    assert k.group().resolved == {}
    k.tick(0)
    assert k.group().group_epoch == epoch + 1
    assert k.group().resolved == {"t": frozenset({"t"})}
    r = k.hb("m1", r.member_epoch, owned={U: frozenset({0, 1})})
    assert r.assignment == {U: frozenset({0, 1}), T: frozenset({0, 1, 2, 3})}
    # a second member with the same (resolved) regex gets its share at once
    r2 = k.hb("m2", 0, topics=(), subscribed_topic_regex="t")
    assert r2.error is ErrorCode.NONE and k.group().group_epoch == epoch + 2


def test_group_consumer_max_size() -> None:
    k = CKit(GroupConfig(num_partitions=1, consumer_max_size=2))
    k.hb("m1", 0)
    k.hb("m2", 0)
    r = k.hb("m3", 0)
    assert (r.error, r.error_message) == (
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The consumer group has reached its maximum capacity of 2 members.",
    )
    assert k.hb("m2", 3).error is ErrorCode.NONE  # a member already in is served


def test_classic_join_to_a_consumer_group() -> None:
    """Non-empty: INCONSISTENT_GROUP_PROTOCOL, no member id (Kafka 4.4 with migration
    disabled; else the classic member joins it, test_group_migration_core.py); empty: the
    consumer group goes (tombstones) and a classic group starts."""
    from wirebroker.group import JoinRequest, JoinResult

    def join(member: str) -> JoinResult:
        req = JoinRequest("cg", member, "consumer", (("range", b""),), 10_000)
        (done,) = k.core.join_group(("j", member), k.now, req).completions
        assert isinstance(done.result, JoinResult)
        return done.result

    k = CKit(GroupConfig(num_partitions=1, consumer_migration_policy="disabled"))
    k.hb("m1", 0)
    refused = join("x")
    assert (refused.error, refused.member_id) == (ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    k.hb("m1", -1)
    assert join("").error is ErrorCode.MEMBER_ID_REQUIRED
    assert "cg" not in k.core.state.consumer_groups and k.core.group("cg") is not None
    r = k.hb("m2", 0)  # still empty (a pending member only): a consumer group again
    assert r.error is ErrorCode.NONE and k.core.group("cg") is None
