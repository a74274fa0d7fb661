"""The oracle: a tiny blocking Kafka client built on this repository's `protocol/` package.

Scenarios use it to set a stage and to check what a client under test did, without trusting
that client (or any other client under test): create topics, write batches with exact
timestamps, read back what is stored (with each batch's codec and timestamp type), read
end/start offsets and committed group offsets, describe configs, list topics.

It speaks fixed request versions (all served by Kafka 4.x); every call has a socket timeout,
and every error code other than NONE raises `WireError(api, code)`. It is deliberately small:
no metadata cache beyond one lookup, retries only where a cluster needs them (below).

    Metadata v9, CreateTopics v5, DeleteTopics v4, Produce v8, Fetch v11, ListOffsets v5,
    DescribeConfigs v3, OffsetFetch v7, OffsetCommit v7, ListGroups v4, FindCoordinator v3,
    InitProducerId v4.

One broker or a cluster. `Wire("h:p")` talks to one broker over one socket. `Wire("h:p,h:p,h:p",
replication_factor=3)` talks to a cluster: one socket per broker it needs, opened on first use.
  - cluster-wide requests (Metadata, CreateTopics, DeleteTopics, DescribeConfigs) go to the
    first bootstrap broker that answers;
  - partition requests (Produce, ListOffsets, Fetch) go to the partition's leader, found with
    Metadata; NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, a refused or reset connection
    (a killed leader) make it look the leader up again and retry, for up to `retry_s` seconds;
  - group requests (OffsetFetch, OffsetCommit) go to the group's coordinator (FindCoordinator),
    retried the same way on COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and
    NOT_COORDINATOR;
  - ListGroups asks every live broker (each lists the groups it coordinates) and merges.
`create_topic(s)` sets the stage completely: it returns only once every live broker's Metadata
shows every partition with a leader and `replication_factor` in-sync replicas and each leader
serves its partition (on one wirebroker that is at once; Apache Kafka's broker hosts a new
partition a moment after it lists it), so a case's client never meets a half-created topic
unless the case wants it.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from protocol.records import RecordSpec, build_batch, decode_records, iter_batches

EARLIEST = -2
LATEST = -1
T = TypeVar("T")

_LEADER_MOVED = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # a broker that has not seen the topic yet
    ErrorCode.NOT_ENOUGH_REPLICAS,  # the ISR is still short after a leader change
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
}
_COORDINATOR_MOVED = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
}


class WireError(RuntimeError):
    """A request the oracle sent came back with an error code."""

    def __init__(self, api: str, code: int, detail: str = "") -> None:
        try:
            name = ErrorCode(code).name
        except ValueError:
            name = str(code)
        super().__init__(f"{api}: {name} {detail}".strip())
        self.code = code
        self.name = name


@dataclass(frozen=True)
class StoredRecord:
    """A record as the broker stores it, plus its batch's codec and timestamp type."""

    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime
    compression: int  # 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    producer_id: int
    transactional: bool = False


@dataclass(frozen=True)
class Marker:
    """A transaction marker (control batch) as the broker stores it."""

    offset: int
    producer_id: int
    commit: bool  # False: ABORT


@dataclass(frozen=True)
class PartitionView:
    """One partition as a broker's Metadata shows it."""

    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class _Conn:
    """One socket to one broker."""

    def __init__(self, address: str, timeout: float) -> None:
        host, _, port = address.rpartition(":")
        self.address = address
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        self.correlation = 0

    def _recv_exact(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError(f"{self.address} closed the connection")
            chunks += chunk
        return bytes(chunks)

    def call(self, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
        self.correlation += 1
        frame = encode_request(int(api), version, self.correlation, "compat-oracle", body)
        self.sock.sendall(frame)
        (size,) = struct.unpack(">i", self._recv_exact(4))
        correlation, response = decode_response(int(api), version, self._recv_exact(size))
        if correlation != self.correlation:
            raise ConnectionError(f"correlation id {correlation} != {self.correlation}")
        return response

    def close(self) -> None:
        self.sock.close()


class _Routing:
    """`Wire`'s transport: one connection per broker, requests routed to the home broker, a
    partition's leader or a group's coordinator, and retries while those move."""

    def __init__(
        self,
        bootstrap: str,
        timeout: float = 15.0,
        *,
        replication_factor: int = 1,
        retry_s: float = 30.0,
    ) -> None:
        self.bootstrap = [a.strip() for a in bootstrap.split(",") if a.strip()]
        self.timeout = timeout
        self.replication_factor = replication_factor
        self.retry_s = retry_s
        self._conns: dict[str, _Conn] = {}
        self._home: str | None = None
        self._leaders: dict[tuple[str, int], str] = {}
        self._producer: tuple[int, int] | None = None  # (id, epoch) of `produce(idempotent=)`
        self._sequences: dict[tuple[str, int], int] = {}
        errors = []
        for address in self.bootstrap:
            try:
                self._conn(address)
            except OSError as exc:
                errors.append(f"{address}: {exc}")
                continue
            self._home = address
            break
        if self._home is None:
            raise ConnectionError(f"no bootstrap broker answers: {'; '.join(errors)}")

    def close(self) -> None:
        for conn in self._conns.values():
            with contextlib.suppress(OSError):
                conn.close()
        self._conns.clear()

    # -- transport -------------------------------------------------------------------------
    def _conn(self, address: str) -> _Conn:
        conn = self._conns.get(address)
        if conn is None:
            conn = self._conns[address] = _Conn(address, self.timeout)
        return conn

    def _drop(self, address: str) -> None:
        conn = self._conns.pop(address, None)
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()

    def call(
        self, api: ApiKey, version: int, body: dict[str, Any], address: str | None = None
    ) -> Any:
        """One request to `address` (default: the bootstrap broker that answered)."""
        target = address or self._home
        assert target is not None
        try:
            return self._conn(target).call(api, version, body)
        except OSError:
            self._drop(target)
            raise

    def _retrying(self, what: str, retriable: set[ErrorCode], attempt: Callable[[], T]) -> T:
        """`attempt()` until it returns, retrying (with fresh lookups) on `retriable` errors
        and connection failures for up to `retry_s` seconds."""
        deadline = time.monotonic() + self.retry_s
        while True:
            try:
                return attempt()
            except WireError as exc:
                if exc.code not in retriable or time.monotonic() > deadline:
                    raise
            except OSError as exc:  # ConnectionError, refused, reset, timeout
                if time.monotonic() > deadline:
                    raise ConnectionError(f"{what}: {exc}") from exc
            self._leaders.clear()
            time.sleep(0.1)

    @staticmethod
    def _check(api: str, code: int, detail: str = "") -> None:
        if code != 0:
            raise WireError(api, code, detail)

    # -- cluster ---------------------------------------------------------------------------
    def _metadata(self, topics: list[str] | None, address: str | None = None) -> Any:
        body = {
            "topics": None if topics is None else [{"name": n} for n in topics],
            "allow_auto_topic_creation": False,
        }
        return self.call(ApiKey.METADATA, 9, body, address)

    def brokers(self) -> dict[int, str]:
        """{node id: "host:port"} of the live (registered) brokers."""
        resp = self._metadata([])
        return {b.node_id: f"{b.host}:{b.port}" for b in resp.brokers}

    def controller(self) -> int:
        return int(self._metadata([]).controller_id)

    def partitions(self, topic: str, address: str | None = None) -> dict[int, PartitionView]:
        """{partition: leader, epoch, replicas, ISR} as one broker (default: home) sees it."""
        resp = self._metadata([topic], address)
        out: dict[int, PartitionView] = {}
        for t in resp.topics:
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                continue
            for p in t.partitions:
                out[p.partition_index] = PartitionView(
                    int(p.leader_id),
                    int(p.leader_epoch),
                    tuple(p.replica_nodes),
                    tuple(p.isr_nodes),
                )
        return out

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader as the home broker sees it (-1: none)."""
        view = self.partitions(topic).get(partition)
        return -1 if view is None else view.leader

    def _leader_address(self, topic: str, partition: int) -> str:
        key = (topic, partition)
        if key not in self._leaders:
            resp = self._metadata([topic])
            nodes = {b.node_id: f"{b.host}:{b.port}" for b in resp.brokers}
            for t in resp.topics:
                for p in t.partitions:
                    if p.leader_id in nodes:
                        self._leaders[(t.name, p.partition_index)] = nodes[p.leader_id]
            if key not in self._leaders:
                raise WireError("Metadata", ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition}")
        return self._leaders[key]

    def _at_leader(self, topic: str, partition: int, fn: Callable[[str], T]) -> T:
        return self._retrying(
            f"{topic}-{partition}",
            _LEADER_MOVED,
            lambda: fn(self._leader_address(topic, partition)),
        )

    def _coordinator(self, group: str) -> str:
        body = {"key": group, "key_type": 0}
        resp = self.call(ApiKey.FIND_COORDINATOR, 3, body)
        self._check("FindCoordinator", resp.error_code, group)
        return f"{resp.host}:{resp.port}"


class Wire(_Routing):
    """Connections to `bootstrap` ("host:port[,host:port...]"); use as a context manager."""

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ensure_offsets_topic(self, timeout: float = 60.0) -> None:
        """Have the brokers create `__consumer_offsets` (a FindCoordinator does, as in Kafka)
        and wait until it is ready (`wait_topics_ready`). A case that stops a broker and then
        consumes through a group calls this first: with offsets.topic.replication.factor 3,
        Kafka and wirebroker alike refuse to create the topic while only two brokers are up
        (COORDINATOR_NOT_AVAILABLE until the third is back)."""
        self._ensure_coordinator_topic(0, "__consumer_offsets", timeout)

    def ensure_txn_state_topic(self, timeout: float = 60.0) -> None:
        """The same for `__transaction_state` (its own replication factor): ready on every
        live broker before a transactional producer starts, so no partition leader checks a
        transaction (KIP-890) against a coordinator it cannot find yet."""
        self._ensure_coordinator_topic(1, "__transaction_state", timeout, min_isr=1)

    def _ensure_coordinator_topic(
        self, key_type: int, name: str, timeout: float, min_isr: int | None = None
    ) -> None:
        deadline = time.monotonic() + timeout
        while True:
            body = {"key": "compat-coordinator-probe", "key_type": key_type}
            resp = self.call(ApiKey.FIND_COORDINATOR, 3, body)
            if resp.error_code == 0:
                break
            if time.monotonic() > deadline:
                self._check("FindCoordinator", resp.error_code, f"{name} not created")
            time.sleep(0.05)
        self.wait_topics_ready([name], max(1.0, deadline - time.monotonic()), min_isr=min_isr)

    def ensure_producer_ids(self) -> None:
        """Wait (up to `retry_s`) until the broker hands out producer ids: InitProducerId
        without a transactional id answers at once on wirebroker; a freshly started Apache
        Kafka answers COORDINATOR_LOAD_IN_PROGRESS until its transaction coordinator has a
        block of ids from the controller, and clients back off for many seconds on that."""
        body = {"transactional_id": None, "transaction_timeout_ms": 60_000}

        def attempt() -> None:
            resp = self.call(ApiKey.INIT_PRODUCER_ID, 4, body)
            self._check("InitProducerId", resp.error_code)

        self._retrying("InitProducerId", _COORDINATOR_MOVED, attempt)

    def wait_topics_ready(
        self, names: list[str], timeout: float = 60.0, min_isr: int | None = None
    ) -> None:
        """Every live broker's Metadata shows each partition of `names` with a leader and
        `replication_factor` in-sync replicas (`min_isr`, if given), and each partition's
        leader serves it (`_wait_hosted`)."""
        self._wait_metadata(names, timeout, min_isr)
        self._wait_hosted(names)

    def _wait_hosted(self, names: list[str]) -> None:
        """Each partition's leader answers ListOffsets for it (retried for up to `retry_s`).
        Apache Kafka's broker lists a new partition in Metadata a moment before its replica
        manager hosts it (partition after partition): a client that produces to every
        partition at once in that moment gets NOT_LEADER_OR_FOLLOWER or
        UNKNOWN_TOPIC_OR_PARTITION for some, and kafkajs then re-sends the whole request,
        duplicating the batches that were written (found by the oracle row)."""
        for name in names:
            for partition in sorted(self.partitions(name)):
                self.list_offset(name, partition, LATEST)

    def _wait_metadata(self, names: list[str], timeout: float, min_isr: int | None) -> None:
        want_isr = self.replication_factor if min_isr is None else min_isr
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            try:
                brokers = self.brokers()
                ready = True
                for address in brokers.values():
                    resp = self._metadata(names, address)
                    for t in resp.topics:
                        short = [
                            p.partition_index
                            for p in t.partitions
                            if p.leader_id < 0 or len(p.isr_nodes) < want_isr
                        ]
                        if t.error_code or not t.partitions or short:
                            ready = False
                            last = f"{address}: {t.name} error {t.error_code}, short {short[:5]}"
                            break
                    if not ready:
                        break
                if ready:
                    return
            except OSError as exc:
                last = repr(exc)
            if time.monotonic() > deadline:
                raise AssertionError(f"topics not ready after {timeout} s: {last}")
            time.sleep(0.05)

    # -- topics ----------------------------------------------------------------------------
    def topics(self, names: list[str] | None = None) -> dict[str, int]:
        """{topic: partition count} for `names` (None: every topic); no auto-creation.

        A requested topic that does not exist is left out.
        """
        topics = None if names is None else [{"name": n} for n in names]
        body = {"topics": topics, "allow_auto_topic_creation": False}
        resp = self.call(ApiKey.METADATA, 9, body)
        out: dict[str, int] = {}
        for t in resp.topics:
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                continue
            self._check("Metadata", t.error_code, t.name)
            out[t.name] = len(t.partitions)
        return out

    def create_topic(
        self, name: str, partitions: int = 1, configs: dict[str, str] | None = None
    ) -> None:
        topic = {
            "name": name,
            "num_partitions": partitions,
            "replication_factor": self.replication_factor,
            "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
        }
        resp = self.call(ApiKey.CREATE_TOPICS, 5, {"topics": [topic], "timeout_ms": 10_000})
        [result] = resp.topics
        self._check("CreateTopics", result.error_code, result.error_message or "")
        self.wait_topics_ready([name])

    def create_topics(self, names: list[str], partitions: int) -> None:
        rf = self.replication_factor
        topics = [
            {"name": n, "num_partitions": partitions, "replication_factor": rf} for n in names
        ]
        resp = self.call(ApiKey.CREATE_TOPICS, 5, {"topics": topics, "timeout_ms": 30_000})
        for result in resp.topics:
            self._check("CreateTopics", result.error_code, result.name)
        self.wait_topics_ready(names, timeout=120)

    def delete_topic(self, name: str) -> None:
        resp = self.call(ApiKey.DELETE_TOPICS, 4, {"topic_names": [name], "timeout_ms": 10_000})
        [result] = resp.responses
        self._check("DeleteTopics", result.error_code, name)

    def topic_configs(self, name: str) -> dict[str, str | None]:
        resource = {"resource_type": 2, "resource_name": name, "configuration_keys": None}
        resp = self.call(ApiKey.DESCRIBE_CONFIGS, 3, {"resources": [resource]})
        [result] = resp.results
        self._check("DescribeConfigs", result.error_code, result.error_message or "")
        return {c.name: c.value for c in result.configs}

    # -- data ------------------------------------------------------------------------------
    def produce(
        self,
        topic: str,
        partition: int,
        records: list[RecordSpec],
        *,
        compression: int = 0,
        base_timestamp: int | None = None,
        idempotent: bool = False,
    ) -> int:
        """Append one batch (acks=-1) at the partition's leader; returns its base offset.

        A retry after a lost connection or a timed-out acks=all write could append the batch
        twice, as with any producer without idempotence: the oracle stages data only on a
        healthy cluster, where that does not happen. With `idempotent` the batch carries
        this Wire's producer id (one InitProducerId, the first time) and the partition's next
        sequence, so the broker drops such a retry (what a case that produces across a broker
        crash needs)."""
        ids = self._idempotence(topic, partition, len(records)) if idempotent else {}
        batch = build_batch(records, compression=compression, base_timestamp=base_timestamp, **ids)
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }

        def attempt(address: str) -> int:
            resp = self.call(ApiKey.PRODUCE, 8, body, address)
            [topic_resp] = resp.responses
            [part] = topic_resp.partition_responses
            self._check("Produce", part.error_code, f"{topic}-{partition}")
            return int(part.base_offset)

        return self._at_leader(topic, partition, attempt)

    def _idempotence(self, topic: str, partition: int, count: int) -> dict[str, int]:
        """The producer fields of an idempotent batch of `count` records (`produce`)."""
        if self._producer is None:
            body = {"transactional_id": None, "transaction_timeout_ms": 60_000}

            def attempt() -> tuple[int, int]:
                resp = self.call(ApiKey.INIT_PRODUCER_ID, 4, body)
                self._check("InitProducerId", resp.error_code)
                return int(resp.producer_id), int(resp.producer_epoch)

            self._producer = self._retrying("InitProducerId", _COORDINATOR_MOVED, attempt)
        sequence = self._sequences.get((topic, partition), 0)
        self._sequences[(topic, partition)] = sequence + count
        producer_id, epoch = self._producer
        return {"producer_id": producer_id, "producer_epoch": epoch, "base_sequence": sequence}

    def list_offset(self, topic: str, partition: int, timestamp: int, isolation: int = 0) -> int:
        """ListOffsets at the leader: LATEST (-1: the high watermark; with `isolation` 1,
        read_committed, the last stable offset), EARLIEST (-2) or a timestamp; -1 when none
        matches."""
        body = {
            "replica_id": -1,
            "isolation_level": isolation,
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": partition, "timestamp": timestamp}],
                }
            ],
        }

        def attempt(address: str) -> int:
            resp = self.call(ApiKey.LIST_OFFSETS, 5, body, address)
            [part] = resp.topics[0].partitions
            self._check("ListOffsets", part.error_code, f"{topic}-{partition}")
            return int(part.offset)

        return self._at_leader(topic, partition, attempt)

    def fetch_raw(self, topic: str, partition: int, offset: int) -> bytes:
        """The batches one Fetch (v11, read_uncommitted, up to 32 MiB) returns from `offset`
        at the partition's leader, as bytes."""
        body = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 64 * 1024 * 1024,
            "isolation_level": 0,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "fetch_offset": offset,
                            "partition_max_bytes": 32 * 1024 * 1024,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }

        def attempt(address: str) -> bytes:
            resp = self.call(ApiKey.FETCH, 11, body, address)
            self._check("Fetch", resp.error_code)
            [part] = resp.responses[0].partitions
            self._check("Fetch", part.error_code, f"{topic}-{partition}")
            return bytes(part.records or b"")

        return self._at_leader(topic, partition, attempt)

    def read(self, topic: str, partition: int, start: int = 0) -> list[StoredRecord]:
        """Every record of the partition from `start` up to the high watermark at call time."""
        return self.read_log(topic, partition, start)[0]

    def read_log(
        self, topic: str, partition: int, start: int = 0
    ) -> tuple[list[StoredRecord], list[Marker]]:
        """`read`, plus the transaction markers (control batches) in the same range."""
        end = self.list_offset(topic, partition, LATEST)
        out: list[StoredRecord] = []
        markers: list[Marker] = []
        offset = start
        while offset < end:
            data = self.fetch_raw(topic, partition, offset)
            progressed = False
            for pos, header in iter_batches(data):
                if header.is_control:
                    if header.base_offset >= offset:
                        for rec in decode_records(data, pos):
                            # control record key: version int16, type int16 (0 ABORT, 1 COMMIT)
                            kind = struct.unpack_from(">h", rec.key or b"\0\0\0\0", 2)[0]
                            markers.append(Marker(rec.offset, header.producer_id, kind == 1))
                    offset = max(offset, header.next_offset)
                    progressed = True
                    continue
                for rec in decode_records(data, pos):
                    if rec.offset < offset:
                        continue
                    out.append(
                        StoredRecord(
                            partition=partition,
                            offset=rec.offset,
                            timestamp=rec.timestamp,
                            timestamp_type=header.timestamp_type,
                            compression=header.compression,
                            key=rec.key,
                            value=rec.value,
                            headers=rec.headers,
                            producer_id=header.producer_id,
                            transactional=header.is_transactional,
                        )
                    )
                    progressed = True
                offset = max(offset, header.next_offset)
            if not progressed and not data:
                raise RuntimeError(f"fetch at {offset} of {topic}-{partition} returned nothing")
        return out, markers

    # -- groups ----------------------------------------------------------------------------
    def committed(self, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
        """{partition: committed offset (-1: none)} of `group`, from its coordinator."""
        body = {
            "group_id": group,
            "topics": [{"name": topic, "partition_indexes": partitions}],
            "require_stable": False,
        }

        def attempt() -> dict[int, int]:
            resp = self.call(ApiKey.OFFSET_FETCH, 7, body, self._coordinator(group))
            self._check("OffsetFetch", resp.error_code, group)
            out: dict[int, int] = {}
            for t in resp.topics:
                for p in t.partitions:
                    self._check("OffsetFetch", p.error_code, f"{t.name}-{p.partition_index}")
                    out[p.partition_index] = int(p.committed_offset)
            return out

        return self._retrying(group, _COORDINATOR_MOVED, attempt)

    def commit(self, group: str, topic: str, offsets: dict[int, int]) -> None:
        """Commit offsets as a member-less ("simple") consumer: generation -1, no member."""
        body = {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "committed_offset": o, "committed_metadata": ""}
                        for p, o in offsets.items()
                    ],
                }
            ],
        }

        def attempt() -> None:
            resp = self.call(ApiKey.OFFSET_COMMIT, 7, body, self._coordinator(group))
            for t in resp.topics:
                for p in t.partitions:
                    self._check("OffsetCommit", p.error_code, f"{t.name}-{p.partition_index}")

        self._retrying(group, _COORDINATOR_MOVED, attempt)

    def groups(self) -> dict[str, str]:
        """{group id: state} from ListGroups v4 at every live broker (each lists the groups it
        coordinates)."""
        out: dict[str, str] = {}
        for address in self.brokers().values():

            def attempt(address: str = address) -> dict[str, str]:
                resp = self.call(ApiKey.LIST_GROUPS, 4, {"states_filter": []}, address)
                self._check("ListGroups", resp.error_code)
                return {g.group_id: g.group_state for g in resp.groups}

            out.update(self._retrying(address, _COORDINATOR_MOVED, attempt))
        return out
