"""A leader whose ZooKeeper session expires answers its parked acks=all requests at once.

Issue 13's harness once measured 9.1 s of unavailability for a session expiry of a leader (4 s
in other runs). This pins the broker side: an acks=all Produce parked in the purgatory of a
leader (its followers not fetching) is answered NOT_LEADER_OR_FOLLOWER as soon as the session
is lost (`ClusterMember._session_lost` -> `stop_replica` -> the hw listeners wake the
waiters), not when its timeout_ms or an ISR shrink ends the wait. Three real brokers over the
in-memory ZooKeeper (tests/integration/_memory_cluster.py).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))

from _memory_cluster import LAG_MS, Cluster, eventually, start_cluster

from protocol.errors import ErrorCode

TOPIC = "zombie"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path)
        yield c
        for node in c.running():
            node.scope.cancel()
        nursery.cancel_scope.cancel()


async def test_parked_acks_all_produce_fails_fast_when_the_leader_session_expires(
    cluster: Cluster,
) -> None:
    controller, _ = await cluster.controller()
    old = next(n for n in range(3) if n != controller)
    others = [n for n in range(3) if n != old]
    code = await cluster.create_topic(
        controller, TOPIC, 1, assignment={0: [old, *others]}, configs={"min.insync.replicas": "2"}
    )
    assert code == ErrorCode.NONE

    async def led() -> bool:
        state, _ = await cluster.state(TOPIC, 0)
        return state.leader == old and len(state.isr) == 3

    await eventually(led, "the topic led by the future zombie, full ISR")
    assert (await cluster.produce(old, TOPIC, 0, [b"first"]))[0] == ErrorCode.NONE
    # the followers stop fetching: the next acks=all produce parks in the purgatory
    for f in others:
        fetchers = cluster.nodes[f].broker.fetchers
        assert fetchers is not None
        fetchers.unfollow(TOPIC, 0)
    part = cluster.nodes[old].part(TOPIC, 0)
    leo = part.log_end_offset
    answer: list[tuple[int, float]] = []

    async def parked() -> None:
        code, _ = await cluster.produce(old, TOPIC, 0, [b"parked"], timeout_ms=20_000)
        answer.append((code, trio.current_time()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(parked)
        await eventually(lambda: part.log_end_offset > leo, "the parked append")
        assert not answer
        expired_at = trio.current_time()
        cluster.expire(old)
        await eventually(lambda: bool(answer), "the parked produce answered", timeout=10)
    code, at = answer[0]
    took = at - expired_at
    assert code == ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode(code).name
    # well before an ISR shrink (replica.lag.time.max.ms) could have ended the wait
    assert took < LAG_MS / 1000 / 2, f"answered {took:.2f} s after the session expired"
