"""The CLI's client commands against a 3-broker cluster (real processes over ZooKeeper):
`topic create -r 3` places three replicas, `topic describe` shows them with the ISR and the
leaders, `cluster info` lists the three brokers and the controller ZooKeeper elected, and a
group's offsets round-trip through the coordinator that owns it."""

from __future__ import annotations

import json

from _cluster import ClusterProcesses
from cli_process import run_cli

cli = run_cli


def cli_json(*argv: str, stdin: str | None = None) -> object:
    done = cli(*argv, "--format", "json", stdin=stdin)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_describe_shows_replicas_and_isr_on_three_brokers(cluster: ClusterProcesses) -> None:
    b = ("-b", cluster.bootstrap)
    created = cli_json("topic", "create", "replicated", "-p", "2", "-r", "3", *b)
    assert created == [{"topic": "replicated", "ok": True, "error": None}]
    cluster.wait_topic("replicated", 2, replicas=3)

    [doc] = cli_json("topic", "describe", "replicated", *b)
    assert len(doc["partitions"]) == 2
    for p in doc["partitions"]:
        assert sorted(p["replicas"]) == [0, 1, 2]
        assert sorted(p["isr"]) == [0, 1, 2]
        assert p["leader"] == cluster.leader("replicated", p["partition"])
        assert (p["earliest"], p["latest"]) == (0, 0)

    info = cli_json("cluster", "info", *b)
    assert [broker["id"] for broker in info["brokers"]] == [0, 1, 2]
    assert info["controller"] == cluster.controller()

    done = cli("produce", "replicated", "-p", "1", *b, stdin="a\nb\nc\n")
    assert done.returncode == 0, done.stderr
    done = cli("consume", "replicated", "-g", "g", "--from-beginning", "-n", "3", *b)
    assert done.returncode == 0 and done.stdout.split() == ["a", "b", "c"], done.stderr
    [group] = cli_json("group", "describe", "g", *b)
    assert [(o["partition"], o["committed"], o["lag"]) for o in group["offsets"]] == [(1, 3, 0)]
