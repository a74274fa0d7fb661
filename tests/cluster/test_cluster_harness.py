"""The harness's own pieces that need no cluster: reading replicas' segment files."""

from __future__ import annotations

from pathlib import Path

import pytest
from _cluster import segment_batches, wait_until

from protocol.records import build_batch
from wirebroker.coordination.zk_server import ZooKeeperServer


def _segment(directory: Path, base: int, batches: list[tuple[int, int]]) -> bytes:
    """A segment file `<base>.log` of batches (base offset, record count); its bytes."""
    data = b"".join(
        build_batch([(None, b"x")] * n, base_offset=off, base_timestamp=1) for off, n in batches
    )
    (directory / f"{base:020d}.log").write_bytes(data)
    return data


def test_segment_batches_reads_segments_in_offset_order_up_to_the_mark(tmp_path: Path) -> None:
    _segment(tmp_path, 5, [(5, 2), (7, 3)])
    first = _segment(tmp_path, 0, [(0, 5)])
    got = segment_batches(tmp_path, 10)
    assert [(b, last) for b, last, _ in got] == [(0, 4), (5, 6), (7, 9)]
    assert got[0][2] == first
    assert [b for b, _, _ in segment_batches(tmp_path, 7)] == [0, 5]
    assert segment_batches(tmp_path, 0) == []


def test_segment_batches_rejects_a_mark_inside_a_batch(tmp_path: Path) -> None:
    _segment(tmp_path, 0, [(0, 5)])
    with pytest.raises(AssertionError, match="straddles"):
        segment_batches(tmp_path, 3)


def test_segment_batches_stops_at_a_torn_tail(tmp_path: Path) -> None:
    data = _segment(tmp_path, 0, [(0, 2), (2, 2)])
    (tmp_path / f"{0:020d}.log").write_bytes(data[:-7])  # a live log mid-append
    assert [b for b, _, _ in segment_batches(tmp_path, 100)] == [0]


def test_wait_until_returns_the_value_or_names_what_it_waited_for() -> None:
    calls = iter([0, None, 7])
    assert wait_until(lambda: next(calls), 5, "seven") == 7
    with pytest.raises(AssertionError, match="the impossible; last: 0"):
        wait_until(lambda: 0, 0.1, "the impossible")


def test_zookeeper_readers_follow_kafkas_layout(zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    """The harness's readers against znodes written by hand in Kafka's layout (no broker)."""
    from _cluster import ClusterProcesses

    cluster = ClusterProcesses(zookeeper.connect_string, tmp_path, brokers=0)
    try:
        cluster.connect_zookeeper()
        zk = cluster.zk
        assert cluster.registered() == set() and cluster.controller_or_none() is None
        zk.create("/brokers/ids/1", b"{}", makepath=True, ephemeral=True)
        zk.create("/brokers/ids/2", b"{}", ephemeral=True)
        zk.create("/controller", b'{"version":1,"brokerid":2,"timestamp":"1"}', ephemeral=True)
        zk.create("/controller_epoch", b"7")
        state = b'{"version":1,"leader":1,"leader_epoch":3,"isr":[1,2],"controller_epoch":7}'
        zk.create("/brokers/topics/t/partitions/0/state", state, makepath=True)
        zk.set("/brokers/topics/t", b'{"version":3,"partitions":{"0":[1,2]},"topic_id":"x"}')
        assert cluster.registered() == {1, 2}
        assert (cluster.controller(), cluster.controller_epoch()) == (2, 7)
        assert cluster.leader("t", 0) == 1 and cluster.isr("t", 0) == [1, 2]
        assert cluster.topic_assignment("t") == {0: [1, 2]}
        assert cluster.partition_state("t", 1) is None
        zk.set("/brokers/topics/t/partitions/0/state", state.replace(b'"leader":1', b'"leader":2'))
        moved = cluster.wait_leader_moved("t", 0, old=1, timeout=5)
        assert moved["leader"] == 2 and moved["zk_version"] == 1
    finally:
        cluster.close()
    # the chroot kept the test's znodes away from the root
    from kazoo.client import KazooClient

    root = KazooClient(hosts=zookeeper.connect_string)
    root.start(timeout=15)
    try:
        assert not root.exists("/controller") and root.exists(cluster.chroot)
    finally:
        root.stop()
        root.close()
