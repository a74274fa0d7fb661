"""JoinGroup / SyncGroup / Heartbeat / LeaveGroup flows of classic groups (fake clock)."""

from __future__ import annotations

import pytest
from groupkit import REBALANCE, SESSION, Kit

from protocol.errors import ErrorCode as E
from protocol.group_records import decode_group_metadata_value, decode_key
from wirebroker.group import GroupConfig, GroupState, LeaveMember


def state(k: Kit, group: str = "g") -> GroupState | None:
    g = k.core.group(group)
    return None if g is None else g.state


# -- MEMBER_ID_REQUIRED handshake ---------------------------------------------------------


def test_member_id_required_handshake_v4_plus() -> None:
    k = Kit()
    k1 = k.join(client_id="consumer-1", version=5)
    a1 = k.answer(k1)
    assert a1 is not None
    assert a1["error_code"] == E.MEMBER_ID_REQUIRED
    assert a1["member_id"] == "consumer-1-u1"
    assert a1["protocol_name"] == ""  # v5: non-nullable, null is sent as ""
    assert state(k) is GroupState.EMPTY
    # The new group is persisted as an empty GroupMetadata record (Kafka does the same).
    assert len(k.records) == 1
    rec = k.records[0]
    assert rec.partition == k.core.partition_for("g")
    assert decode_key(rec.key).group == "g"  # type: ignore[union-attr]
    assert rec.value is not None
    empty = decode_group_metadata_value(rec.value)
    assert (empty.generation, empty.protocol_type, empty.protocol) == (0, "", None)
    assert empty.members == ()

    k2 = k.join("consumer-1-u1", client_id="consumer-1", version=5)
    assert k.answer(k2) is None  # parked until the initial rebalance delay (0) elapses
    assert state(k) is GroupState.PREPARING_REBALANCE
    assert k.core.next_deadline() == k.now
    k.tick()
    a2 = k.answer(k2)
    assert a2 is not None
    assert a2["error_code"] == 0
    assert a2["generation_id"] == 1
    assert a2["leader"] == a2["member_id"] == "consumer-1-u1"
    assert a2["protocol_name"] == "range"
    assert a2["members"] == [
        {"member_id": "consumer-1-u1", "group_instance_id": None, "metadata": b"r"}
    ]
    assert state(k) is GroupState.COMPLETING_REBALANCE


def test_join_v3_needs_no_member_id_round_trip() -> None:
    k = Kit()
    key = k.join(version=3)
    assert k.answer(key) is None
    k.tick()
    a = k.answer(key)
    assert a is not None and a["error_code"] == 0 and a["member_id"] == "c-u1"


def test_pending_member_expires_after_session_timeout() -> None:
    k = Kit()
    a = k.answer(k.join())
    assert a is not None
    pending = a["member_id"]
    g = k.core.group("g")
    assert g is not None and g.pending_join_members == {pending}
    k.advance(SESSION)
    assert g.pending_join_members == set()
    late = k.join(pending)
    assert k.error(late) == E.UNKNOWN_MEMBER_ID


def test_join_v0_uses_session_timeout_as_rebalance_timeout() -> None:
    k = Kit()
    k.join(version=0, session=7000, rebalance=99999)
    g = k.core.group("g")
    assert g is not None
    (member,) = g.members.values()
    assert member.rebalance_timeout_ms == 7000


@pytest.mark.parametrize("session", [5999, 1800001])
def test_invalid_session_timeout(session: int) -> None:
    k = Kit()
    assert k.error(k.join(session=session)) == E.INVALID_SESSION_TIMEOUT
    assert k.core.group("g") is None and k.records == []


def test_invalid_group_id_and_unknown_group_with_member_id() -> None:
    k = Kit()
    assert k.error(k.join(group="")) == E.INVALID_GROUP_ID
    key = k.join("someone")
    a = k.answer(key)
    assert a is not None and a["error_code"] == E.UNKNOWN_MEMBER_ID and a["member_id"] == "someone"
    assert k.core.group("g") is None


def test_join_response_protocol_name_null_from_v7() -> None:
    k = Kit()
    a6 = k.answer(k.join("nobody", version=6))
    a7 = k.answer(k.join("nobody", version=7))
    assert a6 is not None and a7 is not None
    assert a6["protocol_name"] == "" and a7["protocol_name"] is None


# -- protocol selection, leader ------------------------------------------------------------


def test_protocol_selection_only_common_protocols_then_votes() -> None:
    k = Kit()
    ids: list[str] = []
    keys: list[str] = []
    for protos in (
        (("roundrobin", b"rr1"), ("range", b"ra1")),
        (("range", b"ra2"), ("roundrobin", b"rr2")),
        (("range", b"ra3"), ("sticky", b"st3")),
    ):
        mid, key = k.join_dynamic(client_id=f"m{len(ids)}", protocols=protos)
        ids.append(mid)
        keys.append(key)
    k.tick()
    answers = [k.answer(key) for key in keys]
    assert all(a is not None and a["protocol_name"] == "range" for a in answers)
    leader_answer = answers[0]
    assert leader_answer is not None and leader_answer["leader"] == ids[0]
    assert [m["metadata"] for m in leader_answer["members"]] == [b"ra1", b"ra2", b"ra3"]
    for follower in answers[1:]:
        assert follower is not None and follower["members"] == []


def test_protocol_vote_majority_wins() -> None:
    k = Kit()
    keys = []
    for i, protos in enumerate(
        (
            (("roundrobin", b""), ("range", b"")),
            (("roundrobin", b""), ("range", b"")),
            (("range", b""), ("roundrobin", b"")),
        )
    ):
        keys.append(k.join_dynamic(client_id=f"m{i}", protocols=protos)[1])
    k.tick()
    assert {k.answer(key)["protocol_name"] for key in keys} == {"roundrobin"}  # type: ignore[index]


def test_inconsistent_group_protocol() -> None:
    k = Kit()
    k.stable_group(1, protocols=(("range", b""),))
    assert k.error(k.join(protocols=(("sticky", b""),))) == E.INCONSISTENT_GROUP_PROTOCOL
    assert k.error(k.join(protocol_type="connect")) == E.INCONSISTENT_GROUP_PROTOCOL
    k2 = Kit()
    assert k2.error(k2.join(protocol_type="")) == E.INCONSISTENT_GROUP_PROTOCOL
    assert k2.error(k2.join(group="h", protocols=())) == E.INCONSISTENT_GROUP_PROTOCOL


def test_group_max_size() -> None:
    k = Kit(GroupConfig(max_group_size=1))
    (first,) = k.stable_group(1)
    a = k.answer(k.join(client_id="extra"))  # refused before a member id is handed out
    assert a is not None and a["error_code"] == E.GROUP_MAX_SIZE_REACHED and a["member_id"] == ""
    assert k.answer(k.join(first)) is not None  # existing members may still rejoin


def test_leader_rejoin_in_stable_forces_rebalance_follower_same_metadata_does_not() -> None:
    k = Kit()
    leader, follower = k.stable_group(2)
    a = k.answer(k.join(follower))
    assert a is not None and a["error_code"] == 0 and a["generation_id"] == 1
    assert a["members"] == [] and state(k) is GroupState.STABLE
    k.join(leader)
    assert state(k) is GroupState.PREPARING_REBALANCE


def test_follower_with_new_metadata_forces_rebalance() -> None:
    k = Kit()
    _, follower = k.stable_group(2)
    k.join(follower, protocols=(("range", b"new topics"),))
    assert state(k) is GroupState.PREPARING_REBALANCE


# -- initial rebalance delay ---------------------------------------------------------------


def test_initial_rebalance_delay_extends_while_members_arrive() -> None:
    k = Kit(GroupConfig(initial_rebalance_delay_ms=3000))
    _, key1 = k.join_dynamic(client_id="a")
    k.advance(1000)
    _, key2 = k.join_dynamic(client_id="b")
    k.advance(1999)  # t=2999
    assert k.answer(key1) is None
    k.advance(1)  # t=3000: a member arrived during the delay -> wait another 3000
    assert k.answer(key1) is None and k.answer(key2) is None
    k.advance(2999)
    assert k.answer(key1) is None
    k.advance(1)  # t=6000
    a1, a2 = k.answer(key1), k.answer(key2)
    assert a1 is not None and a2 is not None
    assert a1["generation_id"] == a2["generation_id"] == 1
    assert len(a1["members"]) == 2


def test_initial_rebalance_delay_bounded_by_rebalance_timeout() -> None:
    k = Kit(GroupConfig(initial_rebalance_delay_ms=3000))
    _, key1 = k.join_dynamic(client_id="a", rebalance=4000)
    for i in range(5):  # keep adding members every second
        k.advance(1000)
        k.join_dynamic(client_id=f"b{i}", rebalance=4000)
    assert k.answer(key1) is not None
    assert k.now <= 6000


# -- rebalance timeout, session expiry -----------------------------------------------------


def test_rebalance_timeout_evicts_members_that_did_not_rejoin() -> None:
    k = Kit()
    leader, follower = k.stable_group(2, rebalance=REBALANCE)
    g = k.core.group("g")
    assert g is not None
    rejoin = k.join(leader, rebalance=20000)  # max(20000, follower's 30000) applies
    for _ in range(5):
        k.advance(5000)
        assert k.heartbeat(follower, 1) == E.REBALANCE_IN_PROGRESS  # keeps the session alive
    assert k.answer(rejoin) is None and follower in g.members
    k.advance(5000)  # 30000 since the rebalance started
    a = k.answer(rejoin)
    assert a is not None and a["error_code"] == 0 and a["generation_id"] == 2
    assert [m["member_id"] for m in a["members"]] == [leader]
    assert follower not in g.members
    assert k.heartbeat(follower, 1) == E.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_member_and_rebalances() -> None:
    k = Kit()
    leader, follower = k.stable_group(2)
    for _ in range(2):
        k.advance(4000)
        assert k.heartbeat(follower, 1) == E.NONE
    g = k.core.group("g")
    assert g is not None and leader in g.members
    k.advance(SESSION - 8000)  # the leader never heartbeated: expired at t=10000
    g = k.core.group("g")
    assert g is not None and leader not in g.members
    assert state(k) is GroupState.PREPARING_REBALANCE
    assert k.heartbeat(follower, 1) == E.REBALANCE_IN_PROGRESS
    a = k.answer(k.join(follower))
    assert a is not None and a["generation_id"] == 2 and a["leader"] == follower


def test_last_member_expiry_empties_group_and_writes_record() -> None:
    k = Kit()
    k.stable_group(1)
    before = len(k.records)
    k.advance(SESSION)
    assert state(k) is GroupState.EMPTY
    new = k.records[before:]
    assert len(new) == 1 and new[0].value is not None
    value = decode_group_metadata_value(new[0].value)
    assert value.generation == 2 and value.members == () and value.protocol is None
    assert value.protocol_type == "consumer" and value.leader is None
    assert value.current_state_timestamp == SESSION


def test_new_member_join_times_out_while_rebalance_waits() -> None:
    k = Kit()
    (leader,) = k.stable_group(1, rebalance=600_000)
    _, new_key = k.join_dynamic(client_id="new", rebalance=600_000)
    assert state(k) is GroupState.PREPARING_REBALANCE
    for _ in range(60):  # the old member keeps heartbeating but never rejoins
        k.advance(5000)
        k.heartbeat(leader, 1)
    a = k.answer(new_key)
    assert a is not None and a["error_code"] == E.UNKNOWN_MEMBER_ID and a["member_id"] == ""
    g = k.core.group("g")
    assert g is not None and list(g.members) == [leader]


# -- SyncGroup -----------------------------------------------------------------------------


def test_sync_parks_followers_until_leader_assigns() -> None:
    k = Kit()
    (l_id, _), (f_id, _) = k.join_dynamic(client_id="l"), k.join_dynamic(client_id="f")
    k.tick()
    fs = k.sync(f_id, 1)
    assert k.answer(fs) is None
    before = len(k.records)
    ls = k.sync(l_id, 1, assignments=[(f_id, b"F-parts")])  # none for the leader itself
    la, fa = k.answer(ls), k.answer(fs)
    assert fa is not None and fa["assignment"] == b"F-parts" and fa["error_code"] == 0
    assert fa["protocol_type"] == "consumer" and fa["protocol_name"] == "range"
    assert la is not None and la["assignment"] == b""
    assert state(k) is GroupState.STABLE
    (rec,) = k.records[before:]
    assert rec.value is not None
    v = decode_group_metadata_value(rec.value)
    assert {m.member_id: m.assignment for m in v.members} == {l_id: b"", f_id: b"F-parts"}
    assert v.generation == 1 and v.leader == l_id and v.protocol == "range"
    # Stable: a repeated SyncGroup answers the stored assignment at once.
    again = k.answer(k.sync(f_id, 1))
    assert again is not None and again["assignment"] == b"F-parts"


def test_sync_errors() -> None:
    k = Kit()
    leader, _ = k.stable_group(2)
    assert k.error(k.sync(leader, 7)) == E.ILLEGAL_GENERATION
    assert k.error(k.sync("stranger", 1)) == E.UNKNOWN_MEMBER_ID
    assert k.error(k.sync(leader, 1, version=5)) == E.INCONSISTENT_GROUP_PROTOCOL  # v5 needs both
    assert (
        k.error(k.sync(leader, 1, version=5, protocol_type="consumer", protocol_name="sticky"))
        == E.INCONSISTENT_GROUP_PROTOCOL
    )
    assert (
        k.error(k.sync(leader, 1, version=5, protocol_type="consumer", protocol_name="range"))
        == E.NONE
    )
    assert k.error(k.sync(leader, 1, group="nope")) == E.UNKNOWN_MEMBER_ID
    assert k.error(k.sync(leader, 1, group="")) == E.INVALID_GROUP_ID


def test_rebalance_during_sync_answers_parked_syncs_with_rebalance_in_progress() -> None:
    k = Kit()
    (_, _), (f_id, _) = k.join_dynamic(client_id="l"), k.join_dynamic(client_id="f")
    k.tick()
    fs = k.sync(f_id, 1)
    k.join_dynamic(client_id="late")
    a = k.answer(fs)
    assert a is not None and a["error_code"] == E.REBALANCE_IN_PROGRESS
    assert a["protocol_name"] is None
    assert state(k) is GroupState.PREPARING_REBALANCE


def test_members_that_never_sync_are_removed_after_rebalance_timeout() -> None:
    k = Kit()
    session = 60_000  # longer than the rebalance timeout: only the sync deadline applies
    (l_id, _), (f_id, _) = (
        k.join_dynamic(client_id="l", session=session),
        k.join_dynamic(client_id="f", session=session),
    )
    k.tick()
    k.sync(l_id, 1)
    assert state(k) is GroupState.STABLE
    k.advance(REBALANCE - 1)
    g = k.core.group("g")
    assert g is not None and f_id in g.members
    k.heartbeat(l_id, 1)
    k.advance(1)
    assert f_id not in g.members and state(k) is GroupState.PREPARING_REBALANCE


def test_superseded_join_is_answered() -> None:
    k = Kit()
    leader, follower = k.stable_group(2)
    first = k.join(leader)
    second = k.join(leader)
    assert k.error(first) == E.UNKNOWN_MEMBER_ID
    assert k.answer(second) is None
    k.join(follower)
    a = k.answer(second)
    assert a is not None and a["error_code"] == 0 and a["generation_id"] == 2


# -- static membership ---------------------------------------------------------------------


def static_group(
    k: Kit,
    version: int = 7,
    session: int = SESSION,
    protocols: tuple[tuple[tuple[str, bytes], ...], ...] = ((("range", b"r"),),) * 2,
) -> tuple[str, str]:
    keys = [
        k.join(
            instance="i1", client_id="a", version=version, session=session, protocols=protocols[0]
        ),
        k.join(
            instance="i2", client_id="b", version=version, session=session, protocols=protocols[1]
        ),
    ]
    k.tick()
    a1, a2 = (k.answer(x) for x in keys)
    assert a1 is not None and a2 is not None
    s1, s2 = a1["member_id"], a2["member_id"]
    assert (s1, s2) == ("i1-u1", "i2-u2")  # static members skip MEMBER_ID_REQUIRED
    k.sync(s1, 1, instance="i1", assignments=[(s1, b"A1"), (s2, b"A2")])
    k.sync(s2, 1, instance="i2")
    assert state(k) is GroupState.STABLE
    return s1, s2


def test_static_member_restart_rejoins_without_rebalance_and_fences_old_id() -> None:
    k = Kit()
    s1, s2 = static_group(k)
    before = len(k.records)
    a = k.answer(k.join(instance="i2", client_id="b"))
    assert a is not None and a["error_code"] == 0
    new_id = a["member_id"]
    assert new_id != s2 and a["generation_id"] == 1 and a["leader"] == s1
    assert state(k) is GroupState.STABLE
    (rec,) = k.records[before:]  # the new member id is persisted
    assert rec.value is not None
    persisted = decode_group_metadata_value(rec.value)
    assert {m.member_id for m in persisted.members} == {s1, new_id}
    assert {m.member_id: m.assignment for m in persisted.members}[new_id] == b"A2"
    # The restarted member keeps its assignment; the old id is fenced everywhere.
    sync = k.answer(k.sync(new_id, 1, instance="i2"))
    assert sync is not None and sync["assignment"] == b"A2"
    assert k.heartbeat(s2, 1, instance="i2") == E.FENCED_INSTANCE_ID
    assert k.heartbeat(new_id, 1, instance="i2") == E.NONE
    assert k.commit({("t", 0): 1}, generation=1, member_id=s2, instance="i2") == {
        ("t", 0): E.FENCED_INSTANCE_ID
    }
    assert k.error(k.join(s2, instance="i2")) == E.FENCED_INSTANCE_ID


def test_static_leader_restart_v9_skips_assignment_pre_v9_sees_old_leader() -> None:
    k = Kit()
    s1, s2 = static_group(k)
    a = k.answer(k.join(instance="i1", client_id="a", version=9))
    assert a is not None and a["skip_assignment"] is True
    assert a["leader"] == a["member_id"] != s1
    assert {m["member_id"] for m in a["members"]} == {a["member_id"], s2}

    k2 = Kit()
    t1, _ = static_group(k2)
    b = k2.answer(k2.join(instance="i1", client_id="a", version=8))
    assert b is not None and b["skip_assignment"] is False
    assert b["leader"] == t1 != b["member_id"] and b["members"] == []


def test_static_rejoin_with_new_metadata_same_protocol_does_not_rebalance() -> None:
    k = Kit()
    static_group(k)
    a = k.answer(k.join(instance="i2", client_id="b", protocols=(("range", b"changed"),)))
    assert a is not None and a["error_code"] == 0
    assert state(k) is GroupState.STABLE  # Kafka only checks the selected protocol
    g = k.core.group("g")
    assert g is not None and g.members[a["member_id"]].metadata("range") == b"changed"


def test_static_rejoin_that_changes_the_selected_protocol_rebalances() -> None:
    k = Kit()
    both = (("range", b""), ("roundrobin", b""))
    rr_first = (("roundrobin", b""), ("range", b""))
    static_group(k, protocols=(both, rr_first))  # 1 vote each: the first voted wins
    g = k.core.group("g")
    assert g is not None and g.protocol_name == "range"
    k.join(instance="i1", client_id="a", protocols=rr_first)  # now 2 votes for roundrobin
    assert state(k) is GroupState.PREPARING_REBALANCE


def test_duplicate_static_instance_fences_the_parked_one() -> None:
    k = Kit()
    first = k.join(instance="i1")
    second = k.join(instance="i1")
    a = k.answer(first)
    assert a is not None and a["error_code"] == E.FENCED_INSTANCE_ID
    k.tick()
    b = k.answer(second)
    assert b is not None and b["error_code"] == 0 and b["member_id"] == "i1-u2"


def test_static_members_survive_rebalance_timeout_dynamic_ones_do_not() -> None:
    k = Kit()
    session = 60_000  # sessions outlive the rebalance timeout
    keys = [k.join(instance="i1", session=session), k.join(instance="i2", session=session)]
    dyn, dyn_key = k.join_dynamic(client_id="d", session=session)
    k.tick()
    s1, s2 = (k.answer(x)["member_id"] for x in keys)  # type: ignore[index]
    assert k.error(dyn_key) == E.NONE
    for m in (s1, s2, dyn):
        k.sync(m, 1)
    assert state(k) is GroupState.STABLE
    rejoin = k.join(s1, instance="i1", session=session)
    k.advance(REBALANCE - 1)
    assert k.answer(rejoin) is None
    k.advance(1)
    g = k.core.group("g")
    assert g is not None
    a = k.answer(rejoin)
    assert a is not None and a["error_code"] == 0 and a["generation_id"] == 2
    assert s2 in g.members  # static: kept although it did not rejoin
    assert dyn not in g.members  # dynamic: evicted


def test_leave_by_group_instance_id_removes_static_member() -> None:
    k = Kit()
    _, s2 = static_group(k)
    r = k.leave(members=[LeaveMember("", "i2"), LeaveMember("", "nope")])
    assert [m["error_code"] for m in r["members"]] == [0, E.UNKNOWN_MEMBER_ID]
    g = k.core.group("g")
    assert g is not None and s2 not in g.members and "i2" not in g.static_members


# -- LeaveGroup ----------------------------------------------------------------------------


def test_batched_leave() -> None:
    k = Kit()
    a, b, c = k.stable_group(3)
    r = k.leave(
        members=[LeaveMember(a), LeaveMember(b, "wrong-instance"), LeaveMember("x"), LeaveMember(c)]
    )
    assert r["error_code"] == 0
    assert [(m["member_id"], m["error_code"]) for m in r["members"]] == [
        (a, 0),
        (b, E.UNKNOWN_MEMBER_ID),
        ("x", E.UNKNOWN_MEMBER_ID),
        (c, 0),
    ]
    g = k.core.group("g")
    assert g is not None and list(g.members) == [b]
    assert state(k) is GroupState.PREPARING_REBALANCE


def test_last_members_leaving_empties_the_group() -> None:
    k = Kit()
    a, b = k.stable_group(2)
    before = len(k.records)
    k.leave(members=[LeaveMember(a), LeaveMember(b)])
    assert state(k) is GroupState.EMPTY
    assert len(k.records) == before + 1


def test_leave_v0_to_v2_single_member_top_level_error() -> None:
    k = Kit()
    (a,) = k.stable_group(1)
    assert k.leave("ghost", version=1) == {"throttle_time_ms": 0, "error_code": E.UNKNOWN_MEMBER_ID}
    assert k.leave(a, version=0) == {"throttle_time_ms": 0, "error_code": 0}
    assert k.leave("x", version=2, group="unknown")["error_code"] == E.UNKNOWN_MEMBER_ID


def test_leave_answers_parked_join_and_pending_members() -> None:
    k = Kit()
    a, _ = k.stable_group(2)
    parked = k.join(a)
    r = k.leave(members=[LeaveMember(a)])
    assert r["members"][0]["error_code"] == 0
    assert k.error(parked) == E.UNKNOWN_MEMBER_ID
    pending = k.answer(k.join(client_id="p"))
    assert pending is not None
    r = k.leave(members=[LeaveMember(pending["member_id"])])
    assert r["members"][0]["error_code"] == 0
    g = k.core.group("g")
    assert g is not None and not g.pending_join_members


def test_heartbeat_errors() -> None:
    k = Kit()
    (a,) = k.stable_group(1)
    assert k.heartbeat(a, 2) == E.ILLEGAL_GENERATION
    assert k.heartbeat("nobody", 1) == E.UNKNOWN_MEMBER_ID
    assert k.heartbeat(a, 1, group="") == E.INVALID_GROUP_ID
    assert k.heartbeat(a, 1, instance="i9") == E.UNKNOWN_MEMBER_ID


def test_superseded_sync_is_answered() -> None:
    k = Kit()
    (l_id, _), (f_id, _) = k.join_dynamic(client_id="l"), k.join_dynamic(client_id="f")
    k.tick()
    first = k.sync(f_id, 1)
    second = k.sync(f_id, 1)
    assert k.error(first) == E.REBALANCE_IN_PROGRESS and k.answer(second) is None
    k.sync(l_id, 1, assignments=[(f_id, b"mine")])
    a = k.answer(second)
    assert a is not None and a["assignment"] == b"mine"


def test_leader_failing_to_sync_sends_followers_back_to_join() -> None:
    k = Kit()
    session = 60_000
    (l_id, _), (f_id, _) = (
        k.join_dynamic(client_id="l", session=session),
        k.join_dynamic(client_id="f", session=session),
    )
    k.tick()
    parked = k.sync(f_id, 1)
    k.advance(REBALANCE)  # the leader never sends its SyncGroup
    assert k.error(parked) == E.REBALANCE_IN_PROGRESS
    g = k.core.group("g")
    assert g is not None and l_id not in g.members and f_id in g.members
    assert g.state is GroupState.PREPARING_REBALANCE
