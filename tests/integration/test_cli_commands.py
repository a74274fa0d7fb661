"""The client commands of `wirebroker` (wirebroker/ctl) against a real broker subprocess.

Most tests call `wirebroker.cli.main(argv)` in this process (fast: no interpreter start per
command) and read stdout/stderr with capfd; `--format json` output is parsed back. One broker
serves the whole module (each test uses its own topic and group names). The exit-code and
one-line-error contract is also checked end to end through real `python -m wirebroker`
processes (a dead bootstrap, an unknown topic, bad usage).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _broker import REPO_ROOT, BrokerProcess
from cli_process import run_cli

from wirebroker.cli import main

DEAD = "127.0.0.1:1"  # nothing listens on port 1


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("cli-broker")
    proc = BrokerProcess(
        root / "data",
        log_path=root / "broker.log",
        overrides={"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"},
    )
    proc.start()
    try:
        yield proc.bootstrap
    finally:
        proc.close()


@pytest.fixture
def name() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


class Run:
    def __init__(self, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
        self.capfd = capfd
        self.monkeypatch = monkeypatch

    def __call__(self, *argv: str, stdin: bytes | None = None) -> tuple[int, str, str]:
        self.capfd.readouterr()
        if stdin is not None:
            self.monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse: usage errors (2), --help/--version (0)
            code = int(exc.code or 0)
        out, err = self.capfd.readouterr()
        return code, out, err

    def json(self, *argv: str, stdin: bytes | None = None) -> object:
        code, out, err = self(*argv, "--format", "json", stdin=stdin)
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def run(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    return Run(capfd, monkeypatch)


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("wirebroker: error: "), err
    return lines[0]


# -- topic -----------------------------------------------------------------------------------


def test_topic_create_list_describe_delete(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    created = run.json("topic", "create", name, "-p", "3", "-c", "retention.ms=123456", *b)
    assert created == [{"topic": name, "ok": True, "error": None}]

    listed = run.json("topic", "list", *b)
    assert {"topic": name, "partitions": 3, "replication_factor": 1, "internal": False} in listed
    assert not any(t["topic"] == "__consumer_offsets" for t in listed)

    code, out, _ = run("topic", "list", *b)
    assert code == 0 and out.splitlines()[0].split() == ["NAME", "PARTITIONS", "REPLICAS"]
    assert any(line.split()[:3] == [name, "3", "1"] for line in out.splitlines())

    [doc] = run.json("topic", "describe", name, *b)
    assert [p["partition"] for p in doc["partitions"]] == [0, 1, 2]
    for p in doc["partitions"]:
        assert (p["leader"], p["replicas"], p["isr"]) == (0, [0], [0])
        assert (p["earliest"], p["latest"]) == (0, 0)
    assert doc["configs"]["retention.ms"]["value"] == "123456"
    assert doc["configs"]["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert "segment.bytes" not in doc["configs"]  # only what is set, unless --all-configs
    [full] = run.json("topic", "describe", name, "--all-configs", *b)
    assert full["configs"]["segment.bytes"]["source"] == "DEFAULT_CONFIG"

    code, out, _ = run("topic", "describe", name, *b)
    assert code == 0
    assert "PARTITIONS" in out and "CONFIGS" in out and "retention.ms" in out

    # creating it again fails (exit 1) unless --if-not-exists
    code, out, _ = run("topic", "create", name, *b)
    assert code == 1 and "TopicAlreadyExistsError" in out
    assert run.json("topic", "create", name, "--if-not-exists", *b)[0]["ok"] is True

    assert run.json("topic", "delete", name, *b) == [{"topic": name, "ok": True, "error": None}]
    assert not any(t["topic"] == name for t in run.json("topic", "list", *b))


def test_topic_unknown_is_one_line_error(run: Run, bootstrap: str) -> None:
    for argv in (
        ("topic", "describe", "no-such-topic"),
        ("topic", "alter-config", "no-such-topic", "-s", "retention.ms=1"),
        ("topic", "add-partitions", "no-such-topic", "-n", "1"),
    ):
        code, out, err = run(*argv, "-b", bootstrap)
        assert code == 1, argv
        assert one_error_line(err) == "wirebroker: error: unknown topic 'no-such-topic'"
        assert out == ""
    code, out, _ = run("topic", "delete", "no-such-topic", "-b", bootstrap)
    assert code == 1 and "UnknownTopicOrPartitionError" in out
    code, _, _ = run("topic", "delete", "no-such-topic", "--if-exists", "-b", bootstrap)
    assert code == 0


def test_topic_alter_config_and_add_partitions(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    run.json("topic", "create", name, "-p", "1", "-c", "retention.ms=5000", *b)
    changed = run.json(
        "topic", "alter-config", name, "-s", "cleanup.policy=compact", "-d", "retention.ms", *b
    )
    assert changed == {
        "topic": name,
        "set": {"cleanup.policy": "compact"},
        "deleted": ["retention.ms"],
    }
    [doc] = run.json("topic", "describe", name, "--no-offsets", *b)
    assert doc["configs"]["cleanup.policy"]["value"] == "compact"
    assert "retention.ms" not in doc["configs"]

    code, _, err = run("topic", "alter-config", name, "-s", "no.such.config=1", *b)
    assert code == 1 and "no.such.config" in one_error_line(err)

    assert run.json("topic", "add-partitions", name, "-n", "2", *b) == {
        "topic": name,
        "partitions_before": 1,
        "partitions": 3,
    }
    assert run.json("topic", "add-partitions", name, "--total", "4", *b)["partitions"] == 4
    code, _, err = run("topic", "add-partitions", name, "--total", "2", *b)
    assert code == 1 and "has 4 partitions already" in one_error_line(err)
    [doc] = run.json("topic", "describe", name, "--no-configs", *b)
    assert len(doc["partitions"]) == 4


# -- produce / consume -------------------------------------------------------------------------


def test_produce_then_consume_formats(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    run.json("topic", "create", name, "-p", "2", *b)
    code, _, err = run("produce", name, "-p", "0", *b, stdin=b"one\ntwo\nthree\n")
    assert code == 0
    assert "produced 3 records to " + name + " (partition 0: 3)" in err
    summary = run.json(
        "produce", name, "-k", ":", "-H", "origin=cli", "-H", "n=1", "--acks", "1",
        "-z", "gzip", "-p", "1", *b, stdin=b"k1:v1\nk2:v:2\n",
    )  # fmt: skip
    assert summary["produced"] == 2 and summary["failed"] == 0
    assert summary["partitions"] == {"1": 2}

    code, out, err = run("consume", name, "--from-beginning", "-e", *b)
    assert code == 0 and sorted(out.splitlines()) == ["one", "three", "two", "v1", "v:2"]
    assert "consumed 5 records" in err

    code, out, _ = run("consume", name, "-p", "1", "--from-beginning", "-e", "--print-key", *b)
    assert out.splitlines() == ["k1\tv1", "k2\tv:2"]

    code, out, _ = run(
        "consume", name, "-p", "1", "--offset", "1", "-e", *b,
        "--template", "{topic}/{partition}/{offset} {key}={value} [{headers}]",
    )  # fmt: skip
    assert out.splitlines() == [f"{name}/1/1 k2=v:2 [origin=cli,n=1]"]

    code, out, _ = run(
        "consume", name, "-p", "0", "--from-beginning", "-n", "2", "--format", "json", *b
    )
    records = [json.loads(line) for line in out.splitlines()]
    assert [(r["partition"], r["offset"], r["value"], r["key"]) for r in records] == [
        (0, 0, "one", None),
        (0, 1, "two", None),
    ]
    assert all(isinstance(r["timestamp"], int) and r["headers"] == [] for r in records)

    # negative offset: that many records before the end
    code, out, _ = run("consume", name, "-p", "0", "--offset", "-1", "-e", *b)
    assert out.splitlines() == ["three"]
    # a timestamp after every record: nothing; epoch 0: everything
    code, out, _ = run("consume", name, "--from-timestamp", "2999-01-01T00:00:00Z", "-e", *b)
    assert code == 0 and out == ""
    code, out, _ = run("consume", name, "--from-timestamp", "0", "-e", *b)
    assert len(out.splitlines()) == 5


def test_consume_in_a_group_commits(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    run.json("topic", "create", name, "-p", "1", *b)
    run("produce", name, *b, stdin=b"a\nb\nc\n")
    group = f"{name}-g"
    code, out, _ = run("consume", name, "-g", group, "--from-beginning", "-n", "2", *b)
    assert code == 0 and out.splitlines() == ["a", "b"]
    [doc] = run.json("group", "describe", group, *b)
    assert doc["offsets"] == [
        {"topic": name, "partition": 0, "committed": 2, "log_end": 3, "lag": 1, "member_id": None}
    ]
    # the next run of the group goes on from the committed offset
    code, out, _ = run("consume", name, "-g", group, "-n", "1", *b)
    assert out.splitlines() == ["c"]


def test_consume_and_produce_bad_input(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    run.json("topic", "create", name, "-p", "1", *b)
    run("produce", name, *b, stdin=b"x\n")
    code, _, err = run("consume", name, "--offset", "99", *b)
    assert code == 1
    assert one_error_line(err) == (
        f"wirebroker: error: offset 99 is out of range for {name}-0: its offsets are [0, 1]"
    )
    code, _, err = run("consume", name, "-p", "7", *b)
    assert code == 1 and "has no partition 7" in one_error_line(err)
    code, _, err = run("consume", "no-such-topic", "-e", *b)
    assert code == 1 and one_error_line(err) == "wirebroker: error: unknown topic 'no-such-topic'"
    code, _, err = run("consume", name, "--offset", "abc", *b)
    assert code == 2 and "invalid int value" in err
    code, _, err = run("consume", name, "--from-timestamp", "yesterday", *b)
    assert code == 2 and "bad timestamp" in one_error_line(err)
    code, _, err = run("consume", name, "-g", "g", "--offset", "0", *b)
    assert code == 2 and "group reset-offsets" in one_error_line(err)
    code, _, err = run("consume", name, "--template", "{nope}", *b)
    assert code == 2 and "bad --template" in one_error_line(err)
    code, _, err = run("produce", name, "-k", ":", *b, stdin=b"k:v\nno separator\n")
    assert code == 1 and "line 2 has no key separator" in err
    code, _, err = run("produce", name, "-p", "5", *b, stdin=b"x\n")
    assert code == 1 and "has no partition 5" in one_error_line(err)
    code, _, err = run("produce", name, "-f", "/no/such/file", *b)
    assert code == 1 and "cannot read /no/such/file" in one_error_line(err)


# -- group -------------------------------------------------------------------------------------


def test_group_list_describe_reset_delete(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    group = f"{name}-g"
    run.json("topic", "create", name, "-p", "2", *b)
    run("produce", name, "-p", "0", *b, stdin=b"".join(b"%d\n" % i for i in range(10)))
    run("produce", name, "-p", "1", *b, stdin=b"".join(b"%d\n" % i for i in range(4)))
    code, _, _ = run("consume", name, "-g", group, "--from-beginning", "-n", "14", *b)
    assert code == 0

    assert {"group": group, "state": "Empty", "protocol_type": "consumer"} in run.json(
        "group", "list", *b
    )
    [doc] = run.json("group", "describe", group, *b)
    assert doc["state"] == "Empty" and doc["members"] == []
    assert [(o["partition"], o["committed"], o["log_end"], o["lag"]) for o in doc["offsets"]] == [
        (0, 10, 10, 0),
        (1, 4, 4, 0),
    ]
    code, out, _ = run("group", "describe", group, *b)
    assert "CURRENT-OFFSET" in out and "LOG-END-OFFSET" in out and "LAG" in out

    # dry run by default: shows, commits nothing
    code, out, err = run("group", "reset-offsets", group, "--topic", name, "--to-earliest", *b)
    assert code == 0 and "dry run" in err
    rows = [line.split() for line in out.splitlines()[2:]]
    assert rows == [[group, name, "0", "10", "0"], [group, name, "1", "4", "0"]]
    assert run.json("group", "describe", group, *b)[0]["offsets"][0]["committed"] == 10

    def reset(*how: str) -> list[tuple[int, int | None, int]]:
        doc = run.json("group", "reset-offsets", group, *how, "--execute", *b)
        assert doc["executed"] is True
        return [(r["partition"], r["current"], r["new"]) for r in doc["offsets"]]

    assert reset("--topic", name, "--to-earliest") == [(0, 10, 0), (1, 4, 0)]
    assert reset("--topic", f"{name}:0", "--shift-by", "3") == [(0, 0, 3)]
    assert reset("--all-topics", "--shift-by", "-5") == [(0, 3, 0), (1, 0, 0)]  # clamped
    assert reset("--topic", f"{name}:1", "--to-offset", "99") == [(1, 0, 4)]  # clamped
    assert reset("--topic", f"{name}:0", "--to-offset", "7") == [(0, 0, 7)]
    assert reset("--topic", name, "--to-latest") == [(0, 7, 10), (1, 4, 4)]
    assert reset("--topic", name, "--to-datetime", "1970-01-01T00:00:00Z") == [
        (0, 10, 0),
        (1, 4, 0),
    ]
    assert reset("--topic", name, "--to-datetime", "2999-01-01T00:00:00") == [
        (0, 0, 10),
        (1, 0, 4),
    ]
    [doc] = run.json("group", "describe", group, *b)
    assert [o["committed"] for o in doc["offsets"]] == [10, 4]

    # bad input
    code, _, err = run("group", "reset-offsets", group, "--topic", "nope", "--to-earliest", *b)
    assert code == 1 and one_error_line(err) == "wirebroker: error: unknown topic 'nope'"
    code, _, err = run("group", "reset-offsets", group, "--topic", f"{name}:9", "--to-earliest", *b)
    assert code == 1 and "has no partition 9" in one_error_line(err)
    code, _, err = run("group", "reset-offsets", group, "--topic", name, *b)
    assert code == 2  # no --to-...
    code, _, err = run("group", "describe", "no-such-group", *b)
    assert code == 1
    assert one_error_line(err) == "wirebroker: error: group 'no-such-group' does not exist"

    assert run.json("group", "delete", group, *b) == [{"group": group, "ok": True, "error": None}]
    code, out, _ = run("group", "delete", group, *b)
    assert code == 1 and "GroupIdNotFoundError" in out


def test_group_reset_refused_while_members(run: Run, bootstrap: str, name: str) -> None:
    from kafka import KafkaConsumer

    b = ("-b", bootstrap)
    group = f"{name}-g"
    run.json("topic", "create", name, "-p", "1", *b)
    consumer = KafkaConsumer(
        name, bootstrap_servers=bootstrap, group_id=group, consumer_timeout_ms=100
    )
    try:
        for _ in range(100):  # until it joined (bounded)
            consumer.poll(timeout_ms=100)
            if consumer.assignment():
                break
        assert consumer.assignment()
        [doc] = run.json("group", "describe", group, *b)
        assert doc["state"] == "Stable" and len(doc["members"]) == 1
        assert doc["members"][0]["assignment"] == [[name, 0]]
        assert doc["offsets"][0]["member_id"] == doc["members"][0]["member_id"]
        code, _, err = run(
            "group", "reset-offsets", group, "--topic", name, "--to-earliest", "--execute", *b
        )
        assert code == 1 and "only be reset while it has none" in one_error_line(err)
        code, out, _ = run("group", "delete", group, *b)
        assert code == 1 and "NonEmptyGroupError" in out
    finally:
        consumer.close()


# -- cluster info, version, help ---------------------------------------------------------------


# -- user ------------------------------------------------------------------------------------


def test_user_scram_set_list_delete(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    done = run.json("user", "scram-set", name, "-p", "pw", "-i", "8192", *b)
    assert done == {"user": name, "mechanism": "SCRAM-SHA-256", "done": True}
    code, out, err = run("user", "scram-set", name, "-m", "SCRAM-SHA-512", *b, stdin=b"pw2\n")
    assert code == 0, err
    assert out.split()[-3:] == [name, "SCRAM-SHA-512", "set"]
    listed = run.json("user", "list", name, *b)
    assert listed == {
        "users": [
            {
                "user": name,
                "credentials": [
                    {"mechanism": "SCRAM-SHA-256", "iterations": 8192},
                    {"mechanism": "SCRAM-SHA-512", "iterations": 4096},
                ],
            }
        ]
    }
    code, out, _ = run("user", "list", *b)
    assert code == 0 and [name, "SCRAM-SHA-512", "4096"] in [ln.split() for ln in out.splitlines()]
    # the broker's refusals are one-line errors
    code, _, err = run("user", "scram-set", name, "-p", "pw", "-i", "100", *b)
    assert code == 1 and "Too few iterations" in one_error_line(err)
    assert run.json("user", "scram-delete", name, "-m", "SCRAM-SHA-512", *b)["done"] is True
    code, _, err = run("user", "scram-delete", name, "-m", "SCRAM-SHA-512", *b)
    assert code == 1
    assert "Attempt to delete a user credential that does not exist" in one_error_line(err)
    code, _, err = run("user", "list", "nobody-" + name, *b)
    assert code == 1 and "does not exist" in one_error_line(err)


def test_quota_set_list_remove(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    done = run.json("quota", "set", "--user", name, "producer_byte_rate=1048576", *b)
    assert done == {"entity": {"user": name}, "done": True}
    entity = ("--user", name, "--default-client-id")
    assert run.json("quota", "set", *entity, "request_percentage=25.5", *b)["done"] is True
    listed = run.json("quota", "list", "--user", name, *b)
    assert listed == {
        "quotas": [
            {"entity": {"client-id": None, "user": name}, "values": {"request_percentage": 25.5}},
            {"entity": {"user": name}, "values": {"producer_byte_rate": 1048576.0}},
        ]
    }
    code, out, _ = run("quota", "list", *b)
    assert code == 0 and [f"user={name}", "producer_byte_rate", "1048576"] in [
        ln.split() for ln in out.splitlines()
    ]
    # the broker's refusals are one-line errors
    code, _, err = run("quota", "set", "--client-id", name, "producer_byte_rate=1.5", *b)
    assert code == 1 and "cannot be a fractional value" in one_error_line(err)
    assert run.json("quota", "remove", *entity, "request_percentage", *b)["done"] is True
    strict = run.json("quota", "list", "--user", name, "--strict", *b)
    assert strict == {
        "quotas": [{"entity": {"user": name}, "values": {"producer_byte_rate": 1048576.0}}]
    }


def test_group_configs_and_alter_config(run: Run, bootstrap: str, name: str) -> None:
    b = ("-b", bootstrap)
    session = "consumer.session.timeout.ms"
    done = run.json("group", "alter-config", name, "-s", f"{session}=50000", *b)
    assert done == {"group": name, "set": {session: "50000"}, "deleted": []}
    shown = run.json("group", "configs", name, *b)
    assert shown == {
        "group": name,
        "configs": {session: {"value": "50000", "source": "DYNAMIC_GROUP_CONFIG"}},
    }
    every = run.json("group", "configs", name, "--all-configs", *b)["configs"]
    assert len(every) == 21
    assert every["share.isolation.level"] == {
        "value": "read_uncommitted",
        "source": "DEFAULT_CONFIG",
    }
    # the broker's refusals are one-line errors
    code, _, err = run("group", "alter-config", name, "-s", f"{session}=1", *b)
    assert code == 1 and "must be in the range 45000 to 60000 inclusive" in one_error_line(err)
    assert run.json("group", "alter-config", name, "-d", session, *b)["deleted"] == [session]
    assert run.json("group", "configs", name, *b)["configs"] == {}


def test_cluster_info(run: Run, bootstrap: str) -> None:
    doc = run.json("cluster", "info", "-b", bootstrap)
    host, port = bootstrap.rsplit(":", 1)
    assert doc["controller"] == 0
    assert doc["brokers"] == [
        {"id": 0, "host": host, "port": int(port), "rack": None, "controller": True}
    ]
    assert isinstance(doc["cluster_id"], str) and len(doc["cluster_id"]) == 22
    code, out, _ = run("cluster", "info", "-b", bootstrap)
    assert code == 0 and "0*" in out and doc["cluster_id"] in out


def test_bootstrap_before_the_command_and_in_kafka_spelling(run: Run, bootstrap: str) -> None:
    """kcat's order (`-b` first) and Kafka's tools' `--bootstrap-server` reach the broker."""
    expected = run.json("cluster", "info", "-b", bootstrap)
    for argv in (
        ("-b", bootstrap, "cluster", "info"),
        ("--bootstrap-server", bootstrap, "cluster", "info"),
        (f"--bootstrap={bootstrap}", "cluster", "info"),
        ("cluster", "info", "--bootstrap-server", bootstrap),
    ):
        assert run.json(*argv) == expected, argv


def test_version_and_help(run: Run) -> None:
    from wirebroker import __version__

    code, out, _ = run("--version")
    assert code == 0 and out.strip() == f"wirebroker {__version__}"
    for argv in (
        ["--help"],
        ["topic", "--help"],
        ["topic", "describe", "--help"],
        ["produce", "--help"],
        ["consume", "--help"],
        ["group", "reset-offsets", "--help"],
        ["cluster", "--help"],
        ["cluster", "info", "--help"],
        ["dump-log", "--help"],
        ["data", "reset", "--help"],
    ):
        code, out, _ = run(*argv)
        assert code == 0 and out.startswith("usage: wirebroker"), argv


# -- end to end through real processes ---------------------------------------------------------


_cli = run_cli


def test_dead_bootstrap_is_one_line_and_exit_1() -> None:
    for argv in (
        ("topic", "list"),
        ("cluster", "info"),
        ("group", "list"),
        ("consume", "t", "-e"),
    ):
        done = _cli(*argv, "-b", DEAD, "--timeout", "1")
        assert done.returncode == 1, (argv, done.stderr)
        assert done.stdout == ""
        assert done.stderr.strip() == (
            f"wirebroker: error: cannot reach the bootstrap servers {DEAD} (after 1 s)"
        ), argv
    done = _cli("produce", "t", "-b", DEAD, "--timeout", "1", stdin="x\n")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr


def test_processes_round_trip(bootstrap: str, name: str) -> None:
    assert _cli("topic", "create", name, "-b", bootstrap).returncode == 0
    done = _cli("produce", name, "-b", bootstrap, stdin="hello\nworld\n")
    assert done.returncode == 0 and "produced 2 records" in done.stderr
    done = _cli("consume", name, "--from-beginning", "-e", "-b", bootstrap)
    assert done.returncode == 0 and sorted(done.stdout.split()) == ["hello", "world"]
    done = _cli("topic", "describe", "no-such-topic", "-b", bootstrap)
    assert done.returncode == 1
    assert done.stderr == "wirebroker: error: unknown topic 'no-such-topic'\n"
    done = _cli("topic", "create", "-b", bootstrap)  # no topic name: usage error
    assert done.returncode == 2 and "usage:" in done.stderr


# -- data and dump-log -------------------------------------------------------------------------


def test_data_path_and_reset(run: Run, tmp_path: Path) -> None:
    data = tmp_path / "data"
    doc = run.json("data", "path", "--data-dir", str(data))
    assert doc == {"path": str(data), "exists": False, "in_use": False, "bytes": 0}
    broker = BrokerProcess(data, log_path=tmp_path / "broker.log")
    broker.start()
    try:
        assert run.json("data", "path", "--data-dir", str(data))["in_use"] is True
        code, _, err = run("data", "reset", "--data-dir", str(data), "--yes")
        assert code == 1
        assert one_error_line(err) == (
            f"wirebroker: error: {data} is in use by a running broker: stop it first"
        )
    finally:
        broker.close()
    assert (data / "meta.properties").exists()
    code, _, err = run("data", "reset", "--data-dir", str(data))  # no terminal, no --yes
    assert code == 1 and "without --yes" in one_error_line(err)
    removed = run.json("data", "reset", "--data-dir", str(data), "--yes")
    assert removed["path"] == str(data) and removed["removed"] > 0
    assert [p.name for p in data.iterdir()] == [".lock"]
    code, out, _ = run("data", "path", "--data-dir", str(data))
    assert code == 0 and out.strip() == str(data)


def test_dump_log_in_the_cli_and_the_tools_wrapper(run: Run, tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data, log_path=tmp_path / "broker.log")
    broker.start()
    try:
        run.json("topic", "create", "dumped", "-p", "1", "-b", broker.bootstrap)
        run("produce", "dumped", "-b", broker.bootstrap, stdin=b"a\nb\n")
    finally:
        broker.close()
    code, out, _ = run("dump-log", str(data / "dumped-0"), "--records")
    assert code == 0
    assert "offsets 0-1 count 2" in out and "crc ok" in out and "value b'b'" in out
    tool = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "dump_log.py"), str(data / "dumped-0")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert tool.returncode == 0 and "offsets 0-1 count 2" in tool.stdout
    code, _, err = run("dump-log", str(tmp_path / "missing"))
    assert code == 2 and "not a directory" in err

    # --format json: one document, offsets as produced
    doc = run.json("dump-log", str(data / "dumped-0"), "--records")
    assert doc["ok"] is True and doc["directory"] == str(data / "dumped-0")
    [segment] = doc["segments"]
    assert (segment["file"], segment["base_offset"]) == ("00000000000000000000.log", 0)
    [batch] = segment["batches"]
    assert segment["bytes"] == batch["size"] and segment["problems"] == []
    assert (batch["base_offset"], batch["last_offset"], batch["record_count"]) == (0, 1, 2)
    assert batch["crc_valid"] is True and batch["leader_epoch"] == 0
    assert batch["producer_id"] >= 0 and batch["base_sequence"] == 0  # idempotent (acks=all)
    assert batch["attributes"] == {
        "value": 0,
        "compression": "none",
        "timestamp_type": "create",
        "transactional": False,
        "control": False,
    }
    assert [(r["offset"], r["key"], r["value"]) for r in batch["records"]] == [
        (0, None, "a"),
        (1, None, "b"),
    ]
    assert segment["index"]["file"] == "00000000000000000000.index"
    assert all(e["matches_log"] for e in segment["index"]["entries"])
    assert doc["leader_epoch_checkpoint"]["entries"] == [{"epoch": 0, "start_offset": 0}]
    plain = run.json("dump-log", str(data / "dumped-0"), "--no-index")
    assert "records" not in plain["segments"][0]["batches"][0]
    assert "index" not in plain["segments"][0]


# -- progress ----------------------------------------------------------------------------------


def test_progress_only_on_a_terminal_and_never_on_stdout(
    run: Run, bootstrap: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = ("-b", bootstrap)
    run.json("topic", "create", name, "-p", "2", *b)
    lines = b"".join(b"line-%d\n" % i for i in range(300))
    # stderr is not a terminal here: the summary only (the no-terminal path)
    code, out, err = run("produce", name, *b, stdin=lines)
    assert code == 0 and out == ""
    assert err.splitlines() == [line for line in err.splitlines() if line.startswith("produced")]

    monkeypatch.setenv("WIREBROKER_PROGRESS", "1")  # as if stderr were a terminal
    source = tmp_path / "lines.txt"
    source.write_bytes(lines)
    code, out, err = run("produce", name, "-f", str(source), *b)
    assert code == 0 and out == ""
    assert "produce " + name in err and "300 records" in err and "rec/s" in err
    assert len(lines) == 2590 and "2.6/2.6 kB" in err  # bytes read of the file's size
    assert "produced 300 records to " + name in err

    code, out, err = run("consume", name, "--from-beginning", "-e", *b)
    assert code == 0 and sorted(out.splitlines()) == sorted([f"line-{i}" for i in range(300)] * 2)
    assert "consume " + name in err and "600/600" in err and "rec/s" in err
    assert "consumed 600 records" in err
    code, out, err = run("consume", name, "--from-beginning", "-n", "5", "--format", "json", *b)
    assert [json.loads(line)["value"][:5] for line in out.splitlines()] == ["line-"] * 5
    assert "5/5" in err

    # --no-progress wins over the environment
    code, out, err = run("consume", name, "--from-beginning", "-e", "--no-progress", *b)
    assert code == 0 and err.strip() == "consumed 600 records"
    code, _, err = run("produce", name, "--no-progress", *b, stdin=b"x\n")
    assert code == 0 and err.strip().startswith("produced 1 record to ")
