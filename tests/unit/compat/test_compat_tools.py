"""The compatibility matrix's own machinery: fault proxy, kcat output parser, ratchet, report.

These run without any Kafka client or broker: a fake upstream answers frames, the parser gets
hand-made kcat output, the report renders hand-made result files.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import socket
import struct
import threading
from pathlib import Path
from typing import Any

import pytest

from compat.scenarios import cases, runner
from compat.scenarios.api import Adapter, Unsupported
from compat.scenarios.faultproxy import FaultProxy

REPO = Path(__file__).resolve().parents[3]


# -- fault proxy -------------------------------------------------------------------------------
def _echo_server() -> tuple[socket.socket, int]:
    """Answers every request frame with a frame holding its correlation id."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    def answer(conn: socket.socket) -> None:
        with conn:
            while True:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                body = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                correlation = body[4:8]
                conn.sendall(struct.pack(">i", 5) + correlation + b"!")

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


def _request(api_key: int, correlation: int) -> bytes:
    body = struct.pack(">hhi", api_key, 0, correlation) + b"\xff\xff"
    return struct.pack(">i", len(body)) + body


def _read_response(sock: socket.socket) -> int | None:
    head = sock.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    body = sock.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
    return int(struct.unpack(">i", body[:4])[0])


def test_fault_proxy_loses_the_chosen_produce_response_and_only_it() -> None:
    listener, port = _echo_server()
    proxy = FaultProxy(drop={2})
    proxy.upstream = ("127.0.0.1", port)
    clients: list[socket.socket] = []
    try:
        first = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        clients.append(first)
        first.sendall(_request(18, 1))  # not a Produce: never counted
        assert _read_response(first) == 1
        first.sendall(_request(0, 2))  # Produce #1: delivered
        assert _read_response(first) == 2
        first.sendall(_request(0, 3))  # Produce #2: lost, connection closed
        assert _read_response(first) is None
        second = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        clients.append(second)
        second.sendall(_request(0, 4))  # Produce #3: delivered again
        assert _read_response(second) == 4
        assert (proxy.produce_responses, proxy.dropped) == (3, 1)
    finally:
        for c in clients:
            c.close()
        proxy.close()
        listener.close()


# -- kcat output parser --------------------------------------------------------------------------
def _kcat_module() -> Any:
    spec = importlib.util.spec_from_file_location("kcat_adapter", REPO / "compat/kcat/adapter.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_kcat_record_stream_is_binary_safe_across_chunks() -> None:
    kcat = _kcat_module()
    value = b"line1\nline2\x00\xff"
    out = (
        b"0 5 1700000000000 3 " + str(len(value)).encode() + b"\na=1,a=2,e=\nkey" + value + b"\n"
        b"1 6 1700000000001 -1 -1\n\n\n"
        b"2 7 1700000000002 0 2\n\nhi\n"
    )
    stream = kcat.RecordStream()
    got = []
    for i in range(0, len(out), 3):  # three bytes at a time
        got += stream.feed(out[i : i + 3])
    assert [(r.partition, r.offset, r.timestamp) for r in got] == [
        (0, 5, 1700000000000),
        (1, 6, 1700000000001),
        (2, 7, 1700000000002),
    ]
    assert (got[0].key, got[0].value) == (b"key", value)
    assert got[0].headers == (("a", b"1"), ("a", b"2"), ("e", b""))
    assert (got[1].key, got[1].value, got[1].headers) == (None, None, ())
    assert (got[2].key, got[2].value) == (b"", b"hi")
    assert stream.buf == bytearray()


# -- ratchet -------------------------------------------------------------------------------------
def _results(**statuses: str) -> dict[str, dict[str, object]]:
    return {cid.replace("__", "."): {"status": s} for cid, s in statuses.items()}


def test_ratchet_flags_regressions_unknown_ids_and_new_passes() -> None:
    passing = ["auto_create", "max_message.over", "no.such.case", "metadata.100_topics"]
    results = _results(auto_create="pass", max_message__over="fail", max_message__under="pass")
    regressions, unknown, new = runner.ratchet(passing, results)
    # metadata.100_topics did not run in a full run: that is a regression too
    assert regressions == ["max_message.over", "metadata.100_topics"]
    assert unknown == ["no.such.case"]
    assert new == ["max_message.under"]
    regressions, _, _ = runner.ratchet(passing, results, partial=True)
    assert regressions == ["max_message.over"]


def test_passing_file_round_trip_keeps_comments_and_case_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "COMPAT", tmp_path)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "passing.txt").write_text("# header\nauto_create  # note\n")
    assert runner.read_passing("c") == ["auto_create"]
    runner.write_passing("c", ["auto_create", "roundtrip.create_time"])
    assert (tmp_path / "c" / "passing.txt").read_text() == (
        "# header\nroundtrip.create_time\nauto_create\n"
    )


# -- report --------------------------------------------------------------------------------------
def test_report_table_totals_and_suite_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("compat_report", REPO / "tools/compat_report.py")
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    cases = {
        "auto_create": {"status": "pass", "detail": "ok", "seconds": 0.1},
        "max_message.over": {"status": "fail", "detail": "boom | pipe", "seconds": 1},
        "compression.zstd": {"status": "n/a", "detail": "no zstd", "seconds": 0},
    }
    (tmp_path / "kcat.json").write_text(json.dumps({"version": "1.7.1", "cases": cases}))
    suite = {
        "version": "3.0.12",
        "kafka_version": "4.3.0",
        "tests": {
            "t::a": {"status": "passed", "detail": ""},
            "t::b": {"status": "failed", "detail": "AssertionError"},
            "t::c": {"status": "excluded", "detail": "SSL: spawns a broker"},
        },
    }
    (tmp_path / "kafka-python-suite.json").write_text(json.dumps(suite))
    cluster_cases = {
        "auto_create": {"status": "fail", "detail": "lost", "seconds": 0.1},
        "failover.kill_leader": {"status": "pass", "detail": "ok", "seconds": 9},
    }
    (tmp_path / "kcat-cluster.json").write_text(
        json.dumps({"version": "1.7.1", "row": "cluster", "cases": cluster_cases})
    )
    text = report.render()
    single_text, _, cluster_text = text.partition("### A 3-broker cluster")
    single_text = single_text.partition("### One broker")[2]
    cluster_text = cluster_text.partition("###")[0]

    def table(part: str) -> dict[str, str]:
        return {
            line.split("|")[1].strip(): line for line in part.splitlines() if line.startswith("| `")
        }

    rows = table(single_text)
    cluster_rows = table(cluster_text)
    kcat_col = report.CLIENTS.index("kcat") + 2
    assert rows["`auto_create`"].split("|")[kcat_col].strip() == "pass"
    assert rows["`max_message.over`"].split("|")[kcat_col].strip() == "**FAIL**"
    assert rows["`compression.zstd`"].split("|")[kcat_col].strip() == "n/a"
    assert rows["`roundtrip.create_time`"].split("|")[kcat_col].strip() == "not run"
    assert rows["`auto_create`"].split("|")[2].strip() == "not run"  # kafka-python: no file
    assert "1 pass / 1 fail / 1 n/a" in text
    assert "boom \\| pipe" in text
    assert "**1 / 2**" in text  # excluded tests are not counted
    assert "`t::c`: SSL: spawns a broker" in text
    # the cluster row: its own results file; cases that do not apply are excluded, with reasons
    assert rows["`failover.kill_leader`"].split("|")[kcat_col].strip() == "excluded"
    assert cluster_rows["`failover.kill_leader`"].split("|")[kcat_col].strip() == "pass"
    assert cluster_rows["`auto_create`"].split("|")[kcat_col].strip() == "**FAIL**"
    assert cluster_rows["`idempotent.retries`"].split("|")[kcat_col].strip() == "excluded"
    assert cluster_rows["`roundtrip.create_time`"].split("|")[kcat_col].strip() == "not run"
    assert "1 pass / 1 fail / 0 n/a" in cluster_text
    assert "- `idempotent.retries`: the fault proxy" in cluster_text
    assert "- `failover.kill_leader`: needs replicas" in single_text
    assert "`auto_create` (fail): lost" in text
    # what run-tests prints last when the matrix failed: every failed case, with its cause
    assert report.failed_cases() == [
        "kafka-python-suite: t::b: AssertionError",
        "kcat-cluster: auto_create: lost",
        "kcat: max_message.over: boom | pipe",
    ]


def test_rows_select_their_cases_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    single = {c.id for c in cases.cases_of(cases.SINGLE_BROKER)}
    cluster = {c.id for c in cases.cases_of(cases.CLUSTER)}
    assert "failover.kill_leader" in cluster - single
    assert "idempotent.retries" in single - cluster
    assert all(c.not_in[row] for c in cases.CASES for row in c.not_in), "a reason for each"
    assert set().union(*(c.not_in for c in cases.CASES)) <= set(cases.ROWS)
    # a cluster-only case listed in the single row's ratchet is an unknown id, and back
    results = _results(auto_create="pass")
    _, unknown, _ = runner.ratchet(["failover.kill_leader"], results, partial=True)
    assert unknown == ["failover.kill_leader"]
    _, unknown, _ = runner.ratchet(
        ["idempotent.retries", "failover.kill_leader"], results, partial=True, row=cases.CLUSTER
    )
    assert unknown == ["idempotent.retries"]
    monkeypatch.setattr(runner, "COMPAT", tmp_path)
    assert runner.passing_path("c", cases.CLUSTER) == tmp_path / "c" / "passing-cluster.txt"
    assert runner.results_path("c", cases.CLUSTER).name == "c-cluster.json"
    assert runner.results_path("c").name == "c.json"
    (tmp_path / "c").mkdir()
    runner.write_passing("c", ["failover.kill_leader", "auto_create"], cases.CLUSTER)
    assert runner.read_passing("c", cases.CLUSTER) == ["auto_create", "failover.kill_leader"]
    assert runner.read_passing("c") == []


def test_consumer_protocol_rows_run_the_group_cases_with_files_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    groups = [
        "group.rebalance_commit_resume",
        "admin.list_groups",
        "admin.describe_groups",
        "admin.delete_groups",
    ]
    assert cases.row_of(False, "consumer") == cases.CONSUMER
    assert cases.row_of(True, "consumer") == cases.CLUSTER_CONSUMER
    assert cases.row_of(True) == cases.CLUSTER and cases.row_of(False) == cases.SINGLE_BROKER
    for row in (cases.CONSUMER, cases.CLUSTER_CONSUMER):
        assert [c.id for c in cases.cases_of(row)] == groups
        assert cases.group_protocol_of(row) == "consumer"
    assert cases.group_protocol_of(cases.CLUSTER) == "classic"
    assert cases.base_row(cases.CLUSTER_CONSUMER) == cases.CLUSTER
    # a case outside the group cases is no case of the consumer rows (an unknown id there)
    _, unknown, _ = runner.ratchet(["auto_create", *groups], {}, partial=True, row=cases.CONSUMER)
    assert unknown == ["auto_create"]
    monkeypatch.setattr(runner, "COMPAT", tmp_path)
    assert runner.passing_path("c", cases.CONSUMER).name == "passing-consumer.txt"
    assert runner.passing_path("c", cases.CLUSTER_CONSUMER).name == "passing-cluster-consumer.txt"
    assert runner.results_path("c", cases.CONSUMER, oracle=True).name == "c-consumer-oracle.json"
    assert runner.differs_path("c", cases.CONSUMER).name == "oracle-differs-consumer.txt"

    class ClassicOnly(Adapter):
        name = "classic-only"

    class Both(Adapter):
        name = "both"
        group_protocols = frozenset({"classic", "consumer"})

    # a client whose members have no consumer protocol is refused before anything starts
    monkeypatch.setattr(runner, "load_adapter", lambda client: ClassicOnly)
    with pytest.raises(SystemExit):
        runner.main(["classic-only", "--group-protocol", "consumer"])
    # the run's adapters get the row's group protocol
    target = runner._Target(tmp_path, cluster=False)
    run = runner._Run("both", Both, target, tmp_path, cases.CONSUMER)
    assert run.new_adapter("127.0.0.1:9").group_protocol == "consumer"
    run = runner._Run("both", Both, target, tmp_path, cases.SINGLE_BROKER)
    assert run.new_adapter("127.0.0.1:9").group_protocol == "classic"


def test_report_shows_the_consumer_protocol_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("compat_report", REPO / "tools/compat_report.py")
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    results_dir, compat_dir = tmp_path / "results", tmp_path / "compat"
    results_dir.mkdir()
    (compat_dir / "java-client").mkdir(parents=True)
    monkeypatch.setattr(report, "RESULTS", results_dir)
    monkeypatch.setattr(report, "CONSUMER_PROTOCOL_CLIENTS", ["java-client"])
    monkeypatch.setattr(runner, "COMPAT", compat_dir)
    (compat_dir / "java-client" / "oracle-differs-consumer.txt").write_text(
        "admin.list_groups  # a reason\n"
    )

    def write(name: str, row: str, **statuses: str) -> None:
        found = {c: {**r, "detail": f"{c} {r['status']}"} for c, r in _results(**statuses).items()}
        body = {"version": "4.4.0", "row": row, "cases": found}
        (results_dir / f"{name}.json").write_text(json.dumps(body))

    write("java-client-consumer", "consumer", group__rebalance_commit_resume="pass")
    write("java-client-consumer-oracle", "consumer", admin__list_groups="fail")
    write("java-client-cluster-consumer", "cluster-consumer", admin__delete_groups="fail")
    text = report.render().partition("### The consumer group protocol (KIP-848)")[2]
    text = text.partition("###")[0]
    rows = {
        line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| `")
    }
    assert list(rows) == [f"`{c.id}`" for c in cases.cases_of(cases.CONSUMER)]
    cells = [c.strip() for c in rows["`group.rebalance_commit_resume`"].split("|")[2:-1]]
    assert cells == ["pass", "not run", "not run", "not run"]
    cells = [c.strip() for c in rows["`admin.list_groups`"].split("|")[2:-1]]
    assert cells == ["not run", "not run", "differs", "not run"]
    assert rows["`admin.delete_groups`"].split("|")[3].strip() == "**FAIL**"
    assert "- java-client, 3-broker cluster, `admin.delete_groups` (fail)" in text
    assert "- java-client (consumer) `admin.list_groups`: a reason" in text
    assert "| **total** | 1 pass / 0 fail | 0 pass / 1 fail | 0 pass / 1 fail | not run |" in text
    assert report.failed_cases() == [
        "java-client-cluster-consumer: admin.delete_groups: admin.delete_groups fail"
    ]


def test_legacy_cases_name_why_a_client_cannot_be_set_up_for_an_old_broker(
    tmp_path: Path,
) -> None:
    class NoLegacy(Adapter):
        name = "some-client"

    ctx = cases.Ctx(NoLegacy("127.0.0.1:9"), "127.0.0.1:9", tmp_path, itertools.count())
    [case] = [c for c in cases.CASES if c.id == "legacy.message_format_v0"]
    with pytest.raises(Unsupported) as plain:
        case.run(ctx)
    assert str(plain.value) == "some-client cannot be set up as a pre-0.10 client"
    NoLegacy.legacy_note = "it always sends ApiVersions"
    with pytest.raises(Unsupported) as noted:
        case.run(ctx)
    assert str(noted.value) == (
        "some-client cannot be set up as a pre-0.10 client: it always sends ApiVersions"
    )


def test_java_client_driver_class_path_takes_one_jar_of_each_dependency(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "java_client_adapter", REPO / "compat/java-client/adapter.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = [p + "1.0.jar" for p in module.JARS]
    for name in [*names, "kafka-clients-test-1.0.jar", "kafka-streams-4.4.0.jar"]:
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in module._jars(tmp_path)] == names
    (tmp_path / "zstd-jni-2.0.jar").write_bytes(b"")  # two versions: which one is meant?
    with pytest.raises(RuntimeError, match="expected one zstd-jni-"):
        module._jars(tmp_path)


# -- the oracle row (Apache Kafka) -------------------------------------------------------------
def test_oracle_check_needs_every_passing_case_or_a_reasoned_difference() -> None:
    passing = ["auto_create", "max_message.over", "legacy.message_format_v0", "txn.commit_abort"]
    differs = {"legacy.message_format_v0": "Kafka closes the connection"}
    results = _results(
        auto_create="pass",
        max_message__over="fail",
        legacy__message_format_v0="fail",
        metadata__100_topics="fail",  # not in the passing file: no concern of the check
    )
    problems = runner.oracle_check(passing, differs, results)
    assert problems == [
        "max_message.over: passes on wirebroker, fail on Apache Kafka",
        "txn.commit_abort: passes on wirebroker, did not run on Apache Kafka",
    ]
    assert runner.oracle_check(passing, differs, results, partial=True) == [problems[0]]
    # a difference that no longer is one, one without a reason, one for a case that does not
    # pass on wirebroker, and an unknown id: each breaks the check
    results = _results(auto_create="pass", legacy__message_format_v0="pass")
    differs = {
        "legacy.message_format_v0": "was different",
        "auto_create": "",
        "max_message.under": "flaky",
        "no.such.case": "typo",
    }
    assert runner.oracle_check(["auto_create", "legacy.message_format_v0"], differs, results) == [
        "legacy.message_format_v0: listed as differing but passed on Apache Kafka (remove it)",
        "auto_create: listed as differing without a reason",
        "auto_create: listed as differing but passed on Apache Kafka (remove it)",
        "max_message.under: listed as differing but not a passing case of the row",
        "no.such.case: listed as differing but not a passing case of the row",
    ]


def test_oracle_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "COMPAT", tmp_path)
    assert runner.results_path("c", oracle=True).name == "c-oracle.json"
    assert runner.results_path("c", cases.CLUSTER, oracle=True).name == "c-cluster-oracle.json"
    assert runner.differs_path("c") == tmp_path / "c" / "oracle-differs.txt"
    assert runner.read_differs("c") == {}
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "oracle-differs.txt").write_text(
        "# header\nlegacy.message_format_v0  # Kafka 4 closes the connection # really\n"
        "auto_create\n"
    )
    assert runner.read_differs("c") == {
        "legacy.message_format_v0": "Kafka 4 closes the connection # really",
        "auto_create": "",
    }


def test_report_shows_the_kafka_row_with_its_listed_differences(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = importlib.util.spec_from_file_location("compat_report", REPO / "tools/compat_report.py")
    assert spec is not None and spec.loader is not None
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    results_dir, compat_dir = tmp_path / "results", tmp_path / "compat"
    results_dir.mkdir()
    (compat_dir / "kcat").mkdir(parents=True)
    monkeypatch.setattr(report, "RESULTS", results_dir)
    monkeypatch.setattr(runner, "COMPAT", compat_dir)
    (compat_dir / "kcat" / "oracle-differs.txt").write_text(
        "legacy.message_format_v0  # Kafka 4 closes the connection\n"
    )

    def write(name: str, **statuses: str) -> None:
        found = {c: {**r, "detail": f"{c} {r['status']}"} for c, r in _results(**statuses).items()}
        (results_dir / f"{name}.json").write_text(json.dumps({"version": "1", "cases": found}))

    write("kcat", auto_create="pass", legacy__message_format_v0="pass", max_message__over="fail")
    write(
        "kcat-oracle",
        auto_create="fail",
        legacy__message_format_v0="fail",
        max_message__over="pass",
    )
    text = report.render()
    kafka_text = text.partition("### Apache Kafka 4.4 (the oracle), one broker")[2]
    kafka_text = kafka_text.partition("###")[0]
    rows = {
        line.split("|")[1].strip(): line.split("|")[report.CLIENTS.index("kcat") + 2].strip()
        for line in kafka_text.splitlines()
        if line.startswith("| `")
    }
    assert rows["`auto_create`"] == "**FAIL**"
    assert rows["`legacy.message_format_v0`"] == "differs"
    assert rows["`max_message.over`"] == "pass"
    assert rows["`failover.kill_leader`"] == "excluded"
    assert "| **total** | not run | not run | not run | 1 pass / 1 fail / 1 differs / 0 n/a |" in (
        kafka_text
    )
    assert "- kcat `legacy.message_format_v0`: Kafka 4 closes the connection" in kafka_text
    assert "- kcat `max_message.over`: fail on wirebroker, pass on Apache Kafka" in kafka_text
    assert "`auto_create` (fail): auto_create fail" in text.partition("Apache Kafka, one broker")[2]
    # a listed difference is no failure for run-tests' list of causes; the rest is
    assert report.failed_cases() == [
        "kcat-oracle: auto_create: auto_create fail",
        "kcat: max_message.over: max_message.over fail",
    ]


def test_stable_details_drop_what_changes_from_run_to_run() -> None:
    kcat = (
        "TIMEOUT: kcat exit 1: %6|1796610335.043|FAIL|rdkafka#producer-1| "
        "[thrd:127.0.0.1:35411/bootstrap]: 127.0.0.1:35411/1: Disconnected (after 4ms in state UP)"
    )
    assert runner.stable(kcat) == (
        "TIMEOUT: kcat exit 1: %6|T|FAIL|rdkafka#producer-1| "
        "[thrd:127.0.0.1:PORT/bootstrap]: 127.0.0.1:PORT/1: Disconnected (in state UP)"
    )
    assert runner.stable("metadata: {'kcat-a1b2c3-adm-parts-11': 2}", "a1b2c3") == (
        "metadata: {'kcat-adm-parts-11': 2}"
    )
    assert runner.stable("100 topics; offset 1234567890") == "100 topics; offset 1234567890"
