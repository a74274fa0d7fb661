"""Generate compat/REPORT.md from the results the compatibility runs wrote.

    python tools/compat_report.py [--check | --failed]

Inputs (written by compat/<client>/run [--cluster] and compat/kafka-python-suite/run):
    compat/results/<client>.json            {"client", "version", "cases": {id: {status,
                                             detail}}}, status pass / fail / n/a
    compat/results/<client>-cluster.json    the same for the 3-broker row (`--cluster`)
    compat/results/<client>[-cluster]-oracle.json  the same row against Apache Kafka 4.4
                                             (`--oracle`), plus "broker"
    compat/<client>/oracle-differs[-cluster].txt  the cases that pass on wirebroker and not on
                                             Kafka, each with its reason (`case  # reason`)
    compat/results/<client>-consumer[-oracle].json, <client>-cluster-consumer[-oracle].json
                                             the consumer group protocol's rows (`--group-protocol
                                             consumer`: the group cases, KIP-848 members)
    compat/results/kafka-python-suite.json  {"version", "kafka_version", "tests": {id: {status,
                                             detail}}}, status passed / failed / skipped /
                                             excluded
    compat/results/kafka-tools.json         {"tools", "cases": {id: {status, detail, "kafka":
    compat/results/kafka-streams.json        {status, detail}}}}: wirebroker's outcome and
                                             Apache Kafka's (compat/scenarios/twosided.py)
Output: compat/REPORT.md -- client x scenario tables, one broker and a 3-broker cluster on
wirebroker, and the same rows on Apache Kafka (rows in the order of
`compat.scenarios.cases.CASES`, one column per client; a case that does not apply to a row is
"excluded", with the reason from `Case.not_in`) with per-client totals, the notes of every n/a
and failed cell, the listed differences from Kafka with their reasons, the kafka-python
suite's figures with every failed, skipped and excluded test, and a "Kafka's tools" and a
"Kafka Streams" table (each case on wirebroker and on Apache Kafka). In the Kafka tables a
case that passes on wirebroker and fails on Kafka is "differs" when listed in oracle-differs
(else **FAIL**). A client without a results file shows "not run" (never a pass). The
output depends only on the inputs (no dates, no timings), so it changes only when a result
does. `--check` exits 1 when REPORT.md differs from what the inputs give. `--failed` writes
nothing: it prints every failed case of every results file with its detail (tools/run-tests
prints it last when the matrix failed, so the tail of a CI log names the case and the cause).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compat.scenarios.cases import (  # noqa: E402
    CASES,
    CLUSTER,
    CLUSTER_CONSUMER,
    CONSUMER,
    ROWS,
    SINGLE_BROKER,
)
from compat.scenarios.runner import read_differs  # noqa: E402

RESULTS = ROOT / "compat" / "results"
REPORT = ROOT / "compat" / "REPORT.md"
CLIENTS = ["kafka-python", "aiokafka", "confluent-kafka", "kcat", "kafkajs", "java-client"]
#: The clients with a consumer group protocol row (`run --group-protocol consumer`).
CONSUMER_PROTOCOL_CLIENTS = ["java-client", "confluent-kafka"]
#: Its columns: (row, on Apache Kafka, heading).
CONSUMER_PROTOCOL_COLUMNS = [
    (CONSUMER, False, "one broker"),
    (CLUSTER_CONSUMER, False, "3-broker cluster"),
    (CONSUMER, True, "Apache Kafka"),
    (CLUSTER_CONSUMER, True, "Apache Kafka, 3 nodes"),
]
MARK = {"pass": "pass", "fail": "**FAIL**", "n/a": "n/a"}


def load_row(client: str, row: str, *, oracle: bool = False) -> dict[str, Any] | None:
    name = client if row == SINGLE_BROKER else f"{client}-{row}"
    return load(f"{name}-oracle" if oracle else name)


def load(name: str) -> dict[str, Any] | None:
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def scenario_table(
    results: dict[str, dict[str, Any] | None],
    kind: str,
    differs: dict[str, dict[str, str]] | None = None,
) -> list[str]:
    """The client x case table of one row; `differs` (the Kafka tables): {client: {case:
    reason}}, whose failed cells read "differs" (a listed difference, not a failure)."""
    lines = ["| scenario | " + " | ".join(CLIENTS) + " |", "|---|" + "---|" * len(CLIENTS)]
    for case in CASES:
        row = []
        for client in CLIENTS:
            data = results[client]
            if not case.applies(kind):
                row.append("excluded")
                continue
            if data is None:
                row.append("not run")
                continue
            outcome = data["cases"].get(case.id)
            mark = MARK[outcome["status"]] if outcome else "not run"
            listed = differs is not None and case.id in differs.get(client, {})
            row.append("differs" if listed and mark != "pass" else mark)
        lines.append(f"| `{case.id}` | " + " | ".join(row) + " |")
    totals = []
    for client in CLIENTS:
        data = results[client]
        if data is None:
            totals.append("not run")
            continue
        listed = {} if differs is None else differs.get(client, {})
        statuses = [
            "differs" if cid in listed and c["status"] == "fail" else c["status"]
            for cid, c in data["cases"].items()
        ]
        total = f"{statuses.count('pass')} pass / {statuses.count('fail')} fail / "
        if differs is not None:
            total += f"{statuses.count('differs')} differs / "
        totals.append(total + f"{statuses.count('n/a')} n/a")
    lines.append("| **total** | " + " | ".join(totals) + " |")
    versions = [results[c]["version"] if results[c] else "?" for c in CLIENTS]  # type: ignore[index]
    lines.append("| *version* | " + " | ".join(versions) + " |")
    return lines


def exclusions(kind: str) -> list[str]:
    return [f"- `{c.id}`: {_cell(c.not_in[kind])}" for c in CASES if not c.applies(kind)]


def notes(results: dict[str, dict[str, Any] | None]) -> list[str]:
    out: list[str] = []
    for client in CLIENTS:
        data = results[client]
        if data is None:
            continue
        rows = [(cid, c) for cid, c in data["cases"].items() if c["status"] != "pass"]
        if not rows:
            continue
        out += ["", f"**{client}**", ""]
        order = {c.id: i for i, c in enumerate(CASES)}
        for cid, c in sorted(rows, key=lambda r: order.get(r[0], 999)):
            out.append(f"- `{cid}` ({c['status']}): {_cell(c['detail'])}")
    return out


def differences(
    wirebroker: dict[str, dict[str, Any] | None],
    kafka: dict[str, dict[str, Any] | None],
    differs: dict[str, dict[str, str]],
    row: str = SINGLE_BROKER,
) -> list[str]:
    """The listed differences (oracle-differs) with their reasons, and the cases that passed
    on Kafka but not on wirebroker (gaps of wirebroker's, or of the case)."""
    order = {c.id: i for i, c in enumerate(CASES)}
    listed = [
        f"- {client} `{cid}`: {_cell(reason)}"
        for client in CLIENTS
        for cid, reason in sorted(differs[client].items(), key=lambda d: order.get(d[0], 999))
    ]
    gaps = []
    for client in CLIENTS:
        ours, theirs = wirebroker[client], kafka[client]
        if ours is None or theirs is None:
            continue
        for cid in sorted(theirs["cases"], key=lambda c: order.get(c, 999)):
            mine = ours["cases"].get(cid, {}).get("status")
            if theirs["cases"][cid]["status"] == "pass" and mine not in (None, "pass"):
                gaps.append(f"- {client} `{cid}`: {mine} on wirebroker, pass on Apache Kafka")
    name = "oracle-differs.txt" if row == SINGLE_BROKER else f"oracle-differs-{row}.txt"
    return [
        f"Listed differences (`compat/<client>/{name}`: the case passes on wirebroker",
        "and not on Apache Kafka, for the reason given):",
        "",
        *(listed or ["- none"]),
        "",
        "Passed on Apache Kafka, not on wirebroker:",
        "",
        *(gaps or ["- none"]),
    ]


CONSUMER_PROTOCOL_INTRO = [
    "### The consumer group protocol (KIP-848)",
    "",
    "The cases with group members again, every member with `group.protocol=consumer`",
    "(`compat/<client>/run --group-protocol consumer [--cluster] [--oracle]`): the broker",
    "assigns the partitions (its `uniform` assignor) and its `group.consumer.*` settings give",
    "the session and heartbeat timing (wirebroker's and Kafka's defaults: 45 s, 5 s). The",
    "ratchets: `passing-consumer.txt`, `passing-cluster-consumer.txt`; the Apache Kafka",
    "3-node column is run by hand, as the cluster row's.",
]


def consumer_protocol_section() -> list[str]:
    """The consumer group protocol's rows (KIP-848): each group case per client and row, on
    wirebroker and on Apache Kafka, totals, then the notes of cells that are no pass and the
    listed differences."""
    cols = [(c, *col) for c in CONSUMER_PROTOCOL_CLIENTS for col in CONSUMER_PROTOCOL_COLUMNS]
    data = {(c, row, k): load_row(c, row, oracle=k) for c, row, k, _ in cols}
    differs = {(c, row): read_differs(c, row) for c, row, _, _ in cols}
    lines = [
        "| scenario | " + " | ".join(f"{c}, {head}" for c, _, _, head in cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    notes = []
    for case in (c for c in CASES if c.applies(CONSUMER)):
        cells = []
        for c, row, kafka, head in cols:
            got = data[(c, row, kafka)]
            outcome = None if got is None else got["cases"].get(case.id)
            if outcome is None:
                cells.append("not run")
                continue
            listed = kafka and case.id in differs[(c, row)]
            cells.append(
                "differs" if listed and outcome["status"] != "pass" else MARK[outcome["status"]]
            )
            if outcome["status"] != "pass":
                notes.append(
                    f"- {c}, {head}, `{case.id}` ({outcome['status']}): {_cell(outcome['detail'])}"
                )
        lines.append(f"| `{case.id}` | " + " | ".join(cells) + " |")
    totals = []
    for c, row, kafka, _ in cols:
        got = data[(c, row, kafka)]
        statuses = [] if got is None else [o["status"] for o in got["cases"].values()]
        totals.append(
            f"{statuses.count('pass')} pass / {statuses.count('fail')} fail" if got else "not run"
        )
    lines.append("| **total** | " + " | ".join(totals) + " |")
    listed = [
        f"- {c} ({row}) `{cid}`: {_cell(reason)}"
        for (c, row), reasons in differs.items()
        for cid, reason in reasons.items()
    ]
    return [
        *CONSUMER_PROTOCOL_INTRO,
        "",
        *lines,
        "",
        "Notes on cells that are no pass:",
        "",
        *(notes or ["- none"]),
        "",
        "Listed differences (`compat/<client>/oracle-differs-consumer.txt`, "
        "`oracle-differs-cluster-consumer.txt`):",
        "",
        *(sorted(set(listed)) or ["- none"]),
    ]


def suite_section(suite: dict[str, Any] | None) -> list[str]:
    if suite is None:
        return ["kafka-python's suite: not run."]
    tests = suite["tests"]
    by: dict[str, list[tuple[str, str]]] = {}
    for tid, t in sorted(tests.items()):
        by.setdefault(t["status"], []).append((tid, t["detail"]))
    counted = len(by.get("passed", [])) + len(by.get("failed", []))
    lines = [
        f"kafka-python {suite['version']}'s own `test/integration/` (from its PyPI sdist), run by "
        f"`compat/kafka-python-suite/run` with `KAFKA_VERSION={suite['kafka_version']}` against "
        "one wirebroker:",
        "",
        "| outcome | tests |",
        "|---|---|",
        f"| passed | {len(by.get('passed', []))} |",
        f"| failed | {len(by.get('failed', []))} |",
        f"| skipped by the suite itself (version conditions) | {len(by.get('skipped', []))} |",
        f"| excluded (need ZooKeeper, SASL, SSL or several brokers) | "
        f"{len(by.get('excluded', []))} |",
        f"| **pass rate of the counted tests** | **{len(by.get('passed', []))} / {counted}** |",
    ]
    for status, title in (
        ("failed", "Failed"),
        ("skipped", "Skipped by the suite"),
        ("excluded", "Excluded"),
    ):
        if by.get(status):
            lines += ["", f"{title}:", ""]
            lines += [f"- `{tid}`: {_cell(detail)}" for tid, detail in by[status]]
    return lines


def kafka_sections(
    wirebroker: dict[str, dict[str, Any] | None],
    wirebroker_cluster: dict[str, dict[str, Any] | None],
) -> list[str]:
    """The Kafka tables: the single-broker row (CI) and the cluster row (run by hand), each
    with its listed differences."""
    out = []
    for row, ours in ((SINGLE_BROKER, wirebroker), (CLUSTER, wirebroker_cluster)):
        kafka = {c: load_row(c, row, oracle=True) for c in CLIENTS}
        differs = {c: read_differs(c, row) for c in CLIENTS}
        out += [*KAFKA_INTRO[row], "", *scenario_table(kafka, row, differs), ""]
        out += [*differences(ours, kafka, differs, row), ""]
    return out


KAFKA_INTRO = {
    SINGLE_BROKER: [
        "### Apache Kafka 4.4 (the oracle), one broker",
        "",
        "The same cases against a real single-node KRaft Apache Kafka 4.4.0 with its defaults",
        "(`compat/<client>/run --oracle`; `compat/oracle`): every case that passes on wirebroker",
        "must pass here too, or be listed in `compat/<client>/oracle-differs.txt` with its reason",
        '("differs"; listed below the table), else the run fails.',
    ],
    CLUSTER: [
        "### Apache Kafka 4.4, a 3-node KRaft cluster (run by hand)",
        "",
        "The cluster row against three combined broker+controller Apache Kafka 4.4.0 nodes",
        "(`compat/<client>/run --cluster --oracle`; `ApacheKafkaCluster` in",
        "`compat/oracle/kafka.py`, the settings of wirebroker's cluster fixture): not part of",
        "`compat/run-matrix` (too slow for CI: see `compat/README.md`); these results are from",
        "the last run by hand. Its check: `passing-cluster.txt` and `oracle-differs-cluster.txt`.",
    ],
}


def two_sided_table(data: dict[str, Any] | None, title: str, command: str) -> list[str]:
    """One row per case of a two-sided results file (compat/kafka-tools, compat/kafka-streams:
    compat/scenarios/twosided.py): its outcome on wirebroker and on Apache Kafka, totals,
    then the notes of every cell that is not a pass."""
    if data is None:
        return [f"{title}: not run (`{command}`)."]
    kafka = {cid: c["kafka"] for cid, c in data["cases"].items()}
    lines = ["| case | wirebroker | Apache Kafka |", "|---|---|---|"]
    for cid, c in data["cases"].items():
        lines.append(f"| `{cid}` | {MARK[c['status']]} | {MARK[kafka[cid]['status']]} |")
    totals = []
    for outcomes in (
        [c["status"] for c in data["cases"].values()],
        [k["status"] for k in kafka.values()],
    ):
        totals.append(
            f"{outcomes.count('pass')} pass / {outcomes.count('fail')} fail / "
            f"{outcomes.count('n/a')} n/a"
        )
    lines.append(f"| **total** | {totals[0]} | {totals[1]} |")
    notes = [
        f"- `{cid}` on {side} ({o['status']}): {_cell(o['detail'])}"
        for cid, c in data["cases"].items()
        for side, o in (("wirebroker", c), ("Apache Kafka", kafka[cid]))
        if o["status"] != "pass"
    ]
    return [*lines, *(["", "Notes:", "", *notes] if notes else [])]


def notes_sections(*rows: dict[str, dict[str, Any] | None]) -> list[str]:
    """The notes of the n/a and failed cells of each scenario table (one broker, cluster,
    Apache Kafka one broker, Apache Kafka cluster)."""
    titles = ["one broker", "3-broker cluster", "Apache Kafka, one broker"]
    titles.append("Apache Kafka, 3-node cluster")
    out = []
    for title, results in zip(titles, rows, strict=True):
        out += [f"### Notes on n/a and failed cells, {title}", *notes(results), ""]
    return out


def render() -> str:
    results = {c: load_row(c, SINGLE_BROKER) for c in CLIENTS}
    cluster = {c: load_row(c, CLUSTER) for c in CLIENTS}
    assert set(ROWS) == {SINGLE_BROKER, CLUSTER}
    kafka = {c: load_row(c, SINGLE_BROKER, oracle=True) for c in CLIENTS}
    kafka_cluster = {c: load_row(c, CLUSTER, oracle=True) for c in CLIENTS}
    suite = load("kafka-python-suite")
    lines = [
        "# wirebroker compatibility report",
        "",
        "Generated by `tools/compat_report.py` from `compat/results/*.json`, which",
        "`compat/run-matrix` (CI) writes; do not edit by hand. What each cell proves:",
        "`compat/README.md` and `compat/scenarios/cases.py`; open gaps: `compat/*/FINDINGS.md`.",
        "",
        "## Clients x scenarios",
        "",
        "pass: the case passed with that client; **FAIL**: it ran and failed; n/a: the client",
        "cannot express the case (the note says why); not run: no result recorded; excluded:",
        "the case does not apply to that row (the reason is listed below the table).",
        "",
        "### One broker",
        "",
        "One `wirebroker serve` with its defaults (`compat/<client>/run`).",
        "",
        *scenario_table(results, SINGLE_BROKER),
        "",
        "Excluded:",
        "",
        *exclusions(SINGLE_BROKER),
        "",
        "### A 3-broker cluster",
        "",
        "Three `wirebroker serve --zookeeper` processes and a throwaway ZooKeeper",
        "(`compat/<client>/run --cluster`, fixture `compat/scenarios/cluster.py`): every topic",
        "has replication factor 3 (the oracle's, the client's admin calls', auto-created ones),",
        "`min.insync.replicas=2` and acks=all, `__consumer_offsets` has replication factor 3,",
        "and the client bootstraps from all three brokers.",
        "",
        *scenario_table(cluster, CLUSTER),
        "",
        "Excluded:",
        "",
        *exclusions(CLUSTER),
        "",
        *kafka_sections(results, cluster),
        *consumer_protocol_section(),
        "",
        *notes_sections(results, cluster, kafka, kafka_cluster),
        "## kafka-python's own integration suite",
        "",
        *suite_section(suite),
        "",
        "## Kafka's tools",
        "",
        "Apache Kafka 4.4.0's own command-line tools, unchanged (the class each bin/*.sh",
        "runs), against wirebroker and against Apache Kafka 4.4.0 in the same run with the",
        "same assertions (`compat/kafka-tools/run`; what each case proves:",
        "compat/kafka-tools/README.md). The cluster cases run on the 3-broker wirebroker",
        "cluster.",
        "",
        *two_sided_table(load("kafka-tools"), "Kafka's tools", "compat/kafka-tools/run"),
        "",
        "## Kafka Streams",
        "",
        "A Kafka Streams 4.4.0 word count with exactly_once_v2, a RocksDB store, a repartition",
        "topic and a changelog (`compat/kafka-streams/run`; compat/kafka-streams/README.md).",
        "",
        *two_sided_table(load("kafka-streams"), "Kafka Streams", "compat/kafka-streams/run"),
        "",
    ]
    return "\n".join(lines)


def failed_cases() -> list[str]:
    """One entry per failed case or test over all results files: `file: case: detail` (a
    Kafka result's listed difference is no failure)."""
    out = []
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        listed: dict[str, str] = {}
        if path.stem.endswith("-oracle"):
            stem = path.stem.removesuffix("-oracle")
            row = data.get("row", SINGLE_BROKER)
            listed = read_differs(stem.removesuffix(f"-{row}"), row)
        for case, result in {**data.get("cases", {}), **data.get("tests", {})}.items():
            if result.get("status") in ("fail", "failed") and case not in listed:
                out.append(f"{path.stem}: {case}: {result.get('detail', '')}")
            kafka = result.get("kafka") or {}
            if kafka.get("status") == "fail":
                out.append(f"{path.stem} (on Apache Kafka): {case}: {kafka.get('detail', '')}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail if REPORT.md is stale")
    mode.add_argument("--failed", action="store_true", help="print the failed cases")
    args = parser.parse_args(argv)
    if args.failed:
        for line in failed_cases():
            print(line)
        return 0
    text = render()
    if args.check:
        current = REPORT.read_text() if REPORT.exists() else ""
        if current != text:
            print("compat/REPORT.md is stale: run python tools/compat_report.py")
            return 1
        return 0
    REPORT.write_text(text)
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
