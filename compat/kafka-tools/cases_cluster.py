"""kafka-leader-election and kafka-reassign-partitions cases: several brokers (the 3-broker
wirebroker cluster; the throttle case also runs on the single-node Kafka, where its
reassignment keeps the replica where it is)."""

from __future__ import annotations

import json
import re

from target import (
    RESOURCE_BROKER,
    Target,
    describe_configs,
    eventually,
    log_dir_sizes,
    stored_bytes,
    wait_until,
)

from compat.scenarios.cluster import Cluster
from compat.scenarios.wire import LATEST, PartitionView, Wire
from protocol.records import RecordSpec


def _cluster(t: Target) -> Cluster:
    assert t.cluster is not None, "needs the wirebroker cluster"
    return t.cluster


def _views(t: Target, topic: str, via: int | None = None) -> dict[int, PartitionView]:
    cluster = _cluster(t) if via is not None else None
    with t.wire() as w:
        return w.partitions(topic, cluster.address(via) if cluster and via is not None else None)


def _start_alone(t: Target, node: int, via: int) -> None:
    """Start broker `node` again (same data dir and port) while another one is still down
    (`Cluster.restart` waits for all of them); wait until broker `via` lists it."""
    cluster = _cluster(t)
    broker = cluster.brokers[node]
    broker.stop()
    broker.start(port=cluster.ports[node])

    def listed() -> bool:
        with Wire(cluster.address(via)) as w:
            return node in w.brokers()

    wait_until(f"broker {node} to be back", listed, timeout=60)


def _create_assigned(t: Target, topic: str, assignment: str, *configs: str) -> None:
    args = ["--bootstrap-server", t.bootstrap, "--create", "--topic", topic]
    args += ["--replica-assignment", assignment]
    for c in configs:
        args += ["--config", c]
    t.tool("kafka-topics", *args).expect(0)
    rf = len(assignment.split(",")[0].split(":"))
    with Wire(t.bootstrap) as w:
        w.wait_topics_ready([topic], min_isr=rf)


def _election(t: Target, kind: str, *target: str) -> str:
    ran = t.tool(
        "kafka-leader-election", "--bootstrap-server", t.bootstrap, "--election-type", kind, *target
    )
    return ran.expect(0).out


def election_preferred(t: Target) -> str:
    cluster = _cluster(t)
    topic = t.topic("elect", 3)
    preferred = _views(t, topic)[0].replicas[0]
    others = [i for i in range(cluster.size) if i != preferred]
    cluster.brokers[preferred].stop()  # SIGTERM: a controlled shutdown moves its leaderships
    wait_until(
        "leadership to move", lambda: _views(t, topic, others[0])[0].leader not in (-1, preferred)
    )
    cluster.restart(preferred)
    with t.wire() as w:
        w.wait_topics_ready([topic])
    moved = {p for p, v in _views(t, topic).items() if v.leader != v.replicas[0]}
    assert 0 in moved, f"partition 0 is led by its preferred replica already: {_views(t, topic)}"
    out = _election(t, "preferred", "--all-topic-partitions")
    m = re.search(r"Successfully completed leader election \(PREFERRED\) for partitions (.*)", out)
    assert m is not None, out
    elected = set(m.group(1).split(", "))
    assert {f"{topic}-{p}" for p in moved} <= elected, (moved, elected)
    views = _views(t, topic)
    assert all(v.leader == v.replicas[0] for v in views.values()), views
    again = _election(t, "preferred", "--topic", topic, "--partition", "0")
    assert f"Valid replica already elected for partitions {topic}-0" in again, again
    return (
        "after its preferred leader came back, --election-type preferred "
        "--all-topic-partitions names the partitions it moved back and Metadata shows every "
        "partition led by its first replica; a second election is not needed"
    )


def election_unclean(t: Target) -> str:
    cluster = _cluster(t)
    topic = t.name("unclean")
    a, b, c = 0, 1, 2
    _create_assigned(t, topic, f"{a}:{b}", "min.insync.replicas=1")
    with t.wire() as w:
        w.produce(topic, 0, [RecordSpec(None, b"both-%d" % i) for i in range(3)])
    cluster.brokers[b].stop()
    wait_until("the ISR to shrink to one", lambda: _views(t, topic, c)[0].isr == (a,))
    with t.wire() as w:
        w.produce(topic, 0, [RecordSpec(None, b"a-only-%d" % i) for i in range(2)])
    cluster.brokers[a].stop()
    wait_until("the partition to go offline", lambda: _views(t, topic, c)[0].leader == -1)
    _start_alone(t, b, c)
    try:
        assert _views(t, topic, c)[0].leader == -1, "a clean election happened without the ISR"
        out = _election(t, "unclean", "--topic", topic, "--partition", "0")
        assert f"Successfully completed leader election (UNCLEAN) for partitions {topic}-0" in out
        wait_until("the out-of-sync replica to lead", lambda: _views(t, topic, c)[0].leader == b)
        with Wire(cluster.address(b)) as w:
            assert [r.value for r in w.read(topic, 0)] == [b"both-%d" % i for i in range(3)]
    finally:
        cluster.restart(a)
    with t.wire() as w:
        w.wait_topics_ready([topic], min_isr=2)
        end = w.list_offset(topic, 0, LATEST)
    assert end == 3, f"the old leader's extra records survived: end offset {end}"
    return (
        "a partition whose only in-sync replica is down stays offline when the other replica "
        "returns; --election-type unclean makes that replica the leader (it serves the three "
        "records it had; the two it never got are gone once the old leader rejoins)"
    )


def _reassign(t: Target, *args: str) -> str:
    ran = t.tool("kafka-reassign-partitions", "--bootstrap-server", t.bootstrap, *args)
    return ran.expect(0).out


def _json_after(out: str, title: str) -> dict:
    lines = out.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(title))
    text = next(line for line in lines[i + 1 :] if line.startswith("{"))
    return dict(json.loads(text))


def _verify_until_done(t: Target, spec: str, topic: str, partitions: list[int]) -> str:
    done = {f"Reassignment of partition {topic}-{p} is completed." for p in partitions}
    last = [""]

    def complete() -> bool:
        last[0] = _reassign(t, "--verify", "--reassignment-json-file", spec)
        return all(line in last[0] for line in done)

    wait_until("the reassignment to complete (--verify)", complete, timeout=90)
    return last[0]


def reassign_move(t: Target) -> str:
    cluster = _cluster(t)
    topic = t.name("move")
    _create_assigned(t, topic, "0:1,1:2")
    with t.wire() as w:
        for p in (0, 1):
            w.produce(topic, p, [RecordSpec(None, b"r%d" % i) for i in range(5)])
    move = t.file("topics.json", json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    out = _reassign(t, "--generate", "--topics-to-move-json-file", move, "--broker-list", "0,1,2")
    current = _json_after(out, "Current partition replica assignment")
    assert {p["partition"]: tuple(p["replicas"]) for p in current["partitions"]} == {
        0: (0, 1),
        1: (1, 2),
    }, current
    proposed = _json_after(out, "Proposed partition reassignment configuration")
    for p in proposed["partitions"]:
        assert len(set(p["replicas"])) == 2 and set(p["replicas"]) <= {0, 1, 2}, p
    target = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [2, 1]}]}
    spec = t.file("reassign.json", json.dumps(target))
    started = _reassign(t, "--execute", "--reassignment-json-file", spec)
    assert f"Successfully started partition reassignment for {topic}-0" in started, started
    _verify_until_done(t, spec, topic, [0])
    view = _views(t, topic)[0]
    assert view.replicas == (2, 1) and set(view.isr) == {1, 2}, view
    with Wire(cluster.bootstrap) as w:
        size = stored_bytes(w, topic, 0)
        wait_until(
            "the new replica to hold the data",
            lambda: log_dir_sizes(w, cluster.address(2), topic).get(0) == size,
        )
        wait_until(
            "the old replica to be removed",
            lambda: 0 not in log_dir_sizes(w, cluster.address(0), topic),
        )
    assert "No partition reassignments found." in _reassign(t, "--list")
    return (
        "--generate shows the current assignment and a valid proposal; --execute moves a "
        "replica to another broker; --verify reports completion; Metadata shows the new "
        "replicas in sync, the new broker holds the same bytes (DescribeLogDirs), the old one "
        "none; --list shows no reassignment left"
    )


def _throttle_configs(t: Target, topic: str) -> tuple[dict[int, tuple[str, str]], str, str]:
    """({broker: (leader.replication.throttled.rate, its source)}, the topic's leader and
    follower throttled replicas). Kafka lists the rate only once it is set: absent is
    ("", "")."""
    key = "leader.replication.throttled.rate"
    with t.wire() as w:
        rates = {  # a broker's own configs are described by that broker (Kafka insists)
            n: describe_configs(w, RESOURCE_BROKER, str(n), address).get(key, ("", ""))
            for n, address in w.brokers().items()
        }
        configs = w.topic_configs(topic)
    return (
        rates,
        configs.get("leader.replication.throttled.replicas") or "",
        configs.get("follower.replication.throttled.replicas") or "",
    )


def reassign_throttle(t: Target) -> str:
    """On the cluster a replica moves from broker 0 to broker 2; on a single node the
    reassignment keeps it in place. Either way --throttle sets the brokers' rates and the
    topic's throttled replicas, and --verify removes them once the reassignment is done."""
    topic = t.name("throttle")
    nodes = t.node_ids()
    if len(nodes) > 1:
        _create_assigned(t, topic, "0:1")
        new = [2, 1]
    else:
        _create_assigned(t, topic, str(nodes[0]))
        new = [nodes[0]]
    with t.wire() as w:
        w.produce(topic, 0, [RecordSpec(None, b"t%d" % i) for i in range(5)])
    target = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": new}]}
    spec = t.file("throttle.json", json.dumps(target))
    out = _reassign(t, "--execute", "--reassignment-json-file", spec, "--throttle", "10000000")
    assert "The inter-broker throttle limit was set to 10000000 B/s" in out, out

    def throttled() -> None:
        rates, leader, _follower = _throttle_configs(t, topic)
        assert set(rates.values()) == {("10000000", "DYNAMIC_BROKER_CONFIG")}, rates
        assert leader and all(re.fullmatch(r"0:\d+", x) for x in leader.split(",")), leader

    eventually(throttled)
    verified = _verify_until_done(t, spec, topic, [0])
    assert "Clearing broker-level throttles" in verified, verified

    def cleared() -> None:
        rates, leader, follower = _throttle_configs(t, topic)
        assert all(source != "DYNAMIC_BROKER_CONFIG" for _, source in rates.values()), rates
        assert not leader and not follower, (leader, follower)

    eventually(cleared)
    return (
        "--execute --throttle sets leader.replication.throttled.rate on every broker and the "
        "topic's throttled replicas (DescribeConfigs); --verify, once complete, removes them"
    )
