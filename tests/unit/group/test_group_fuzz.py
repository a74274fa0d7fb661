"""Random request sequences: the core never crashes, keeps its bookkeeping consistent,
answers every parked request exactly once, and what it persisted replays to the same state."""

from __future__ import annotations

from collections import Counter

from groupkit import Kit
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_group_replay import persisted_view, replayed

from protocol.errors import ErrorCode as E
from wirebroker.group import GroupConfig, GroupState, LeaveMember

CLIENTS = ["a", "b", "c"]
SEEN: Counter[GroupState | None] = Counter()  # states visited (a sanity check on coverage)
PROTOCOL_SETS = [(("range", b"1"),), (("range", b"2"), ("rr", b"2")), (("rr", b"3"),)]

op = st.one_of(
    st.tuples(
        st.just("join"),
        st.sampled_from(CLIENTS),
        st.integers(0, 2),
        st.booleans(),
        st.sampled_from([3, 5, 9]),
    ),
    st.tuples(st.just("sync"), st.sampled_from(CLIENTS)),
    st.tuples(st.just("sync-all")),
    st.tuples(st.just("settle")),
    st.tuples(st.just("heartbeat"), st.sampled_from(CLIENTS)),
    st.tuples(st.just("leave"), st.sampled_from(CLIENTS)),
    st.tuples(st.just("commit"), st.sampled_from(CLIENTS), st.integers(0, 3)),
    st.tuples(st.just("advance"), st.integers(0, 40_000)),
    st.tuples(st.just("advance"), st.integers(0, 2_000)),
    st.tuples(
        st.just("delete"),
    ),
)


def check_invariants(k: Kit) -> None:
    g = k.core.group("g")
    if g is None:
        return
    assert g.num_awaiting_join == sum(m.awaiting_join is not None for m in g.members.values())
    if g.members:
        assert g.leader_id in g.members
    else:
        assert g.state in (GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
    assert set(g.static_members.values()) <= set(g.members)
    assert g.pending_sync_members <= set(g.members)
    expected: Counter[str] = Counter()
    for m in g.members.values():
        expected.update(m.protocol_names())
    assert +g.supported_protocols == expected
    if g.state is not GroupState.COMPLETING_REBALANCE:
        assert all(m.awaiting_sync is None for m in g.members.values())
    if g.state is not GroupState.PREPARING_REBALANCE:
        assert g.num_awaiting_join == 0


def learn(k: Kit, issued: list[str], ids: dict[str, str], gens: dict[str, int]) -> None:
    """Learn member ids and generations from the answers, as a client would."""
    for key in issued:
        a = k.answer(key)
        if a is None or "member_id" not in a or not a["member_id"]:
            continue
        if a["error_code"] in (0, E.MEMBER_ID_REQUIRED):
            for c in CLIENTS:
                if a["member_id"].startswith((f"{c}-", f"i-{c}-")):
                    ids[c] = a["member_id"]
                    if a["error_code"] == 0:
                        gens[c] = a["generation_id"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(op, max_size=40))
def test_random_sequences(ops: list[tuple[object, ...]]) -> None:
    k = Kit(GroupConfig(initial_rebalance_delay_ms=1000))
    ids: dict[str, str] = {}  # client -> last member id the coordinator gave it
    gens: dict[str, int] = {}
    issued: list[str] = []
    for o in ops:
        kind = o[0]
        if kind == "join":
            _, client, proto, static, version = o
            assert isinstance(client, str) and isinstance(proto, int)
            assert isinstance(version, int)
            key = k.join(
                ids.get(client, ""),
                client_id=client,
                protocols=PROTOCOL_SETS[proto],
                instance=f"i-{client}" if static and version >= 5 else None,
                version=version,
            )
            issued.append(key)
        elif kind == "sync":
            client = str(o[1])
            if client in ids:
                issued.append(
                    k.sync(ids[client], gens.get(client, 0), assignments=[(ids[client], b"x")])
                )
        elif kind == "sync-all":
            for client, mid in ids.items():
                issued.append(k.sync(mid, gens.get(client, 0), assignments=[(mid, b"x")]))
        elif kind == "settle":  # every known client (re)joins, time passes, all sync
            for client, mid in ids.items():
                issued.append(k.join(mid, client_id=client))
            k.advance(1000)
            learn(k, issued, ids, gens)
            for client, mid in ids.items():
                issued.append(k.sync(mid, gens.get(client, 0), assignments=[(mid, b"x")]))
        elif kind == "heartbeat":
            client = str(o[1])
            k.heartbeat(ids.get(client, "none"), gens.get(client, -1))
        elif kind == "leave":
            client = str(o[1])
            k.leave(members=[LeaveMember(ids.get(client, "none"))])
        elif kind == "commit":
            client = str(o[1])
            k.commit(
                {("t", int(str(o[2]))): 1},
                generation=gens.get(client, -1),
                member_id=ids.get(client, ""),
            )
        elif kind == "advance":
            k.advance(int(str(o[1])))
        else:
            k.absorb(k.core.delete_groups(k.now, group_ids=["g"]))
        learn(k, issued, ids, gens)
        check_invariants(k)
        g = k.core.group("g")
        SEEN[None if g is None else g.state] += 1
        if g is None or g.state in (GroupState.STABLE, GroupState.EMPTY):
            # At rest: everything in memory that matters is in the records.
            assert persisted_view(replayed(k.records)) == persisted_view(k.core)

    # Liveness: with enough time every parked JoinGroup/SyncGroup gets its answer.
    k.advance(400_000)
    assert all(k.answer(key) is not None for key in issued)
    check_invariants(k)
    # Persistence: once every member is gone, replay gives back groups and offsets.
    k.advance(400_000)  # all sessions expire
    g = k.core.group("g")
    assert g is None or g.state is GroupState.EMPTY
    assert persisted_view(replayed(k.records)) == persisted_view(k.core)
