"""A second broker on a live broker's data directory fails at start and touches nothing.

Regression test (issue 11, defect 1): before the `.lock` file, a second `wirebroker serve` on
the same directory started, appended to the same segments and on exit wrote the clean-shutdown
marker over the first broker's data, so records acknowledged by the first broker were lost
after a restart.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from _broker import REPO_ROOT, BrokerProcess
from _clients import read_to_end
from kafka import KafkaProducer

from wirebroker.log.log_manager import CLEAN_SHUTDOWN_FILE

TOPIC = "locked"


def _produce(bootstrap: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=0)
    try:
        for value in values:
            producer.send(TOPIC, value=value, partition=0).get(timeout=10)
    finally:
        producer.close(timeout=5)


def _files(data: Path) -> dict[str, tuple[int, int]]:
    """Every file under `data` (relative path -> (size, mtime_ns)), the lock file aside."""
    out = {}
    for path in data.rglob("*"):
        if path.is_file() and path.name != ".lock":
            st = path.stat()
            out[str(path.relative_to(data))] = (st.st_size, st.st_mtime_ns)
    return out


def test_second_broker_on_a_live_data_dir_exits_before_touching_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = BrokerProcess(data, log_path=tmp_path / "first.log")
    try:
        bootstrap = first.start()
        _produce(bootstrap, [b"first-%d" % i for i in range(5)])
        before = _files(data)

        second = BrokerProcess(data, log_path=tmp_path / "second.log")
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        done = subprocess.run(
            second.command(),
            cwd=REPO_ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode != 0
        assert "wirebroker ready" not in done.stdout
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, done.stderr
        assert str(data) in lines[0] and "in use by another broker" in lines[0]
        assert _files(data) == before  # nothing created, written or removed
        assert not (data / CLEAN_SHUTDOWN_FILE).exists()

        _produce(bootstrap, [b"first-%d" % i for i in range(5, 10)])
        assert first.stop() == 0
        assert (data / ".lock").exists()  # never deleted, as Kafka's
        bootstrap = first.restart()  # the lock was released with the process
        records = read_to_end(bootstrap, TOPIC, [0])[0]
        assert [r.value for r in records] == [b"first-%d" % i for i in range(10)]
    finally:
        first.close()
