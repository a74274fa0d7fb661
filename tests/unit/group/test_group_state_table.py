"""Every group state x every request, as tabled in wirebroker.group.classic.

Each cell builds a group of two members (leader L, follower F, both subscribed to topic "t")
in the given state, sends one request as F (or as a "simple" committer / a new member) and
checks the answer and the state that follows. "Unknown" is a group id the coordinator has
never seen (a Dead group is never kept)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from groupkit import Kit, subscription

from protocol.errors import ErrorCode as E
from wirebroker.group import TopicPartitions

PROTOCOLS = (("range", subscription("t")),)
PARKED = "parked"
GONE = "gone"
STATES = ["Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Unknown"]


def build(state: str) -> tuple[Kit, dict[str, Any]]:
    k = Kit()
    if state == "Unknown":
        return k, {"member": "ghost", "gen": 1}
    leader, follower = k.stable_group(2, protocols=PROTOCOLS)
    g = k.core.group("g")
    assert g is not None
    gen = g.generation_id
    k.commit({("t", 0): 10, ("other", 0): 20}, generation=gen, member_id=leader)
    if state == "PreparingRebalance":
        k.join(leader, protocols=PROTOCOLS)  # the leader rejoins; F has not yet
    elif state == "CompletingRebalance":
        k.join(leader, protocols=PROTOCOLS)
        k.join(follower, protocols=PROTOCOLS)
        gen = g.generation_id
    elif state == "Empty":
        k.leave(leader)
        k.leave(follower)
    assert str(g.state) == state
    return k, {"member": follower, "gen": gen}


def state_of(k: Kit) -> str:
    g = k.core.group("g")
    return GONE if g is None else str(g.state)


def outcome(k: Kit, key: str) -> object:
    err = k.error(key)
    return PARKED if err is None else err


def do_heartbeat(k: Kit, c: dict[str, Any]) -> object:
    return k.heartbeat(c["member"], c["gen"])


def do_sync(k: Kit, c: dict[str, Any]) -> object:
    key = k.sync(c["member"], c["gen"])
    return outcome(k, key)


def do_join_known(k: Kit, c: dict[str, Any]) -> object:
    key = k.join(c["member"], protocols=PROTOCOLS)
    return outcome(k, key)


def do_join_new(k: Kit, c: dict[str, Any]) -> object:
    key = k.join("", protocols=PROTOCOLS, client_id="newcomer")
    return outcome(k, key)


def do_leave(k: Kit, c: dict[str, Any]) -> object:
    return E(k.leave(c["member"])["members"][0]["error_code"])


def do_commit_member(k: Kit, c: dict[str, Any]) -> object:
    return k.commit({("t", 1): 5}, generation=c["gen"], member_id=c["member"])[("t", 1)]


def do_commit_simple(k: Kit, c: dict[str, Any]) -> object:
    return k.commit({("t", 1): 5})[("t", 1)]


def do_fetch(k: Kit, c: dict[str, Any]) -> object:
    return E(k.fetch({"t": [0]})["error_code"])


def do_delete_offsets(k: Kit, c: dict[str, Any]) -> object:
    r = k.absorb(
        k.core.delete_offsets(k.now, group_id="g", topics=[TopicPartitions("t", [0])])
    ).response
    assert r is not None
    if r.error:
        return E(r.error)
    return E(r.topics[0].partitions[0].error)


def do_delete_group(k: Kit, c: dict[str, Any]) -> object:
    r = k.absorb(k.core.delete_groups(k.now, group_ids=["g"])).response
    assert r is not None
    return E(r.results[0].error)


Request = Callable[[Kit, dict[str, Any]], object]
N, UM, RIP, IG = E.NONE, E.UNKNOWN_MEMBER_ID, E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION
EMPTY, PREP, COMP, STAB = STATES[:4]

# request -> state -> (answer, state afterwards)
TABLE: dict[str, tuple[Request, dict[str, tuple[object, str]]]] = {
    "heartbeat": (
        do_heartbeat,
        {
            EMPTY: (UM, EMPTY),
            PREP: (RIP, PREP),
            COMP: (N, COMP),
            STAB: (N, STAB),
            "Unknown": (UM, GONE),
        },
    ),
    "sync": (
        do_sync,
        {
            EMPTY: (UM, EMPTY),
            PREP: (RIP, PREP),
            COMP: (PARKED, COMP),
            STAB: (N, STAB),
            "Unknown": (UM, GONE),
        },
    ),
    "join known member": (
        do_join_known,
        {
            # Preparing: F was the last to rejoin, so the join phase completes at once.
            EMPTY: (UM, EMPTY),
            PREP: (N, COMP),
            COMP: (N, COMP),
            STAB: (N, STAB),
            "Unknown": (UM, GONE),
        },
    ),
    "join new member (v7)": (
        do_join_new,
        {
            EMPTY: (E.MEMBER_ID_REQUIRED, EMPTY),
            PREP: (E.MEMBER_ID_REQUIRED, PREP),
            COMP: (E.MEMBER_ID_REQUIRED, COMP),
            STAB: (E.MEMBER_ID_REQUIRED, STAB),
            "Unknown": (E.MEMBER_ID_REQUIRED, EMPTY),
        },
    ),
    "leave": (
        do_leave,
        {
            # Preparing: the leader already rejoined, F leaving completes the join phase.
            EMPTY: (UM, EMPTY),
            PREP: (N, COMP),
            COMP: (N, PREP),
            STAB: (N, PREP),
            "Unknown": (UM, GONE),
        },
    ),
    "commit as member": (
        do_commit_member,
        {
            EMPTY: (UM, EMPTY),
            PREP: (N, PREP),
            COMP: (RIP, COMP),
            STAB: (N, STAB),
            "Unknown": (IG, GONE),
        },
    ),
    "commit without membership": (
        do_commit_simple,
        {
            EMPTY: (N, EMPTY),
            PREP: (UM, PREP),
            COMP: (UM, COMP),
            STAB: (UM, STAB),
            "Unknown": (N, EMPTY),
        },
    ),
    "offset fetch": (
        do_fetch,
        {
            EMPTY: (N, EMPTY),
            PREP: (N, PREP),
            COMP: (N, COMP),
            STAB: (N, STAB),
            "Unknown": (N, GONE),
        },
    ),
    "offset delete (subscribed topic)": (
        do_delete_offsets,
        {
            EMPTY: (N, EMPTY),
            PREP: (E.GROUP_SUBSCRIBED_TO_TOPIC, PREP),
            COMP: (E.GROUP_SUBSCRIBED_TO_TOPIC, COMP),
            STAB: (E.GROUP_SUBSCRIBED_TO_TOPIC, STAB),
            "Unknown": (E.GROUP_ID_NOT_FOUND, GONE),
        },
    ),
    "delete group": (
        do_delete_group,
        {
            EMPTY: (N, GONE),
            PREP: (E.NON_EMPTY_GROUP, PREP),
            COMP: (E.NON_EMPTY_GROUP, COMP),
            STAB: (E.NON_EMPTY_GROUP, STAB),
            "Unknown": (E.GROUP_ID_NOT_FOUND, GONE),
        },
    ),
}

CASES = [pytest.param(name, state, id=f"{state}-{name}") for name in TABLE for state in STATES]


@pytest.mark.parametrize(("request_name", "state"), CASES)
def test_state_request_table(request_name: str, state: str) -> None:
    request, expectations = TABLE[request_name]
    expected_answer, expected_state = expectations[state]
    k, ctx = build(state)
    assert request(k, ctx) == expected_answer
    assert state_of(k) == expected_state


def test_table_is_complete() -> None:
    for name, (_, row) in TABLE.items():
        assert set(row) == set(STATES), name


def test_offset_delete_non_consumer_group_is_non_empty() -> None:
    k = Kit()
    k.stable_group(1, protocol_type="connect")
    r = k.core.delete_offsets(k.now, group_id="g", topics=[TopicPartitions("t", [0])]).response
    assert r is not None and r.error == E.NON_EMPTY_GROUP


def test_offset_delete_unsubscribed_topic_of_stable_consumer_group() -> None:
    k = Kit()
    (leader,) = k.stable_group(1, protocols=PROTOCOLS)
    k.commit({("other", 0): 3, ("t", 0): 4}, generation=1, member_id=leader)
    before = len(k.records)
    r = k.absorb(
        k.core.delete_offsets(k.now, group_id="g", topics=[TopicPartitions("other", [0, 1])])
    ).response
    assert r is not None
    assert [p.error for p in r.topics[0].partitions] == [0, 0]
    assert len(k.records) == before + 1  # one tombstone: partition 1 had no offset
    assert k.records[-1].value is None
    assert k.fetched() == {("t", 0): 4}
