"""The command line as a user runs it: `python -m wirebroker serve ...` in a subprocess.

Checks the ready line, that the broker answers, that SIGTERM/SIGINT end it with exit code 0
and a clean-shutdown marker, that a server.properties file is honoured (flags win), that
unknown keys only warn and bad values are fatal.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _broker import REPO_ROOT, BrokerProcess
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest

from wirebroker.log.log_manager import CLEAN_SHUTDOWN_FILE

TIMEOUT_S = 10


def call(bootstrap: str, request: Any, correlation_id: int = 1) -> Any:
    """One request on a fresh connection; the decoded response (kafka-python's classes)."""
    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S) as sock:
        request.with_header(correlation_id=correlation_id, client_id="test-server")
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        data = _read_exactly(sock, size)
    response = request.header.get_response_class().decode(data, header=True)
    assert response.header.correlation_id == correlation_id
    return response


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "connection closed by the broker"
        out += chunk
    return bytes(out)


class ConfigFileBroker(BrokerProcess):
    """A broker started with extra command-line arguments (e.g. --config FILE)."""

    def __init__(self, data_dir: Path, args: list[str], **kwargs: Any) -> None:
        super().__init__(data_dir, **kwargs)
        self.args = args

    def command(self, *args: Any, **kwargs: Any) -> list[str]:
        return [sys.executable, "-m", "wirebroker", *self.args]


def test_ready_line_answers_and_sigterm_is_clean(broker: BrokerProcess) -> None:
    ready = [line for line in broker.stdout_lines if line.startswith("wirebroker ready on")]
    assert ready == [f"wirebroker ready on 127.0.0.1:{broker.port}\n"]
    assert broker.port != 9092
    for version in range(5):
        request = (
            ApiVersionsRequest[version](client_software_name="t", client_software_version="1")
            if version >= 3
            else ApiVersionsRequest[version]()
        )
        response = call(broker.bootstrap, request, correlation_id=version + 1)
        assert response.error_code == 0
        keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert keys[18] == (0, 5)
    assert broker.stop() == 0
    assert (broker.data_dir / CLEAN_SHUTDOWN_FILE).exists()
    assert "Traceback" not in broker.log_text()
    assert [line for line in broker.stdout_lines if line.strip()] == ready


def test_sigint_is_a_clean_shutdown_too(broker: BrokerProcess) -> None:
    assert broker.pid is not None
    os.kill(broker.pid, signal.SIGINT)
    proc = broker._proc
    assert proc is not None
    assert proc.wait(timeout=20) == 0
    assert (broker.data_dir / CLEAN_SHUTDOWN_FILE).exists()


def test_restart_on_the_same_data_dir(broker: BrokerProcess) -> None:
    broker.restart()
    assert call(broker.bootstrap, ApiVersionsRequest[0]()).error_code == 0


def test_config_file_is_honoured_and_flags_win(tmp_path: Path) -> None:
    data = tmp_path / "data"
    props = tmp_path / "server.properties"
    props.write_text(
        "# a Kafka-style file\n"
        "listeners=PLAINTEXT://127.0.0.1:9092\n"
        f"log.dirs={tmp_path / 'ignored'}\n"
        "num.partitions=3\n"
        "auto.create.topics.enable=true\n"
        "num.network.threads=3\n"
        "some.unknown.key=1\n"
    )
    proc = ConfigFileBroker(
        data,
        ["serve", "--config", str(props), "--port", "0", "--data-dir", str(data)],
        log_path=tmp_path / "broker.log",
    )
    try:
        bootstrap = proc.start()
        assert proc.port != 9092  # --port beats the file's listeners
        topics = [MetadataRequest.MetadataRequestTopic(name="auto-created")]
        deadline = time.monotonic() + TIMEOUT_S
        while True:  # the creating answer is UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
            response = call(
                bootstrap, MetadataRequest[12](topics=topics, allow_auto_topic_creation=True)
            )
            (topic,) = response.topics
            if topic.error_code == 0 or time.monotonic() > deadline:
                break
        assert topic.error_code == 0
        assert len(topic.partitions) == 3
        assert proc.stop() == 0
        assert (data / CLEAN_SHUTDOWN_FILE).exists()
        assert not (tmp_path / "ignored").exists()  # --data-dir beats log.dirs
        log = proc.log_text()
        warnings = [line for line in log.splitlines() if "unknown config key" in line]
        assert len(warnings) == 2, log
        assert any("some.unknown.key" in w for w in warnings)
        assert any("num.network.threads" in w for w in warnings)
    finally:
        proc.close()


def test_override_and_serve_is_the_default_command(tmp_path: Path) -> None:
    data = tmp_path / "d"
    proc = ConfigFileBroker(
        data,
        ["--port", "0", "--data-dir", str(data), "--override", "num.partitions=2"],
        log_path=tmp_path / "b.log",
    )
    try:
        bootstrap = proc.start()
        assert call(bootstrap, ApiVersionsRequest[0]()).error_code == 0
        assert proc.stop() == 0
    finally:
        proc.close()


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--override", "num.partitions=zero"],
        ["serve", "--override", "no-equals-sign"],
        ["serve", "--override", "listeners=nonsense"],
    ],
)
def test_invalid_configuration_exits_2(tmp_path: Path, args: list[str]) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "wirebroker",
            *args,
            "--port",
            "0",
            "--data-dir",
            str(tmp_path / "d"),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "configuration error" in result.stderr
    assert "wirebroker ready" not in result.stdout


def test_port_in_use_exits_1(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "wirebroker",
                "serve",
                "--port",
                str(port),
                "--data-dir",
                str(tmp_path / "d"),
            ],
            cwd=REPO_ROOT,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1, result.stderr
    assert "cannot start" in result.stderr
    assert "Traceback" not in result.stderr
