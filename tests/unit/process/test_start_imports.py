"""A PLAINTEXT broker's start imports only what it uses (docs/benchmarks.md, start-up bullet):
no TLS/SASL modules, no `importlib.metadata` (the crc32c package's `__init__`), no client
command's parser; a SASL or TLS listener still brings its modules in. Each probe runs in a
fresh interpreter, since this test process has imported everything already."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SECURITY_MODULES = (
    "wirebroker.security.client",
    "wirebroker.security.tls",
    "wirebroker.security.sasl_server",
    "wirebroker.security.oauthbearer",
    "wirebroker.net.sasl",
)

PROBE = """
import sys
from wirebroker.broker import Broker
from wirebroker.cli import _parser, config_values
from wirebroker.config import BrokerConfig

argv = ["serve", "--port", "0", "--data-dir", sys.argv[1], *sys.argv[2:]]
args = _parser("serve").parse_args(argv)
broker = Broker(BrokerConfig(config_values(args)))
print(" ".join(sorted(sys.modules)))
"""


def _modules_after_build(data_dir: Path, *argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(data_dir), *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_plaintext_broker_imports_no_security_nor_metadata(tmp_path: Path) -> None:
    modules = _modules_after_build(tmp_path)
    assert "wirebroker.broker" in modules  # the probe did build a broker
    assert not modules & set(SECURITY_MODULES)
    assert "importlib.metadata" not in modules
    assert "crc32c._crc32c" in modules  # the CRC's C extension, without its package
    assert "wirebroker.ctl._output" not in modules


def test_sasl_listener_imports_what_it_needs(tmp_path: Path) -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="a" password="p" user_a="p";'
    )
    modules = _modules_after_build(
        tmp_path,
        "--override",
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "--override",
        "sasl.enabled.mechanisms=PLAIN",
        "--override",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={jaas}",
    )
    assert {"wirebroker.security.client", "wirebroker.security.sasl_server"} <= modules


def test_crc32c_extension_is_the_package_function() -> None:
    from protocol.crc32c import BACKEND, crc32c

    if BACKEND != "crc32c":
        pytest.skip("the crc32c package is not installed")
    import crc32c as package

    data = bytes(range(256)) * 3
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c(data) == package.crc32c(data)
    assert crc32c(data[100:], crc32c(data[:100])) == crc32c(data)


def test_serve_turns_the_collector_back_on_when_the_start_fails(tmp_path: Path) -> None:
    """The collector is off while the broker is built (cli.serve); a start that fails (here:
    a data directory that is a file) returns with it on again."""
    import gc

    from wirebroker.cli import serve
    from wirebroker.config import BrokerConfig

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    assert gc.isenabled()
    assert serve(BrokerConfig({"log.dirs": str(not_a_dir), "listeners": "PLAINTEXT://:0"})) == 1
    assert gc.isenabled()
