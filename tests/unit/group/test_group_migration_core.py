"""KIP-848 online migration in the pure core (wirebroker/group/consumer/migration.py and
classic_members.py): upgrade of a classic group by a ConsumerGroupHeartbeat, classic members
inside a consumer group, downgrade when the last consumer-protocol member goes, the policy,
and the records replayed by a later load. The clock is the kit's (no sleeps)."""

from __future__ import annotations

import uuid
from typing import Any

from protocol import consumer_group_records as cr
from protocol.errors import ErrorCode
from protocol.group_records import GroupMetadataKey, decode_key
from tests.unit.group.groupkit import Kit, subscription
from wirebroker.group import GroupConfig, GroupCoordinatorCore, LeaveMember
from wirebroker.group.consumer.messages import (
    ConsumerHeartbeatRequest,
    ConsumerHeartbeatResult,
    TopicResolver,
)
from wirebroker.group.consumer.migration import decode_assignment, encode_assignment
from wirebroker.group.consumer.model import ConsumerGroup

T = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
TOPICS = {"t": (T, 4)}
SUB = subscription("t")


def resolver() -> TopicResolver:
    names = {tid: n for n, (tid, _) in TOPICS.items()}
    return TopicResolver(TOPICS.get, names.get, lambda: list(TOPICS))


def kit(**config: Any) -> Kit:
    k = Kit(GroupConfig(num_partitions=1, **config))
    k.core.set_topics(resolver())
    return k


def classic_group(k: Kit, n: int = 2) -> tuple[list[str], int]:
    """A Stable classic group "g" of `n` members (leader first) sharing t's 4 partitions."""
    keys, members = [], []
    for i in range(n):
        first = k.join(client_id=f"c{i}", protocols=(("range", SUB),))
        mid = k.answer(first)["member_id"]  # type: ignore[index]
        keys.append(k.join(mid, client_id=f"c{i}", protocols=(("range", SUB),)))
        members.append(mid)
    k.tick()
    answer = k.answer(keys[0])
    assert answer is not None and answer["error_code"] == 0, answer
    leader, generation = answer["leader"], answer["generation_id"]
    members.sort(key=lambda m: m != leader)
    share = {m: [p for p in range(4) if p % n == i] for i, m in enumerate(members)}
    k.sync(
        leader,
        generation,
        assignments=[(m, encode_assignment({"t": ps}, 0)) for m, ps in share.items()],
    )
    for m in members[1:]:
        k.sync(m, generation)
    return members, generation


def hb(k: Kit, member: str, epoch: int, **kw: Any) -> ConsumerHeartbeatResult:
    if epoch == 0:
        kw.setdefault("rebalance_timeout_ms", 30_000)
        kw.setdefault("subscribed_topic_names", ("t",))
        kw.setdefault("owned", {})
    req = ConsumerHeartbeatRequest(group_id="g", member_id=member, member_epoch=epoch, **kw)
    result = k.core.consumer_group_heartbeat(k.now, req, TOPICS.get, lambda: list(TOPICS))
    k.absorb(result)
    assert result.response is not None
    return result.response


def join_only(k: Kit, member: str, owned: tuple[int, ...] = ()) -> dict[str, Any]:
    """A classic member's JoinGroup (subscription v1 saying what it owns)."""
    from protocol.messages import consumer_protocol_subscription as s

    body = s.schema(1).build(
        {
            "topics": ["t"],
            "user_data": None,
            "owned_partitions": [{"topic": "t", "partitions": list(owned)}] if owned else [],
        }
    )
    key = k.join(member, protocols=(("range", (1).to_bytes(2, "big") + bytes(body)),))
    joined = k.answer(key)
    assert joined is not None
    return joined


def rejoin(k: Kit, member: str, owned: tuple[int, ...] = ()) -> dict[str, Any]:
    """A classic member's JoinGroup then SyncGroup."""
    joined = join_only(k, member, owned)
    if joined["error_code"] != 0:
        return joined
    synced = k.answer(k.sync(member, joined["generation_id"]))
    assert synced is not None
    return {**joined, "sync": synced}


def cgroup(k: Kit) -> ConsumerGroup:
    return k.core.state.consumer_groups["g"]


def assert_no_partition_owned_twice(group: ConsumerGroup) -> None:
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for m in group.members.values():
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    assert (t, p) not in seen, f"{(t, p)} owned by {seen[(t, p)]} and {m}"
                    seen[(t, p)] = m.member_id


def record_types(records: list[Any]) -> list[tuple[str, bool]]:
    out = []
    for r in records:
        ck = cr.decode_consumer_key(r.key)
        if ck is not None:
            out.append((f"cg{ck.record_type}", r.value is None))
        elif isinstance(decode_key(r.key), GroupMetadataKey):
            out.append(("classic", r.value is None))
    return out


# == upgrade ===============================================================================


def test_upgrade_keeps_the_classic_members_and_rebalances() -> None:
    k = kit()
    (m1, m2), generation = classic_group(k)
    k.records.clear()
    r = hb(k, "c1", 0)
    assert r.error is ErrorCode.NONE, r
    assert k.core.group("g") is None
    group = cgroup(k)
    # the classic generation became the epochs; the new member moved the group epoch once
    assert (group.group_epoch, group.assignment_epoch) == (generation + 1, generation + 1)
    assert r.member_epoch == generation + 1 and r.assignment == {}  # all still owned
    for mid, ps in ((m1, {0, 2}), (m2, {1, 3})):
        member = group.members[mid]
        assert member.uses_classic and member.classic is not None
        assert member.classic.session_timeout_ms == 10_000
        assert member.subscribed_topic_names == ("t",)
        assert member.member_epoch == generation and dict(member.assigned) == {T: ps}
    types = record_types(k.records)
    # Kafka's order: the classic tombstone, then the consumer group's records
    assert types[0] == ("classic", True)
    assert types[1:9] == [
        ("cg5", False),
        ("cg5", False),
        ("cg3", False),
        ("cg7", False),
        ("cg7", False),
        ("cg6", False),
        ("cg8", False),
        ("cg8", False),
    ]
    assert_no_partition_owned_twice(group)
    listed = {g["group_id"]: g for g in k.list_groups()["groups"]}
    assert listed["g"]["group_type"] == "consumer"


def test_classic_members_rejoin_and_the_new_member_gets_its_share() -> None:
    k = kit()
    (m1, m2), generation = classic_group(k)
    hb(k, "c1", 0)
    epoch = cgroup(k).group_epoch
    assert k.heartbeat(m1, generation) is ErrorCode.REBALANCE_IN_PROGRESS
    assert k.heartbeat(m1, generation + 5) is ErrorCode.ILLEGAL_GENERATION
    # m1 rejoins owning nothing (eager): it moves to the new epoch at once
    first = rejoin(k, m1)
    assert first["error_code"] == 0 and first["generation_id"] == epoch
    assert first["protocol_name"] == "range" and first["leader"] == ""
    got1 = decode_assignment(first["sync"]["assignment"])
    assert_no_partition_owned_twice(cgroup(k))
    # m2 rejoins saying it still owns what it had: it must revoke first (old generation)
    second = rejoin(k, m2, owned=(1, 3))
    target2 = cgroup(k).target[m2]
    if {1, 3} - target2.get(T, frozenset()):
        assert second["generation_id"] == generation
        assert k.heartbeat(m2, generation) is ErrorCode.REBALANCE_IN_PROGRESS
        kept = decode_assignment(second["sync"]["assignment"]).get("t", frozenset())
        second = rejoin(k, m2, owned=tuple(sorted(kept)))
    assert second["generation_id"] == epoch
    assert k.heartbeat(m2, epoch) is ErrorCode.NONE
    r = hb(k, "c1", epoch)
    group = cgroup(k)
    assert_no_partition_owned_twice(group)
    got2 = decode_assignment(second["sync"]["assignment"]).get("t", frozenset())
    owned = set(got1.get("t", ())) | set(got2) | set((r.assignment or {}).get(T, ()))
    assert owned == {0, 1, 2, 3}
    assert str(group.group_state()) == "Stable"
    described = k.core.consumer_group_describe(["g"])[0]
    assert described.state == "Stable" and len(described.members) == 3
    assert {m.member_id: m.classic for m in described.members} == {
        m1: True,
        m2: True,
        "c1": False,
    }
    from wirebroker.handlers.consumer_group_describe import describe_response

    wire = describe_response([described], lambda tid: "t")
    types = {m["member_id"]: m["member_type"] for m in wire["groups"][0]["members"]}
    assert types == {m1: 0, m2: 0, "c1": 1}


def test_upgrade_refused() -> None:
    """The policy, another protocol type, a subscription that does not decode, an assignment
    with user data (a custom assignor): GROUP_ID_NOT_FOUND with Kafka 4.4's texts, and the
    classic group stays."""

    def refused(k: Kit, why: str) -> None:
        r = hb(k, "c1", 0)
        assert (r.error, r.error_message) == (
            ErrorCode.GROUP_ID_NOT_FOUND,
            f"Cannot upgrade classic group g to consumer group {why}",
        )
        assert k.core.group("g") is not None and "g" not in k.core.state.consumer_groups

    for policy in ("disabled", "downgrade"):
        k = kit(consumer_migration_policy=policy)
        classic_group(k)
        refused(k, "because online upgrade is disabled.")
    k = kit()
    key = k.join(protocol_type="connect", protocols=(("v1", b"x"),), version=3)
    k.tick()
    assert k.error(key) is ErrorCode.NONE
    refused(k, "because the group does not use the consumer embedded protocol.")
    k = kit(consumer_max_size=1)
    classic_group(k)
    refused(k, "because the group size exceeds the consumer group maximum size.")
    k = kit()
    key = k.join(protocols=(("range", b"\x00\x00\x00"),), version=3)
    k.tick()
    refused(k, "because the embedded consumer protocol is malformed.")
    r = hb(k, "c1", 3)  # not a join: no upgrade
    assert (r.error, r.error_message) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group g is not a consumer group.",
    )
    k = kit()
    key = k.join(protocols=(("custom", SUB),), version=3)
    k.tick()
    (answer,) = [a for a in k.answers.values() if a.get("leader")]
    with_user_data = encode_assignment({"t": [0]}, 0)[:-4] + b"\x00\x00\x00\x01x"
    k.sync(
        answer["member_id"],
        answer["generation_id"],
        assignments=[(answer["member_id"], with_user_data)],
    )
    refused(
        k,
        "because an unsupported custom assignor is in use. Please refer to the documentation "
        "or switch to a default assignor before re-attempting the upgrade.",
    )


def test_upgrade_answers_parked_requests_rebalance_in_progress() -> None:
    k = kit()
    (m1, _), _ = classic_group(k)
    parked = k.join(m1, protocols=(("range", SUB),))  # the leader rejoins: PreparingRebalance
    assert k.answer(parked) is None
    assert hb(k, "c1", 0).error is ErrorCode.NONE
    assert k.error(parked) is ErrorCode.REBALANCE_IN_PROGRESS


# == classic members of a consumer group ===================================================


def test_a_classic_consumer_joins_a_consumer_group() -> None:
    k = kit()
    hb(k, "c1", 0)
    epoch = cgroup(k).group_epoch
    first = k.join(protocols=(("range", SUB),))
    assert k.error(first) is ErrorCode.MEMBER_ID_REQUIRED
    mid = k.answer(first)["member_id"]  # type: ignore[index]
    joined = rejoin(k, mid)
    assert joined["error_code"] == 0 and joined["generation_id"] == epoch + 1
    group = cgroup(k)
    assert group.members[mid].uses_classic
    # the consumer member revokes, then the classic member is told to rejoin for the rest
    c1 = hb(k, "c1", epoch, owned={T: frozenset(range(4))})
    hb(k, "c1", c1.member_epoch, owned=c1.assignment)
    assert k.heartbeat(mid, epoch + 1) is ErrorCode.REBALANCE_IN_PROGRESS
    again = rejoin(k, mid)
    assert decode_assignment(again["sync"]["assignment"])["t"]
    assert_no_partition_owned_twice(cgroup(k))
    # a wrong protocol type, or no protocol in common with the other classic members
    bad = k.join(mid, protocol_type="connect", protocols=(("range", SUB),))
    assert k.error(bad) is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other = k.join("x", protocols=(("roundrobin", SUB),))
    assert k.error(other) is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    # SyncGroup / Heartbeat of a member the group does not know
    assert k.error(k.sync("nobody", 1)) is ErrorCode.UNKNOWN_MEMBER_ID
    assert k.heartbeat("nobody", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert k.heartbeat("c1", cgroup(k).members["c1"].member_epoch) is ErrorCode.UNKNOWN_MEMBER_ID
    # OffsetCommit: the generation is the member epoch (ILLEGAL_GENERATION otherwise)
    ok = k.commit({("t", 0): 5}, generation=again["generation_id"], member_id=mid)
    assert ok == {("t", 0): ErrorCode.NONE}
    stale = k.commit({("t", 0): 5}, generation=again["generation_id"] - 1, member_id=mid)
    assert stale == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    # LeaveGroup removes it; the group epoch moves
    before = cgroup(k).group_epoch
    left = k.leave(mid)
    assert left["error_code"] == 0
    assert mid not in cgroup(k).members and cgroup(k).group_epoch == before + 1


def test_classic_member_timeouts() -> None:
    """Its own session timeout fences a silent classic member; so does a JoinGroup answered
    without a SyncGroup within its rebalance timeout."""
    k = kit()
    hb(k, "c1", 0)
    mid = k.answer(k.join(protocols=(("range", SUB),)))["member_id"]  # type: ignore[index]
    rejoin(k, mid)
    for _ in range(5):
        k.advance(5_000)
        hb(k, "c1", cgroup(k).members["c1"].member_epoch)
    assert mid not in cgroup(k).members  # 10 s session, no heartbeat
    mid = k.answer(k.join(protocols=(("range", SUB),)))["member_id"]  # type: ignore[index]
    k.join(mid, protocols=(("range", SUB),), rebalance=8_000)
    k.advance(8_000)
    assert mid not in cgroup(k).members


# == downgrade =============================================================================


def test_downgrade_when_the_last_consumer_member_leaves() -> None:
    k = kit()
    (m1, m2), _ = classic_group(k)
    hb(k, "c1", 0)
    epoch = cgroup(k).group_epoch
    k.records.clear()
    assert hb(k, "c1", -1).error is ErrorCode.NONE
    assert "g" not in k.core.state.consumer_groups
    classic = k.core.group("g")
    assert classic is not None and str(classic.state) == "PreparingRebalance"
    assert classic.generation_id == epoch and classic.protocol_name == "range"
    assert set(classic.members) == {m1, m2} and classic.leader_id in (m1, m2)
    types = record_types(k.records)
    assert types[-1] == ("classic", False) and ("cg3", True) in types
    assert all(tomb for name, tomb in types[:-1])
    # the classic members rejoin and the classic protocol takes over
    assert k.heartbeat(m1, classic.generation_id) is ErrorCode.REBALANCE_IN_PROGRESS
    keys = [k.join(m, protocols=(("range", SUB),)) for m in (m1, m2)]
    answers = [k.answer(key) for key in keys]
    assert all(a is not None and a["error_code"] == 0 for a in answers)
    assert str(classic.state) == "CompletingRebalance"
    assert classic.generation_id == epoch + 1
    listed = {g["group_id"]: g for g in k.list_groups()["groups"]}
    assert listed["g"]["group_type"] == "classic"


def test_downgrade_carries_the_target_assignment_and_respects_the_policy() -> None:
    k = kit()
    (m1, m2), _ = classic_group(k)
    hb(k, "c1", 0)
    targets = {m: cgroup(k).target[m].get(T, frozenset()) for m in (m1, m2)}
    hb(k, "c1", -1)
    classic = k.core.group("g")
    assert classic is not None
    # each member's assignment is its target as it was (Kafka's ClassicGroup.fromConsumerGroup:
    # c1's partitions are nobody's until the rebalance that follows)
    for m in (m1, m2):
        assert decode_assignment(classic.members[m].assignment).get("t", frozenset()) == targets[m]
    k = kit(consumer_migration_policy="upgrade")
    (m1, m2), _ = classic_group(k)
    hb(k, "c1", 0)
    hb(k, "c1", -1)
    assert set(cgroup(k).members) == {m1, m2}  # stays a consumer group of classic members
    assert k.core.group("g") is None


def keep_alive(k: Kit, member: str) -> None:
    """A classic member's heartbeat, rejoining when it is told to (what a client does)."""
    m = cgroup(k).members[member]
    if k.heartbeat(member, m.member_epoch) is ErrorCode.REBALANCE_IN_PROGRESS:
        owned = tuple(sorted(m.assigned.get(T, frozenset())))
        rejoin(k, member, owned=owned)


def test_session_expiry_of_the_consumer_member_downgrades_too() -> None:
    k = kit()
    (m1, m2), _ = classic_group(k)
    hb(k, "c1", 0)
    for _ in range(8):  # the classic members heartbeat, c1 stays silent (45 s session)
        for m in (m1, m2):
            keep_alive(k, m)
        assert_no_partition_owned_twice(cgroup(k))
        k.advance(5_000)
    assert "g" in k.core.state.consumer_groups
    for m in (m1, m2):
        keep_alive(k, m)
    k.advance(5_000)
    classic = k.core.group("g")
    assert classic is not None and set(classic.members) == {m1, m2}
    assert str(classic.state) == "PreparingRebalance"


# == records and load ======================================================================


def load(records: list[Any]) -> GroupCoordinatorCore:
    core = GroupCoordinatorCore(GroupConfig(num_partitions=1))
    core.set_topics(resolver())
    core.begin_loading()
    for r in records:
        core.replay(r.key, r.value)
    core.complete_loading(0)
    return core


def test_records_replay_the_upgraded_group_after_a_load() -> None:
    k = kit()
    (m1, m2), generation = classic_group(k)
    hb(k, "c1", 0)
    joined = rejoin(k, m1)
    core = load(k.records)
    assert core.group("g") is None
    group = core.state.consumer_groups["g"]
    before = cgroup(k)
    assert (group.group_epoch, group.assignment_epoch) == (
        before.group_epoch,
        before.assignment_epoch,
    )
    for mid, m in before.members.items():
        loaded = group.members[mid]
        assert loaded.classic == m.classic
        assert (loaded.member_epoch, dict(loaded.assigned)) == (m.member_epoch, dict(m.assigned))
    # the loaded classic member is served (its generation is its epoch)
    from wirebroker.group import HeartbeatRequest

    r = core.heartbeat(0, HeartbeatRequest("g", joined["generation_id"], m1))
    assert r.response is ErrorCode.NONE
    r = core.heartbeat(0, HeartbeatRequest("g", generation, m2))
    assert r.response is ErrorCode.REBALANCE_IN_PROGRESS


def test_records_replay_a_downgraded_group_as_classic() -> None:
    k = kit()
    (m1, m2), _ = classic_group(k)
    hb(k, "c1", 0)
    hb(k, "c1", -1)
    core = load(k.records)
    assert "g" not in core.state.consumer_groups
    classic = core.group("g")
    assert classic is not None and set(classic.members) == {m1, m2}


def test_regular_expression_records() -> None:
    k = kit()
    r = hb(k, "c1", 0, subscribed_topic_names=None, subscribed_topic_regex="t.*")
    assert r.error is ErrorCode.NONE
    k.tick()  # a new regex is resolved after the heartbeat (as Kafka, apart from it)
    regex = [
        x
        for x in k.records
        if (cr.decode_consumer_key(x.key) or cr.ConsumerKey(0, "")).record_type == 16
    ]
    assert len(regex) == 1 and regex[0].value is not None
    assert cr.decode_regular_expression(regex[0].value).topics == ("t",)
    core = load(k.records)
    assert core.state.consumer_groups["g"].resolved == {"t.*": frozenset({"t"})}
    hb(k, "c1", -1)
    last = [x for x in k.records if cr.decode_consumer_key(x.key) == cr.ConsumerKey(16, "g", "t.*")]
    assert last[-1].value is None  # no member uses it any more: a tombstone
    assert "t.*" not in load(k.records).state.consumer_groups.get("g", ConsumerGroup("g")).resolved


def test_leave_group_of_unknown_members_in_a_consumer_group() -> None:
    k = kit()
    hb(k, "c1", 0)
    answer = k.leave(members=[LeaveMember("zz"), LeaveMember("", "inst")], version=3)
    assert [m["error_code"] for m in answer["members"]] == [
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]


# == mixed membership, as clients behave ===================================================


class _Sim:
    """Consumer-protocol and classic (eager or cooperative) members driven as their clients
    drive them; `held` is what each client believes it owns."""

    def __init__(self, seed: int) -> None:
        import random

        self.rng = random.Random(seed)
        self.k = kit(consumer_migration_policy="upgrade")
        self.held: dict[str, set[int]] = {}
        self.kind: dict[str, str] = {}
        self.gen: dict[str, int] = {}
        self.syncing: set[str] = set()
        self.n = 0

    def check(self) -> None:
        seen: dict[int, str] = {}
        for name, parts in self.held.items():
            for p in parts:
                assert p not in seen, f"{p} held by {seen[p]} and {name}: {self.held}"
                seen[p] = name

    def add(self, kind: str) -> None:
        self.n += 1
        name = f"{kind[:3]}{self.n}"
        self.kind[name], self.held[name] = kind, set()
        if kind == "consumer":
            r = hb(self.k, name, 0)
            assert r.error is ErrorCode.NONE, r
            self.gen[name] = r.member_epoch
            self.held[name] = set((r.assignment or {}).get(T, ()))
        else:
            self.rejoin(name)

    def rejoin(self, name: str) -> None:
        """JoinGroup only: its SyncGroup is a later step, so others act in between."""
        owned = tuple(sorted(self.held[name])) if self.kind[name] == "cooperative" else ()
        if self.kind[name] == "eager":
            self.held[name] = set()  # an eager client revokes everything before it joins
        joined = join_only(self.k, name, owned)
        assert joined["error_code"] == 0, joined
        self.gen[name] = joined["generation_id"]
        self.syncing.add(name)

    def step(self, name: str) -> None:
        if self.kind[name] == "consumer":
            r = hb(self.k, name, self.gen[name], owned={T: frozenset(self.held[name])})
            assert r.error is ErrorCode.NONE, r
            self.gen[name] = r.member_epoch
            if r.assignment is not None:
                self.held[name] = set(r.assignment.get(T, ()))
        elif name in self.syncing:
            self.syncing.discard(name)
            sync = self.k.answer(self.k.sync(name, self.gen[name]))
            assert sync is not None
            if sync["error_code"] == 0:
                self.held[name] = set(decode_assignment(sync["assignment"]).get("t", ()))
        elif self.k.heartbeat(name, self.gen[name]) is ErrorCode.REBALANCE_IN_PROGRESS:
            self.rejoin(name)

    def leave(self, name: str) -> None:
        if self.kind[name] == "consumer":
            hb(self.k, name, -1)
        else:
            self.k.leave(name)
        del self.held[name], self.kind[name], self.gen[name]
        self.syncing.discard(name)


def test_mixed_members_never_hold_a_partition_twice() -> None:
    for seed in range(25):
        sim = _Sim(seed)
        sim.add("consumer")
        for _ in range(60):
            roll = sim.rng.random()
            names = sorted(sim.held)
            if roll < 0.1 and len(names) < 5:
                sim.add(sim.rng.choice(["consumer", "eager", "cooperative"]))
            elif roll < 0.15 and len(names) > 1:
                sim.leave(sim.rng.choice(names))
            else:
                sim.step(sim.rng.choice(names))
            sim.check()
        for _ in range(8):  # quiet: everyone heartbeats until the group is stable
            for name in sorted(sim.held):
                sim.step(name)
                sim.check()
        assert set().union(*sim.held.values()) == {0, 1, 2, 3}, (seed, sim.held)
        assert str(cgroup(sim.k).group_state()) == "Stable", seed


def test_a_restarted_static_classic_member_takes_its_place() -> None:
    """A static classic member rejoining with no member id (a restart) replaces its instance's
    member: a new member id, the same partitions, no rebalance (the group epoch stays)."""
    k = kit()
    hb(k, "c1", 0)
    key = k.join(protocols=(("range", SUB),), instance="i1")
    first = k.answer(key)
    assert first is not None and first["error_code"] == 0, first
    old = first["member_id"]
    c1 = hb(k, "c1", cgroup(k).members["c1"].member_epoch, owned={T: frozenset(range(4))})
    hb(k, "c1", c1.member_epoch, owned=c1.assignment)
    keep_alive(k, old)
    keep_alive(k, old)
    before = dict(cgroup(k).members[old].assigned)
    epoch = cgroup(k).group_epoch
    again = k.answer(k.join(protocols=(("range", SUB),), instance="i1"))
    assert again is not None and again["error_code"] == 0, again
    new = again["member_id"]
    assert new != old and old not in cgroup(k).members
    assert dict(cgroup(k).members[new].assigned) == before
    assert cgroup(k).group_epoch == epoch
    assert k.heartbeat(old, again["generation_id"], instance="i1") is (ErrorCode.FENCED_INSTANCE_ID)
    stale = k.join(old, protocols=(("range", SUB),), instance="i1")
    assert k.error(stale) is ErrorCode.FENCED_INSTANCE_ID


def _static_consumer_member(k: Kit) -> int:
    """A consumer-protocol member "c1" of instance "i1" holding t's 4 partitions: its epoch."""
    first = hb(k, "c1", 0, instance_id="i1")
    settled = hb(k, "c1", first.member_epoch, owned={T: frozenset(range(4))})
    assert dict(cgroup(k).members["c1"].assigned) == {T: frozenset(range(4))}
    return settled.member_epoch


def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades() -> None:
    """Kafka's validateOnlineDowngradeWithReplacedMember: the JoinGroup is answered as in the
    consumer group (new member id, its epoch as generation), the group becomes a classic
    group holding the joining member with the replaced member's assignment, and SyncGroup
    gives it those partitions."""
    k = kit()
    epoch = _static_consumer_member(k)
    k.records.clear()
    joined = k.answer(k.join(protocols=(("range", SUB),), instance="i1"))
    assert joined is not None and joined["error_code"] == 0, joined
    new = joined["member_id"]
    assert new != "c1" and joined["generation_id"] == epoch
    assert (joined["protocol_type"], joined["protocol_name"]) == ("consumer", "range")
    assert "g" not in k.core.state.consumer_groups
    classic = k.core.group("g")
    assert classic is not None and set(classic.members) == {new}
    assert (str(classic.state), classic.generation_id) == ("Stable", epoch)
    assert record_types(k.records)[-1] == ("classic", False)
    synced = k.answer(k.sync(new, epoch, instance="i1"))
    assert synced is not None and synced["error_code"] == 0, synced
    assert decode_assignment(synced["assignment"]) == {"t": frozenset(range(4))}
    assert k.heartbeat(new, epoch, instance="i1") is ErrorCode.NONE
    assert hb(k, "c1", epoch).error is not ErrorCode.NONE  # the replaced member is gone


def test_no_downgrade_at_a_static_replacement_when_not_allowed() -> None:
    """Not the last consumer-protocol member, or the policy allows no downgrade: the group
    stays a consumer group with the joining member in the replaced member's place."""
    k = kit()
    _static_consumer_member(k)
    hb(k, "c2", 0)  # another consumer-protocol member
    joined = k.answer(k.join(protocols=(("range", SUB),), instance="i1"))
    assert joined is not None and joined["error_code"] == 0, joined
    assert "g" in k.core.state.consumer_groups
    k = kit(consumer_migration_policy="upgrade")
    _static_consumer_member(k)
    joined = k.answer(k.join(protocols=(("range", SUB),), instance="i1"))
    assert joined is not None and joined["error_code"] == 0, joined
    assert set(cgroup(k).members) == {joined["member_id"]}


def test_a_downgrade_at_a_join_with_a_stale_assignment_rebalances() -> None:
    """Kafka 4.4: a join that moves the group epoch (another subscription) downgrades to a
    classic group that rebalances at once."""
    k = kit()
    TOPICS["u"] = (uuid.UUID(int=0xC3), 1)
    try:
        _static_consumer_member(k)
        joined = k.answer(k.join(protocols=(("range", subscription("t", "u")),), instance="i1"))
        assert joined is not None and joined["error_code"] == 0, joined
        classic = k.core.group("g")
        assert classic is not None and str(classic.state) == "PreparingRebalance"
        assert set(classic.members) == {joined["member_id"]}
    finally:
        del TOPICS["u"]
