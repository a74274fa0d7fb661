"""`wirebroker cluster`, run as a user runs it.

The first test starts the real thing (ZooKeeper + 3 brokers), produces and consumes through
the bootstrap servers it prints, and stops it with SIGINT (Ctrl-C): every child process must be
gone and the temporary directory removed. The others run the launcher with a stand-in broker
(`_stub_broker.py`, through `_stub_cluster.py`), no ZooKeeper, to check its process handling:
an unexpected exit is reported and the rest keeps running, a broker that dies before it is ready
fails the start with its log, a broker that ignores SIGTERM is killed after --stop-timeout, and
a --data-dir is kept.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import IO

from _cluster import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
STUB_CLUSTER = str(Path(__file__).resolve().parent / "_stub_cluster.py")
READY = "wirebroker cluster ready: "


class Launcher:
    """The launcher as a subprocess; stdout lines on a queue (reader thread), stderr kept."""

    def __init__(self, args: list[str], tmp: Path, env: dict[str, str] | None = None) -> None:
        self.tmp = tmp / "tmpdir"
        self.tmp.mkdir()
        full_env = dict(os.environ)
        full_env.update(env or {})
        full_env["TMPDIR"] = str(self.tmp)
        full_env["PYTHONPATH"] = str(REPO_ROOT)
        self.stderr_path = tmp / "launcher.stderr"
        self._stderr = self.stderr_path.open("w")
        self.proc = subprocess.Popen(
            args,
            cwd=REPO_ROOT,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.out: list[str] = []
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.out.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text()

    def wait_line(self, prefix: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            assert left > 0, (
                f"no line starting {prefix!r} within {timeout} s; stdout: {self.out}; "
                f"stderr:\n{self.stderr()}"
            )
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            assert line is not None, (
                f"the launcher exited ({self.proc.poll()}) before printing {prefix!r}; "
                f"stdout: {self.out}; stderr:\n{self.stderr()}"
            )
            if line.startswith(prefix):
                return line.strip()

    def children(self) -> set[int]:
        """Pids whose parent is the launcher (its brokers and ZooKeeper's JVM)."""
        out = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("PPid:") and int(line.split()[1]) == self.proc.pid:
                    out.add(int(entry.name))
        return out

    def stop(self, signum: int = signal.SIGINT, timeout: float = 60) -> int:
        self.proc.send_signal(signum)
        try:
            return self.proc.wait(timeout)
        finally:
            self.close()

    def close(self) -> None:
        if self._stderr.closed:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self._reader.join(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


def _parse_ready(line: str) -> tuple[str, str]:
    # wirebroker cluster ready: bootstrap H:P,H:P,H:P zookeeper H:P
    words = line[len(READY) :].split()
    assert words[0] == "bootstrap" and words[2] == "zookeeper", f"ready line: {line!r}"
    return words[1], words[3]


def _admin_url(line: str) -> str:
    # broker I ready on H:P (pid PID, admin http://H:P/, data DIR, log FILE)
    match = re.search(r", admin (http://\S+/),", line)
    assert match, f"no admin address in {line!r}"
    return match.group(1)


def test_wirebroker_cluster_serves_clients_and_stops_cleanly_on_ctrl_c(tmp_path: Path) -> None:
    launcher = Launcher(
        [
            sys.executable,
            "-m",
            "wirebroker",
            "cluster",
            "--brokers",
            "3",
            "--admin",
            "--override",
            "zookeeper.session.timeout.ms=6000",
        ],
        tmp_path,
    )
    try:
        line = launcher.wait_line(READY, timeout=60)
        bootstrap, zookeeper = _parse_ready(line)
        brokers = bootstrap.split(",")
        assert len(brokers) == 3, f"3 brokers in {line!r}"
        per_broker = [ln for ln in launcher.out if ln.startswith("broker ")]
        assert len(per_broker) == 3, f"one line per broker before the ready line: {launcher.out}"
        children = launcher.children()
        assert len(children) >= 4, f"3 brokers + ZooKeeper as children, found pids {children}"

        _produce_and_consume_30(bootstrap)
        # --admin: each ready line names the broker's admin listener, which serves its metrics
        # (every broker holds a replica of each of the 3 partitions: 10 records each)
        for node, line in enumerate(per_broker):
            url = _admin_url(line)
            metrics = urllib.request.urlopen(f"{url}metrics", timeout=10).read().decode()
            assert f'node_id="{node}"' in metrics, f"broker {node}'s /metrics at {url}"
            ends = [
                m
                for m in metrics.splitlines()
                if m.startswith("wirebroker_partition_log_end_offset{") and '"via-cli"' in m
            ]
            assert len(ends) == 3, f"broker {node}: {ends}"

        code = launcher.stop(signal.SIGINT, timeout=60)
    finally:
        launcher.close()
    assert code == 0, f"exit code {code} after Ctrl-C; stderr:\n{launcher.stderr()}"
    left = [pid for pid in children if _alive(pid)]
    assert not left, f"processes still running after Ctrl-C: {left}"
    assert not list(launcher.tmp.iterdir()), (
        f"temporary files left behind: {list(launcher.tmp.iterdir())}"
    )
    assert zookeeper.startswith("127.0.0.1:"), f"zookeeper address {zookeeper!r}"


def _produce_and_consume_30(bootstrap: str) -> None:
    """Topic via-cli (3 partitions, 3 replicas), 30 records acks=all, all read back."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        admin.create_topics([NewTopic("via-cli", 3, 3)])
    finally:
        admin.close()
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", retries=20, request_timeout_ms=15_000
    )
    try:
        futures = [producer.send("via-cli", f"m{i}".encode(), partition=i % 3) for i in range(30)]
        for f in futures:
            f.get(timeout=30)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20_000,
    )
    try:
        tps = [TopicPartition("via-cli", p) for p in range(3)]
        consumer.assign(tps)
        got: set[bytes] = set()
        deadline = time.monotonic() + 30
        while len(got) < 30 and time.monotonic() < deadline:
            for recs in consumer.poll(timeout_ms=500).values():
                got.update(r.value for r in recs)
    finally:
        consumer.close()
    assert got == {f"m{i}".encode() for i in range(30)}, f"consumed {sorted(got)}"


def _stub(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Launcher:
    return Launcher([sys.executable, STUB_CLUSTER, "--zookeeper", "stub:1", *args], tmp_path, env)


def test_launcher_reports_an_unexpected_exit_and_keeps_the_rest(tmp_path: Path) -> None:
    launcher = _stub(tmp_path, "--brokers", "3")
    try:
        launcher.wait_line(READY, timeout=30)
        pids = sorted(launcher.children())
        assert len(pids) == 3, f"3 stub brokers, found {pids}"
        os.kill(pids[1], signal.SIGKILL)
        line = launcher.wait_line("wirebroker cluster: broker", timeout=15)
        assert "exited unexpectedly" in line and "SIGKILL" in line, line
        assert _alive(pids[0]) and _alive(pids[2]), "the other brokers must keep running"
        code = launcher.stop(signal.SIGTERM, timeout=30)
    finally:
        launcher.close()
    assert code == 0, f"exit code {code}; stderr:\n{launcher.stderr()}"
    assert not any(_alive(p) for p in pids)
    assert not list(launcher.tmp.iterdir()), "the temporary directory was not removed"


def test_launcher_restarts_a_dead_broker_on_its_port_with_restart_after(tmp_path: Path) -> None:
    launcher = _stub(tmp_path, "--brokers", "3", "--restart-after", "0.2")
    try:
        launcher.wait_line(READY, timeout=30)
        before = {ln.split()[1]: ln.split()[4] for ln in launcher.out if ln.startswith("broker ")}
        pids = sorted(launcher.children())
        assert len(pids) == 3, f"3 stub brokers, found {pids}"
        os.kill(pids[1], signal.SIGKILL)
        line = launcher.wait_line("wirebroker cluster: broker", timeout=15)
        assert "SIGKILL" in line and "restarting it in 0.2 s" in line, line
        node = line.split()[3]
        again = launcher.wait_line(f"broker {node} restarted on ", timeout=15)
        # broker I restarted on HOST:PORT (pid PID)
        assert again.split()[4] == before[node], f"{again!r}: not on its old port {before}"
        new_pid = int(again.rsplit("pid ", 1)[1].rstrip(")").split(",")[0])
        assert new_pid not in pids and _alive(new_pid)
        assert _alive(pids[0]) and _alive(pids[2]), "the other brokers keep running"
        code = launcher.stop(signal.SIGTERM, timeout=30)
    finally:
        launcher.close()
    assert code == 0, f"exit code {code}; stderr:\n{launcher.stderr()}"
    assert not any(_alive(p) for p in [*pids, new_pid])
    assert not list(launcher.tmp.iterdir()), "the temporary directory was not removed"


def test_launcher_fails_when_a_broker_dies_before_it_is_ready(tmp_path: Path) -> None:
    launcher = _stub(tmp_path, "--brokers", "3", env={"STUB_FAIL_NODE": "2"})
    try:
        code = launcher.proc.wait(30)
    finally:
        launcher.close()
    err = launcher.stderr()
    assert code == 1, f"exit code {code}; stderr:\n{err}"
    assert "broker 2 (exit code 3) exited before it was ready" in err, err
    assert "failing on purpose" in err, f"the broker's log tail belongs in the message:\n{err}"
    assert not list(launcher.tmp.iterdir()), "the temporary directory was not removed"


def test_launcher_kills_a_broker_that_ignores_sigterm(tmp_path: Path) -> None:
    launcher = _stub(
        tmp_path, "--brokers", "2", "--stop-timeout", "1", env={"STUB_IGNORE_TERM": "0"}
    )
    try:
        launcher.wait_line(READY, timeout=30)
        pids = launcher.children()
        started = time.monotonic()
        code = launcher.stop(signal.SIGINT, timeout=30)
        took = time.monotonic() - started
    finally:
        launcher.close()
    assert code == 0, f"exit code {code}"
    assert "SIGKILL to broker(s) 0" in launcher.stderr(), launcher.stderr()
    assert took < 10, f"stopping took {took:.1f} s with --stop-timeout 1"
    wait_until(lambda: not any(_alive(p) for p in pids), 10, "every stub broker gone")


def test_launcher_admin_option_gives_each_broker_a_listener_and_prints_it(
    tmp_path: Path,
) -> None:
    launcher = _stub(tmp_path, "--brokers", "2", "--admin")
    try:
        launcher.wait_line(READY, timeout=30)
        per_broker = [ln for ln in launcher.out if ln.startswith("broker ")]
        urls = [_admin_url(line) for line in per_broker]
        # the stub broker serves its admin port only when given `--admin-port 0`
        for url in urls:
            host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
            socket.create_connection((host, int(port)), timeout=5).close()
        code = launcher.stop(signal.SIGINT, timeout=30)
    finally:
        launcher.close()
    assert code == 0
    assert len(urls) == 2 and len(set(urls)) == 2, urls


def test_launcher_keeps_a_given_data_dir_with_the_logs(tmp_path: Path) -> None:
    data = tmp_path / "keep"
    launcher = _stub(tmp_path, "--brokers", "2", "--data-dir", str(data))
    try:
        line = launcher.wait_line(READY, timeout=30)
        code = launcher.stop(signal.SIGINT, timeout=30)
    finally:
        launcher.close()
    assert code == 0
    assert "zookeeper stub:1" in line, line
    for i in range(2):
        assert (data / f"broker-{i}").is_dir(), f"{data}/broker-{i} should be kept"
        log = (data / "logs" / f"broker-{i}.log").read_text()
        assert f"--node-id {i}" in log and "wirebroker ready on" in log, log
