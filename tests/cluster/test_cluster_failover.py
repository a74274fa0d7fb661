"""Failover on a real cluster: kill -9 of a leader, of the controller, SIGTERM of a leader.

Each test starts ZooKeeper-registered brokers with a 4 s ZooKeeper session (a kill -9 is seen
once the session expires) and checks what clients and the logs show afterwards.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from typing import Any

import _wire
from _clients import read_to_end
from _cluster import ClusterProcesses, wait_until
from _streams import ConfluentProducerStream

from protocol.records import build_batch

TOPIC = "acked"
NOT_LEADER_OR_FOLLOWER = 6


def _check_exactly_once(stream: ConfluentProducerStream, records: dict[int, list[Any]]) -> None:
    consumed = Counter(r.value for recs in records.values() for r in recs)
    acked = stream.acked_values()
    missing = sorted(acked - set(consumed))
    assert not missing, (
        f"{len(missing)} of {len(acked)} acknowledged records are not readable after the "
        f"failover, e.g. {missing[:5]}"
    )
    twice = sorted(v for v, n in consumed.items() if n > 1)
    assert not twice, (
        f"{len(twice)} records are in the log more than once despite idempotence, e.g. {twice[:5]}"
    )
    for p, recs in records.items():
        values = [r.value for r in recs]
        assert values == sorted(values), (
            f"partition {p}: records out of the order they were produced in (idempotent "
            f"producer, one partition): first inversion near "
            f"{next(a for a, b in itertools.pairwise(values) if a > b)!r}"
        )


def test_acks_all_survives_kill9_of_the_leader(cluster: ClusterProcesses) -> None:
    cluster.create_topic(
        TOPIC, partitions=2, replication_factor=3, configs={"min.insync.replicas": "2"}
    )
    stream = ConfluentProducerStream(cluster.bootstrap, TOPIC, 2, idempotent=True).start()
    try:
        stream.wait_acked(200, partition=0)
        victim = cluster.leader(TOPIC, 0)
        before = cluster.partition_state(TOPIC, 0)
        assert before is not None
        killed_at = time.monotonic()
        cluster.kill9(victim)

        state = cluster.wait_leader_moved(TOPIC, 0, victim)
        assert state["leader_epoch"] > before["leader_epoch"], (
            f"the new leader {state['leader']} took over with leader epoch "
            f"{state['leader_epoch']}, not above the old {before['leader_epoch']}"
        )
        assert state["leader"] in before["isr"], (
            f"new leader {state['leader']} was not in the ISR {before['isr']} before the kill"
        )
        stream.wait_acked(200, since=killed_at, partition=0, timeout=40)
    finally:
        stream.stop()
    assert not stream.errors, (
        f"{len(stream.errors)} records failed (acks=all, retries, idempotent): {stream.errors[:5]}"
    )

    cluster.restart(victim)
    cluster.wait_full_isr(TOPIC, 2)
    records = read_to_end(cluster.bootstrap, TOPIC, [0, 1], timeout=60)
    _check_exactly_once(stream, records)
    for p in (0, 1):
        hw = cluster.assert_replicas_equal(TOPIC, p, [0, 1, 2])
        assert hw == len(records[p]), (
            f"partition {p}: high watermark {hw}, but {len(records[p])} records read"
        )


def test_kill9_of_the_controller_elects_a_new_one_with_a_higher_epoch(
    cluster: ClusterProcesses,
) -> None:
    old = cluster.controller()
    epoch = cluster.controller_epoch()
    cluster.kill9(old)

    new = wait_until(
        lambda: (c := cluster.controller_or_none()) is not None and c != old and (c,),
        30,
        f"a controller other than the killed broker {old}",
    )[0]
    assert new in cluster.live(), f"/controller names broker {new}, which is not running"
    new_epoch = cluster.controller_epoch()
    assert new_epoch > epoch, f"/controller_epoch went from {epoch} to {new_epoch} (must grow)"

    # the new controller does a controller's work: a topic created now gets leaders
    cluster.create_topic("after-controller", partitions=2, replication_factor=2)
    for p in (0, 1):
        leader = cluster.leader("after-controller", p)
        assert leader != old, f"partition {p} led by the dead broker {old}"
        code, _ = _wire.produce(cluster.address(leader), "after-controller", p, [b"x"])
        assert code == 0, f"produce to the new topic's partition {p} at {leader}: error {code}"


def test_sigterm_moves_leadership_before_the_broker_exits(cluster: ClusterProcesses) -> None:
    cluster.create_topic(
        TOPIC, partitions=2, replication_factor=3, configs={"min.insync.replicas": "2"}
    )
    victim = cluster.leader(TOPIC, 0)
    led = [p for p in (0, 1) if cluster.leader(TOPIC, p) == victim]

    # ZooKeeper delivers a client's watch events in the order of the changes: the leader
    # change of each partition the victim led must come before its /brokers/ids znode goes
    events: list[tuple[str, Any]] = []
    lock = threading.Lock()

    def on_state(p: int) -> Any:
        def cb(data: bytes | None, _stat: Any) -> None:
            if data:
                import json

                with lock:
                    events.append((f"leader-{p}", json.loads(data)["leader"]))

        return cb

    for p in led:
        cluster.zk.DataWatch(f"/brokers/topics/{TOPIC}/partitions/{p}/state", on_state(p))

    def on_ids(children: list[str]) -> None:
        with lock:
            events.append(("ids", {int(c) for c in children}))

    cluster.zk.ChildrenWatch("/brokers/ids", on_ids)

    stream = ConfluentProducerStream(cluster.bootstrap, TOPIC, 2, idempotent=True).start()
    try:
        stream.wait_acked(100, partition=0)
        term_at = time.monotonic()
        cluster.sigterm(victim)
        code = cluster.wait_exit(victim, timeout=30)
        exited_at = time.monotonic()
        assert code == 0, f"broker {victim} exited with {code} after SIGTERM"
        stream.wait_acked(100, since=exited_at, partition=0, timeout=30)
    finally:
        stream.stop()
    assert not stream.errors, f"records failed across the controlled shutdown: {stream.errors[:5]}"

    wait_until(
        lambda: any(kind == "ids" and victim not in ids for kind, ids in list(events)),
        15,
        f"the /brokers/ids watch to report broker {victim} gone",
    )
    with lock:
        seen = list(events)
    gone = next(i for i, (kind, ids) in enumerate(seen) if kind == "ids" and victim not in ids)
    for p in led:
        moved = [
            i
            for i, (kind, leader) in enumerate(seen)
            if kind == f"leader-{p}" and leader not in (victim, -1)
        ]
        assert moved and moved[0] < gone, (
            f"partition {p}: leadership did not move away from broker {victim} before it left "
            f"/brokers/ids (controlled shutdown); watch events in order: {seen}"
        )

    p0_acks = [a.at for a in stream.acks if a.partition == 0]
    gaps = [b - a for a, b in itertools.pairwise(p0_acks) if b >= term_at]
    worst = max(gaps, default=0.0)
    assert worst < 5.0, f"partition 0 took no acks for {worst:.1f} s across the SIGTERM"


def test_not_leader_answers_name_the_leader(cluster: ClusterProcesses) -> None:
    """KIP-951 on a real cluster: a broker that does not lead a partition answers Produce v10
    and Fetch v16 with the leader and leader epoch it knows and that leader's endpoint, so a
    client moves there without asking for Metadata (right after a leader change, the broker it
    would ask may not have applied the change yet)."""
    topic = "hinted"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    leader = cluster.leader(topic, 0)
    state = cluster.partition_state(topic, 0)
    assert state is not None
    follower = next(i for i in cluster.live() if i != leader)
    address = cluster.address(follower)
    (t,) = _wire.metadata(address, [topic]).topics
    records = build_batch([(None, b"x")])
    produce = {
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }
    fetch = {
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic_id": t.topic_id,
                "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    expected = (leader, state["leader_epoch"])

    def produce_answer() -> Any:
        resp = _wire.request(address, _wire.PRODUCE, 10, produce)
        p = resp.responses[0].partition_responses[0]
        hint = (p.current_leader.leader_id, p.current_leader.leader_epoch)
        return resp if (p.error_code, hint) == (NOT_LEADER_OR_FOLLOWER, expected) else None

    # the follower has applied the partition's state once it names the leader
    resp = wait_until(produce_answer, 15, f"broker {follower} naming leader {expected}")
    host, port = _wire.split_address(cluster.address(leader))
    assert [(n.node_id, n.host, n.port) for n in resp.node_endpoints] == [(leader, host, port)]
    resp = _wire.request(address, 1, 16, fetch)
    p = resp.responses[0].partitions[0]
    assert p.error_code == NOT_LEADER_OR_FOLLOWER
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == expected
    assert [(n.node_id, n.host, n.port) for n in resp.node_endpoints] == [(leader, host, port)]
