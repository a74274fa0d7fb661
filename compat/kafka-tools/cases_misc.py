"""kafka-get-offsets, kafka-transactions, the perf tests, kafka-delete-records,
kafka-log-dirs and kafka-cluster cases."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from target import (
    Target,
    WireTxn,
    cluster_id,
    coordinator,
    last_stable,
    list_offset,
    recent_base_ts,
    stored_bytes,
    table,
    wait_until,
)

from compat.scenarios.wire import EARLIEST, LATEST
from protocol.api import ApiKey
from protocol.records import RecordSpec


def _offsets(t: Target, *args: str) -> dict[tuple[str, int], int]:
    ran = t.tool("kafka-get-offsets", "--bootstrap-server", t.bootstrap, *args).expect(0)
    out = {}
    for line in ran.lines:
        topic, partition, offset = line.rsplit(":", 2)
        out[(topic, int(partition))] = int(offset)
    return out


def get_offsets(t: Target) -> str:
    topic = t.name("offsets")
    base = recent_base_ts()
    stamps = {0: [1000, 3000, 2000], 1: [1500]}  # out of order: the max is not the last
    with t.wire() as w:
        w.create_topic(topic, 2)
        for p, ts in stamps.items():
            w.produce(topic, p, [RecordSpec(b"k", b"v", timestamp=base + s) for s in ts])
        expect = {
            "-1": {(topic, 0): 3, (topic, 1): 1},
            "-2": {(topic, 0): 0, (topic, 1): 0},
            "-3": {(topic, 0): 1, (topic, 1): 0},
            str(base + 2500): {(topic, 0): 1},  # partition 1 has no record that late
        }
        for time_arg, want in expect.items():
            answers = {(topic, p): list_offset(w, topic, p, int(time_arg)) for p in (0, 1)}
            assert {k: v for k, v in answers.items() if v >= 0} == want, (time_arg, answers)
    for time_arg, want in expect.items():
        # -3 through --topic-partitions (a partition range), the others through --topic
        select = ["--topic", topic]
        if time_arg == "-3":
            select = ["--topic-partitions", f"{topic}:0,{topic}:1"]
        got = _offsets(t, *select, "--time", time_arg)
        assert got == want, (time_arg, got, want)
    return (
        "--time -1 (latest), -2 (earliest), -3 (max timestamp, out of order timestamps; "
        "--topic-partitions) and a timestamp (a partition without a later record "
        "is left out) print what ListOffsets answers"
    )


def _columns(text: str) -> list[dict[str, str]]:
    """kafka-transactions' tab-separated tables."""
    rows = [
        [c.strip() for c in line.rstrip("\t").split("\t")]
        for line in text.splitlines()
        if "\t" in line
    ]
    if not rows:
        return []
    head = rows[0]
    return [dict(zip(head, r, strict=False)) for r in rows[1:]]


def _txn(t: Target, *args: str) -> list[dict[str, str]]:
    ran = t.tool("kafka-transactions", "--bootstrap-server", t.bootstrap, *args).expect(0)
    return _columns(ran.out)


def _open_transaction(t: Target, prefix: str) -> tuple[str, str, WireTxn, int]:
    topic, tid = t.name(prefix), t.name(prefix + "-id")
    with t.wire() as w:
        w.create_topic(topic, 1)
        w.produce(topic, 0, [RecordSpec(b"k", b"plain")])
    txn = WireTxn(t.wire(), tid)
    txn.add(topic, [0])
    start = txn.produce(topic, 0, [RecordSpec(None, b"x"), RecordSpec(None, b"y")])
    return topic, tid, txn, start


def transactions_describe(t: Target) -> str:
    topic, tid, txn, start = _open_transaction(t, "txd")
    try:
        node = coordinator(txn.w, tid, 1)
        listed = [r for r in _txn(t, "list") if r["TransactionalId"] == tid]
        pid = str(txn.producer_id)
        assert listed == [
            {
                "TransactionalId": tid,
                "Coordinator": str(node),
                "ProducerId": pid,
                "TransactionState": "Ongoing",
            }
        ], listed
        [desc] = _txn(t, "describe", "--transactional-id", tid)
        assert (desc["CoordinatorId"], desc["ProducerId"], desc["ProducerEpoch"]) == (
            str(node),
            pid,
            str(txn.epoch),
        )
        assert (desc["TransactionState"], desc["TopicPartitions"]) == ("Ongoing", f"{topic}-0"), (
            desc
        )
        [prod] = _txn(t, "describe-producers", "--topic", topic, "--partition", "0")
        assert (prod["ProducerId"], prod["ProducerEpoch"], prod["LastSequence"]) == (
            pid,
            str(txn.epoch),
            "1",
        )
        assert prod["CurrentTransactionStartOffset"] == str(start), prod
        broker = str(txn.w.leader(topic, 0))
        # every open transaction is a candidate with a 0 minute timeout; it is not hanging
        # because its coordinator has it ongoing
        hanging = _txn(t, "find-hanging", "--broker-id", broker, "--max-transaction-timeout", "0")
        assert hanging == [], hanging
        txn.end(commit=True)
        wait_until("the transaction to complete", lambda: txn.state() == "CompleteCommit")
        [prod] = _txn(t, "describe-producers", "--topic", topic, "--partition", "0")
        assert prod["CurrentTransactionStartOffset"] == "None", prod
    finally:
        txn.w.close()
    return (
        "an open transaction: list (id, coordinator, producer id, Ongoing), describe (epoch, "
        "partitions), describe-producers (last sequence, start offset) match the producer; "
        "find-hanging finds none (ongoing at its coordinator); after commit: CompleteCommit, no "
        "open transaction at the partition"
    )


def transactions_abort(t: Target) -> str:
    topic, _tid, txn, start = _open_transaction(t, "txa")
    try:
        w = txn.w
        assert last_stable(w, topic, 0) == start, (last_stable(w, topic, 0), start)
        args = ("--topic", topic, "--partition", "0", "--start-offset", str(start))
        ran = t.tool("kafka-transactions", "--bootstrap-server", t.bootstrap, "abort", *args)
        ran.expect(0)
        end = w.list_offset(topic, 0, LATEST)
        assert end == start + 3, (end, start)
        assert last_stable(w, topic, 0) == end, "the last stable offset did not move"
        _, markers = w.read_log(topic, 0)
        assert [(m.offset, m.producer_id, m.commit) for m in markers] == [
            (start + 2, txn.producer_id, False)
        ], markers
        [prod] = _txn(t, "describe-producers", "--topic", topic, "--partition", "0")
        assert prod["CurrentTransactionStartOffset"] == "None", prod
    finally:
        txn.w.close()
    return (
        "abort --start-offset on an open transaction writes one ABORT marker of its producer "
        "after its records; the last stable offset moves to the end; describe-producers shows no "
        "open transaction"
    )


SUMMARY = re.compile(
    r"^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th\.$",
    re.M,
)


def _perf(t: Target, topic: str, records: int, rate: int, *extra: str) -> tuple[int, float]:
    ran = t.tool(
        "kafka-producer-perf-test",
        *("--bootstrap-server", t.bootstrap, "--topic", topic, "--num-records", str(records)),
        *("--record-size", "100", "--throughput", str(rate), *extra),
    ).expect(0)
    m = SUMMARY.search(ran.out)
    assert m is not None, ran.out
    return int(m.group(1)), float(m.group(2))


def producer_perf(t: Target) -> str:
    topic = t.topic("perf", 2)
    sent, rate = _perf(t, topic, 3000, 1500, "--command-property", "acks=all")
    assert sent == 3000, sent
    assert rate <= 1500 * 1.1, f"{rate} records/s over the 1500 cap"
    with t.wire() as w:
        stored = [r for p in (0, 1) for r in w.read(topic, p)]
    assert len(stored) == 3000, len(stored)
    assert {len(r.value or b"") for r in stored} == {100}
    return (
        "3000 records of 100 bytes, acks=all, capped at 1500/s: the summary says 3000 sent at "
        "no more than the cap, and the broker holds exactly 3000 records of 100 bytes"
    )


def producer_perf_transactional(t: Target) -> str:
    topic = t.name("perftx")
    with t.wire() as w:
        w.create_topic(topic, 1)
        w.ensure_txn_state_topic()
    sent, _ = _perf(
        t,
        topic,
        1000,
        2000,
        "--transactional-id",
        t.name("perftx-id"),
        "--transaction-duration-ms",
        "200",
    )
    assert sent == 1000, sent
    with t.wire() as w:
        records, markers = w.read_log(topic, 0)
        end = w.list_offset(topic, 0, LATEST)
        assert last_stable(w, topic, 0) == end
    assert len(records) == 1000 and all(r.transactional for r in records)
    assert markers and all(m.commit for m in markers), markers
    assert markers[-1].offset == end - 1, (markers[-1], end)
    return (
        "--transactional-id with 200 ms transactions: 1000 transactional records, every "
        "transaction ended by a COMMIT marker, the last stable offset at the end"
    )


def consumer_perf(t: Target) -> str:
    topic = t.name("cperf")
    with t.wire() as w:
        w.create_topic(topic, 2)
        for p in (0, 1):
            for _chunk in range(4):
                w.produce(topic, p, [RecordSpec(None, b"x" * 100) for _ in range(250)])
    ran = t.tool(
        "kafka-consumer-perf-test",
        *("--bootstrap-server", t.bootstrap, "--topic", topic, "--num-records", "2000"),
        *("--timeout", "30000"),
    ).expect(0)
    head, values = ran.lines[-2], ran.lines[-1]
    row = dict(
        zip(
            [h.strip() for h in head.split(",")],
            [v.strip() for v in values.split(",")],
            strict=True,
        )
    )
    assert int(row["data.consumed.in.nMsg"]) == 2000, row
    assert abs(float(row["data.consumed.in.MB"]) - 2000 * 100 / 1024 / 1024) < 0.01, row
    return "--num-records 2000: its report counts 2000 records and their 100-byte payloads"


def delete_records(t: Target) -> str:
    topic = t.name("delrec")
    with t.wire() as w:
        w.create_topic(topic, 2)
        for p in (0, 1):
            w.produce(topic, p, [RecordSpec(None, f"{i}".encode()) for i in range(10)])
    spec = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": 0, "offset": 4},
            {"topic": topic, "partition": 1, "offset": -1},
        ],
    }
    ran = t.tool(
        "kafka-delete-records",
        "--bootstrap-server",
        t.bootstrap,
        "--offset-json-file",
        t.file("d.json", json.dumps(spec)),
    ).expect(0)
    assert f"partition: {topic}-0\tlow_watermark: 4" in ran.out, ran.out
    assert f"partition: {topic}-1\tlow_watermark: 10" in ran.out, ran.out
    with t.wire() as w:
        assert [w.list_offset(topic, p, EARLIEST) for p in (0, 1)] == [4, 10]
        assert [r.offset for r in w.read(topic, 0, 4)] == list(range(4, 10))
    beyond = {"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 11}]}
    bad = t.tool(
        "kafka-delete-records",
        "--bootstrap-server",
        t.bootstrap,
        "--offset-json-file",
        t.file("b.json", json.dumps(beyond)),
    )
    assert "OffsetOutOfRangeException" in bad.out + bad.err, bad.out + bad.err
    return (
        "deleting before offset 4 and before the high watermark (-1) moves the log start "
        "offsets to 4 and 10 (ListOffsets earliest); an offset past the end is refused "
        "(OffsetOutOfRangeException)"
    )


def log_dirs(t: Target) -> str:
    topic = t.name("logdirs")
    with t.wire() as w:
        w.create_topic(topic, 2)
        w.produce(topic, 0, [RecordSpec(b"k", b"v" * 50) for _ in range(5)])
        w.produce(topic, 1, [RecordSpec(b"k", b"w" * 10)])
        sizes = {p: stored_bytes(w, topic, p) for p in (0, 1)}
        brokers = set(w.brokers())
    ran = t.tool(
        "kafka-log-dirs", "--bootstrap-server", t.bootstrap, "--describe", "--topic-list", topic
    )
    doc = json.loads(ran.expect(0).lines[-1])
    assert {b["broker"] for b in doc["brokers"]} == brokers, doc
    seen = {}
    for broker in doc["brokers"]:
        for log_dir in broker["logDirs"]:
            assert log_dir["error"] is None, log_dir
            for part in log_dir["partitions"]:
                assert part["offsetLag"] == 0 and part["isFuture"] is False, part
                seen[part["partition"]] = part["size"]
    assert seen == {f"{topic}-{p}": s for p, s in sizes.items()}, (seen, sizes)
    return (
        "--describe --topic-list: every broker, no error, each partition with the size of the "
        "batches Fetch returns from offset 0, no lag"
    )


def cluster_id_case(t: Target) -> str:
    with t.wire() as w:
        cid = cluster_id(w)
        brokers = w.brokers()
    ran = t.tool("kafka-cluster", "cluster-id", "--bootstrap-server", t.bootstrap).expect(0)
    assert ran.lines == [f"Cluster ID: {cid}"], ran.out
    listed = t.tool("kafka-cluster", "list-endpoints", "--bootstrap-server", t.bootstrap).expect(0)
    rows = table(listed.out, "ID")
    got = {int(r["ID"]): f"{r['HOST']}:{r['PORT']}" for r in rows}
    assert got == brokers, (got, brokers)
    assert {(r["STATE"], r["ENDPOINT_TYPE"]) for r in rows} == {("unfenced", "broker")}, rows
    return "cluster-id prints Metadata's cluster id; list-endpoints lists every broker's endpoint"


def acls_without_authorizer(t: Target) -> str:
    ran = t.tool("kafka-acls", "--bootstrap-server", t.bootstrap, "--list").expect(1)
    text = ran.out + ran.err
    want = "SecurityDisabledException: No Authorizer is configured on the broker"
    assert want in text, ran.error()
    return (
        "--list against a broker without an authorizer fails (exit 1) with Kafka's answer, "
        "SECURITY_DISABLED: No Authorizer is configured on the broker"
    )


def _quotas(t: Target, user: str) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    """The client quota entities naming `user`, through the wire oracle (DescribeClientQuotas)."""
    with t.wire() as w:
        body = {"components": [{"entity_type": "user", "match_type": 0, "match": user}]}
        answer = w.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, body | {"strict": False})
    assert answer.error_code == 0, answer
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry["values"]
        }
        for entry in answer.entries
    }


def configs_client_quotas(t: Target) -> str:
    user = t.name("quser")
    base = ("kafka-configs", "--bootstrap-server", t.bootstrap)
    entity = ("--entity-type", "users", "--entity-name", user, "--entity-type", "clients")
    entity += ("--entity-default",)
    added = "consumer_byte_rate=2048,request_percentage=12.5"
    t.tool(*base, "--alter", *entity, "--add-config", added).expect(0)
    key = (("client-id", None), ("user", user))
    _await_quotas(t, user, {key: {"consumer_byte_rate": 2048.0, "request_percentage": 12.5}})
    shown = t.tool(*base, "--describe", *entity).expect(0)
    line = f"Quota configs for user-principal '{user}', the default client-id are"
    assert line in ran_text(shown), shown.out
    assert "consumer_byte_rate=2048.0, request_percentage=12.5" in ran_text(shown), shown.out
    t.tool(*base, "--alter", *entity, "--delete-config", "request_percentage").expect(0)
    _await_quotas(t, user, {key: {"consumer_byte_rate": 2048.0}})
    return (
        "--alter --add-config / --delete-config for a user's default client id are stored "
        "(DescribeClientQuotas); --describe prints them"
    )


def _await_quotas(
    t: Target, user: str, want: dict[tuple[tuple[str, str | None], ...], dict[str, float]]
) -> None:
    """Until the broker describes `want` (Kafka's broker learns its controller's change a
    moment later; 10 s at most)."""
    deadline = time.monotonic() + 10
    while _quotas(t, user) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _quotas(t, user) == want, _quotas(t, user)


def ran_text(ran: Any) -> str:
    return str(ran.out) + str(ran.err)
