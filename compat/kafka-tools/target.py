"""What a kafka-tools case runs against, and the helpers every case uses.

`Target` is one broker side of a run: wirebroker (one `serve` process, or the 3-broker
cluster for the cluster rows) or Apache Kafka (the oracle). A case gets a Target, runs Kafka's
tools against `t.bootstrap` with `t.tool(...)`, and checks the effect with the wire oracle
(`t.wire()`, this repository's protocol code) and the tool's exit code and output.

Names: the oracle is shared by a whole test run and keeps what a case creates, so every topic
and group a case makes is `kt-<prefix>-<run id>-<n>` (`t.name`); notes a case returns (its
pass message, recorded in the committed results) never contain them.

`WireTxn` is a transactional producer written with the wire oracle (InitProducerId,
AddPartitionsToTxn v3, Produce v8, EndTxn v3; the conversation Kafka's producer has with a
broker when transaction.version 1 is in use): it leaves a transaction open for the
kafka-transactions cases, and writes committed and aborted transactions for the console
consumer's isolation level.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from compat.scenarios.cluster import Cluster
from compat.scenarios.jvm import Background, tool
from compat.scenarios.twosided import KAFKA, WIREBROKER
from compat.scenarios.wire import Wire, WireError
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import RecordSpec, build_batch

__all__ = ["KAFKA", "WIREBROKER", "Ran", "Target", "WireTxn"]


# DescribeConfigs config_source values (Kafka's ConfigSource)
SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32


class ToolFailed(AssertionError):
    pass


@dataclass
class Ran:
    """One finished tool run."""

    argv: list[str]
    code: int
    out: str
    err: str

    def expect(self, code: int = 0) -> Ran:
        if self.code != code:
            raise ToolFailed(f"{self.argv[0]}: exit {self.code} (want {code}): {self.error()}")
        return self

    def error(self) -> str:
        """The tool's error in one line: the first line naming an exception (its message),
        else the first naming an error, else the last line; log lines without their time."""
        lines = [
            re.sub(r"^\[[\d\- :,]+\] ", "", ln.strip())
            for ln in (self.out + "\n" + self.err).splitlines()
            if ln.strip() and not ln.strip().startswith("at ")
        ]
        for test in (
            lambda ln: "Exception:" in ln and "ExecutionException" not in ln,
            lambda ln: "Error" in ln or "ERROR" in ln,
        ):
            found = [ln for ln in lines if test(ln)]
            if found:
                return found[0][:400]
        return lines[-1][:400] if lines else "(no output)"

    @property
    def lines(self) -> list[str]:
        return [line for line in self.out.splitlines() if line.strip()]


@dataclass
class Target:
    side: str  # WIREBROKER or KAFKA
    bootstrap: str
    workdir: Path
    run_id: str
    cluster: Cluster | None = None
    seq: Iterator[int] = field(default_factory=lambda: count(1))

    @property
    def replication_factor(self) -> int:
        return self.cluster.size if self.cluster is not None else 1

    def name(self, prefix: str) -> str:
        return f"kt-{prefix}-{self.run_id}-{next(self.seq)}"

    def wire(self) -> Wire:
        return Wire(self.bootstrap, replication_factor=self.replication_factor)

    def topic(self, prefix: str, partitions: int, configs: dict[str, str] | None = None) -> str:
        """A new topic (`name(prefix)`) made by the wire oracle, where creating it is not
        what a case tests; its name."""
        topic = self.name(prefix)
        with self.wire() as w:
            w.create_topic(topic, partitions, configs)
        return topic

    def tool(self, script: str, *args: str, input: str | None = None) -> Ran:
        argv = [script, *args]
        try:
            done = tool(script, list(args), input=input, timeout=120.0)
        except subprocess.TimeoutExpired as exc:
            raise ToolFailed(f"{script} {' '.join(args)} ran over 120 s") from exc
        return Ran(argv, done.returncode, done.stdout, done.stderr)

    def background(self, script: str, *args: str) -> Background:
        return Background(script, list(args), self.workdir / "background")

    def file(self, name: str, text: str) -> str:
        path = self.workdir / f"{next(self.seq)}-{name}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return str(path)

    def node_ids(self) -> list[int]:
        with self.wire() as w:
            return sorted(w.brokers())


def recent_base_ts() -> int:
    """A base for explicit record timestamps: an hour ago, on a whole second. Recent on
    purpose: records older than retention.ms (7 days) go at the broker's next retention check,
    the active segment included (Kafka deletes it; a 2020 timestamp vanished mid-case)."""
    return (int(time.time()) - 3600) * 1000


def wait_until(what: str, cond: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


def eventually(check: Callable[[], None], timeout: float = 15.0) -> None:
    """`check()` until it stops raising AssertionError (the last one is raised after
    `timeout`): what a tool changed reaches Kafka's brokers through its controller, a moment
    after the tool returned (KRaft metadata propagation); a broker that answers at once
    passes at the first try."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            check()
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.1)


# -- parsing -----------------------------------------------------------------------------------
def table(text: str, first_column: str) -> list[dict[str, str]]:
    """Rows of a whitespace-aligned table with a header line that starts with `first_column`
    (kafka-consumer-groups' output); cells are split on runs of spaces."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        cells = line.split()
        if not cells:
            continue
        if cells[0] == first_column:
            header = cells
            continue
        if header is not None and len(cells) >= len(header):
            rows.append(dict(zip(header, cells, strict=False)))
    return rows


def config_lines(text: str) -> dict[str, tuple[str, str]]:
    """kafka-configs --describe entries: {name: (value, synonyms text)}."""
    out: dict[str, tuple[str, str]] = {}
    for m in re.finditer(r"^  (\S+?)=(.*?) sensitive=\w+ synonyms=\{(.*)\}$", text, re.M):
        out[m.group(1)] = (m.group(2), m.group(3))
    return out


# -- wire helpers beyond compat/scenarios/wire.py ----------------------------------------------
def describe_configs(w: Wire, rtype: int, name: str, address: str | None = None) -> dict:
    """{config: (value, source name)} of one resource, DescribeConfigs v4 with synonyms."""
    body = {
        "resources": [{"resource_type": rtype, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": True,
        "include_documentation": False,
    }
    resp = w.call(ApiKey.DESCRIBE_CONFIGS, 4, body, address)
    [res] = resp.results
    if res.error_code:
        raise WireError("DescribeConfigs", res.error_code, res.error_message or "")
    return {
        c.name: (c.value, SOURCES.get(c.config_source, str(c.config_source))) for c in res.configs
    }


def log_dir_sizes(w: Wire, address: str, topic: str) -> dict[int, int]:
    """{partition: size in bytes} of `topic` on the broker at `address` (DescribeLogDirs v1)."""
    body = {"topics": [{"topic": topic, "partitions": list(range(64))}]}
    resp = w.call(ApiKey.DESCRIBE_LOG_DIRS, 1, body, address)
    out: dict[int, int] = {}
    for result in resp.results:
        for t in result.topics:
            for p in t.partitions:
                if t.name == topic and not p.is_future_key:
                    out[p.partition_index] = int(p.partition_size)
    return out


def stored_bytes(w: Wire, topic: str, partition: int) -> int:
    """The size of the partition's log as its leader's Fetch returns it from offset 0 (every
    batch)."""
    return len(w.fetch_raw(topic, partition, 0))


def cluster_id(w: Wire) -> str:
    resp = w.call(ApiKey.METADATA, 9, {"topics": [], "allow_auto_topic_creation": False})
    return str(resp.cluster_id)


def coordinator(w: Wire, key: str, key_type: int = 0) -> int:
    """The node id of a group's (0) or transactional id's (1) coordinator."""
    deadline = time.monotonic() + 30
    while True:
        resp = w.call(ApiKey.FIND_COORDINATOR, 3, {"key": key, "key_type": key_type})
        if resp.error_code == 0:
            return int(resp.node_id)
        if time.monotonic() > deadline:
            raise WireError("FindCoordinator", resp.error_code, key)
        time.sleep(0.1)


def committed_all(w: Wire, group: str, topic: str, partitions: int) -> dict[int, int]:
    return w.committed(group, topic, list(range(partitions)))


def last_stable(w: Wire, topic: str, partition: int) -> int:
    """ListOffsets LATEST with isolation READ_COMMITTED: the last stable offset."""
    return list_offset(w, topic, partition, -1, isolation=1)


def list_offset(w: Wire, topic: str, partition: int, timestamp: int, isolation: int = 0) -> int:
    """ListOffsets v9 at the home broker (v7+ is needed for -3, max timestamp; the wire
    oracle's v5 is answered UNSUPPORTED_VERSION for it by Kafka)."""
    body = {
        "replica_id": -1,
        "isolation_level": isolation,
        "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "timestamp": timestamp}]}
        ],
    }
    resp = w.call(ApiKey.LIST_OFFSETS, 9, body)
    [part] = resp.topics[0].partitions
    if part.error_code:
        raise WireError("ListOffsets", part.error_code)
    return int(part.offset)


class WireTxn:
    """A transactional producer on the wire oracle (one broker or its cluster's bootstrap)."""

    def __init__(self, w: Wire, transactional_id: str, timeout_ms: int = 60_000) -> None:
        self.w = w
        self.tid = transactional_id
        w.ensure_txn_state_topic()
        self.coordinator = self._coordinator_address()
        body = {
            "transactional_id": transactional_id,
            "transaction_timeout_ms": timeout_ms,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        resp = self._retry(lambda: w.call(ApiKey.INIT_PRODUCER_ID, 4, body, self.coordinator))
        self.producer_id = int(resp.producer_id)
        self.epoch = int(resp.producer_epoch)
        self.sequences: dict[tuple[str, int], int] = {}

    def _coordinator_address(self) -> str:
        node = coordinator(self.w, self.tid, 1)
        return self.w.brokers()[node]

    def _retry(self, call: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + 30
        while True:
            resp = call()
            code = int(resp.error_code)
            if code == 0:
                return resp
            retriable = code in (
                ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                ErrorCode.CONCURRENT_TRANSACTIONS,
                ErrorCode.COORDINATOR_NOT_AVAILABLE,
                ErrorCode.NOT_COORDINATOR,
            )
            if not retriable or time.monotonic() > deadline:
                raise WireError("transaction", code, self.tid)
            time.sleep(0.1)

    def add(self, topic: str, partitions: list[int]) -> None:
        body = {
            "v3_and_below_transactional_id": self.tid,
            "v3_and_below_producer_id": self.producer_id,
            "v3_and_below_producer_epoch": self.epoch,
            "v3_and_below_topics": [{"name": topic, "partitions": partitions}],
        }
        deadline = time.monotonic() + 30
        while True:
            resp = self.w.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, body, self.coordinator)
            codes = {
                p.partition_error_code
                for t in resp.results_by_topic_v3_and_below
                for p in t.results_by_partition
            }
            if codes == {0}:
                return
            if codes != {ErrorCode.CONCURRENT_TRANSACTIONS} or time.monotonic() > deadline:
                raise WireError("AddPartitionsToTxn", max(codes), self.tid)
            time.sleep(0.05)

    def produce(self, topic: str, partition: int, records: list[RecordSpec]) -> int:
        seq = self.sequences.get((topic, partition), 0)
        batch = build_batch(
            records,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=seq,
            is_transactional=True,
        )
        self.sequences[(topic, partition)] = seq + len(records)
        body = {
            "transactional_id": self.tid,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }
        address = self.w._leader_address(topic, partition)
        resp = self.w.call(ApiKey.PRODUCE, 8, body, address)
        [part] = resp.responses[0].partition_responses
        if part.error_code:
            raise WireError("Produce", part.error_code, f"{topic}-{partition}")
        return int(part.base_offset)

    def state(self) -> str:
        """The transaction's state at its coordinator (DescribeTransactions v0)."""
        body = {"transactional_ids": [self.tid]}
        resp = self.w.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, body, self.coordinator)
        [one] = resp.transaction_states
        if one.error_code:
            raise WireError("DescribeTransactions", one.error_code, self.tid)
        return str(one.transaction_state)

    def end(self, commit: bool) -> None:
        body = {
            "transactional_id": self.tid,
            "producer_id": self.producer_id,
            "producer_epoch": self.epoch,
            "committed": commit,
        }
        self._retry(lambda: self.w.call(ApiKey.END_TXN, 3, body, self.coordinator))


@contextmanager
def stopping(proc: Background) -> Iterator[Background]:
    try:
        yield proc
    finally:
        proc.stop()
