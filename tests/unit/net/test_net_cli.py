"""Command-line parsing into config values (no broker is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wirebroker.cli import _parser, config_values, hoist_bootstrap, main
from wirebroker.config import BrokerConfig, ConfigError


def values(*argv: str) -> dict[str, str]:
    return config_values(_parser().parse_args(["serve", *argv]))


def test_no_options_means_kafka_defaults() -> None:
    assert values() == {}
    config = BrokerConfig(values())
    assert config.listeners == [("PLAINTEXT", "127.0.0.1", 9092)]
    assert config.auto_create_topics is True
    assert config.log_dirs == [str(config.raw("log.dir"))]


def test_host_port_and_data_dir(tmp_path: Path) -> None:
    got = values("--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path))
    assert got == {"listeners": "PLAINTEXT://0.0.0.0:0", "log.dirs": str(tmp_path)}


def test_port_alone_keeps_the_default_host() -> None:
    assert values("--port", "19092") == {"listeners": "PLAINTEXT://127.0.0.1:19092"}


def test_ipv6_host_is_bracketed() -> None:
    got = values("--host", "::1", "--port", "1")
    assert got["listeners"] == "PLAINTEXT://[::1]:1"
    assert BrokerConfig(got).listeners == [("PLAINTEXT", "::1", 1)]


def test_config_file_then_overrides_then_flags(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text(
        "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\n"
        "num.partitions=3\n"
        "log.retention.ms = 1000\n"
        "log.dirs=/somewhere\n"
        "process.roles=broker,controller\n"
    )
    got = values(
        "--config",
        str(props),
        "--override",
        "num.partitions=5",
        "--override",
        "log.dirs=/elsewhere",
        "--port",
        "0",
        "--data-dir",
        str(tmp_path / "d"),
    )
    assert got["num.partitions"] == "5"
    assert got["log.retention.ms"] == "1000"
    assert got["log.dirs"] == str(tmp_path / "d")
    assert got["listeners"] == "PLAINTEXT://:0,CONTROLLER://:9093"
    config = BrokerConfig(got)
    assert config.unknown_keys() == ["process.roles"]
    assert config.num_partitions == 5


@pytest.mark.parametrize("item", ["novalue", "=x", ""])
def test_bad_override(item: str) -> None:
    with pytest.raises(ConfigError):
        values("--override", item)


def test_bad_value_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        BrokerConfig(values("--override", "num.partitions=many"))


# -- a bootstrap option before the command (kcat's order) ----------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-b", "h:1", "topic", "list"], ["topic", "list", "-b", "h:1"]),
        (
            ["--bootstrap-server", "h:1", "topic", "list"],
            ["topic", "list", "--bootstrap-server", "h:1"],
        ),
        (["--bootstrap=h:1", "cluster", "info"], ["cluster", "info", "--bootstrap=h:1"]),
        (["-bh:1", "group", "list"], ["group", "list", "-bh:1"]),
        (["-b", "h:1", "produce", "t", "--", "-x"], ["produce", "t", "-b", "h:1", "--", "-x"]),
        # nothing to move, or nothing to move it behind: unchanged
        (["topic", "list", "-b", "h:1"], ["topic", "list", "-b", "h:1"]),
        (["-b", "h:1"], ["-b", "h:1"]),
        (["-b"], ["-b"]),
        ([], []),
    ],
)
def test_hoist_bootstrap(argv: list[str], expected: list[str]) -> None:
    assert hoist_bootstrap(argv) == expected


def test_bootstrap_spellings_parse_to_one_option() -> None:
    for argv in (
        ["topic", "list", "-b", "h:1"],
        ["topic", "list", "--bootstrap", "h:1"],
        ["topic", "list", "--bootstrap-server", "h:1"],
        hoist_bootstrap(["--bootstrap-server", "h:1", "topic", "list"]),
    ):
        assert _parser().parse_args(argv).bootstrap == "h:1", argv


def test_bootstrap_before_serve_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["-b", "h:1", "serve"])
    assert exc.value.code == 2
    assert "unrecognized arguments: -b h:1" in capsys.readouterr().err
