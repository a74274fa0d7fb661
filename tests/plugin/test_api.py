"""wirebroker.running() / running_cluster() and the protocol-level helpers, without pytest
fixtures (the API other test runners use)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import wirebroker
from wirebroker.testing import BrokerStartError, KafkaError


@pytest.mark.parametrize("thread", [False, True], ids=["process", "thread"])
def test_running_round_trip_and_cleanup(thread: bool) -> None:
    with wirebroker.running(thread=thread) as broker:
        assert broker.bootstrap.startswith("127.0.0.1:")
        assert (broker.pid is None) == thread
        data = broker.data_dir
        assert broker.create_topic("t", partitions=2) == "t"
        assert broker.produce("t", [b"a", ("k", "b")], partition=1, headers=[("h", "x")]) == [0, 1]
        assert broker.produce("t", ["c"]) == [0]
        got = [(m.partition, m.offset, m.key, m.value) for m in broker.read_to_end("t")]
        assert got == [(0, 0, None, b"c"), (1, 0, None, b"a"), (1, 1, b"k", b"b")]
        assert broker.read_to_end("t")[1].headers == (("h", b"x"),)
        assert broker.end_offsets("t") == {0: 1, 1: 2}
        assert broker.list_topics() == ["t"]
        with pytest.raises(KafkaError, match="TOPIC_ALREADY_EXISTS"):
            broker.create_topic("t")
        broker.create_topic("t", exist_ok=True)
        pid = broker.pid
    assert not data.exists()
    if pid is not None:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_overrides_and_kept_data_dir(tmp_path: Path) -> None:
    with wirebroker.running(overrides={"num.partitions": 3}, data_dir=tmp_path / "d") as broker:
        broker.produce("auto", [b"x"])  # auto-created with num.partitions
        assert broker.end_offsets("auto") == {0: 1, 1: 0, 2: 0}
    assert (tmp_path / "d").is_dir()  # the caller's directory is kept
    with wirebroker.running(data_dir=tmp_path / "d") as broker:  # and reusable
        assert [m.value for m in broker.read_to_end("auto")] == [b"x"]


def test_bad_config_is_a_start_error() -> None:
    with pytest.raises(BrokerStartError, match=r"(?s)exited with code 2.*num\.partitions"):
        wirebroker.running(overrides={"num.partitions": "many"})


def test_import_is_cheap() -> None:
    code = (
        "import sys, wirebroker, wirebroker.pytest_plugin; "
        "heavy = ('trio', 'construct', 'wirebroker.testing', 'kazoo'); "
        "bad = [m for m in heavy if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_running_cluster_replicates() -> None:
    from wirebroker.coordination.zk_server import zookeeper_available

    if not zookeeper_available():
        with pytest.raises(wirebroker.testing.ZooKeeperMissing, match="apt-get install"):
            wirebroker.running_cluster(brokers=3)
        return
    with wirebroker.running_cluster(brokers=3) as cluster:
        assert len(cluster.bootstrap.split(",")) == 3 and len(cluster.pids()) == 3
        cluster.create_topic("r", partitions=2, replication_factor=3)
        with cluster.client() as client:
            meta = client.metadata(["r"])
        assert all(len(p.isr_nodes) == 3 for p in meta.topics[0].partitions)
        assert cluster.produce("r", [b"1", b"2"], partition=1) == [0, 1]
        assert [m.value for m in cluster.read_to_end("r")] == [b"1", b"2"]
    assert cluster.pids() == []


def test_running_cluster_faults_move_the_leader_and_shrink_the_isr() -> None:
    from wirebroker.coordination.zk_server import zookeeper_available

    if not zookeeper_available():
        pytest.skip("needs ZooKeeper and a JRE")
    with wirebroker.running_cluster(brokers=3) as cluster:
        assert sorted(cluster.admin_urls) == [0, 1, 2]
        assert cluster.admin_url == cluster.admin_urls[0]
        cluster.create_topic("f", partitions=1, replication_factor=3)

        def partition() -> Any:
            with cluster.client() as client:
                return client.metadata(["f"]).topics[0].partitions[0]

        before = partition()
        moved = cluster.faults.move_leader("f", 0)
        assert moved["leader"] != before.leader_id
        leader, fault_id = cluster.faults.shrink_isr("f", 0)
        assert leader == moved["leader"]
        deadline = time.monotonic() + 30
        while partition().isr_nodes != [leader]:  # metadata follows ZooKeeper
            assert time.monotonic() < deadline, partition()
        assert [f["kind"] for f in cluster.faults.list()[leader]] == ["shrink_isr"]
        cluster.faults[leader].remove(fault_id)
        while sorted(partition().isr_nodes) != [0, 1, 2]:
            assert time.monotonic() < deadline, partition()
