"""A tiny blocking Kafka client for test set-up: create topics, produce, read a topic to its end.

It speaks the Kafka protocol through this repository's own encoders (`protocol.codec`,
`protocol.records`), so the test helpers need no client library: users bring their own client
(kafka-python, confluent-kafka, aiokafka, ...) for the code under test, and the helpers stay
out of its way. It works against any Kafka broker that supports the versions below (Apache
Kafka 2.1 to 4.x, wirebroker), single or replicated.

Requests and versions (all non-flexible, so they work with old and new brokers alike):

    Metadata v7      topics (or all), no auto-creation; finds partition leaders
    CreateTopics v4  one topic; then waits until Metadata shows a leader for every partition
                     (on every broker it knows of), so a client may produce at once
    Produce v7       acks=-1 (all in-sync replicas), one uncompressed v2 batch per partition
    ListOffsets v2   earliest (-2) / latest (-1) offsets, read_committed=0
    Fetch v11        from each partition's leader until the end offset taken before reading

Connections: one socket per broker address, opened on first use, one request at a time
(correlation ids checked), every read bounded by `timeout` seconds. Errors: a Kafka error
code becomes `KafkaError(code name, message)`; a retriable one (leader not yet elected, ...)
is retried until `timeout` runs out.

Thread safety: none; one client per thread (the fixtures make one per call).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KafkaError", "Message", "WireClient", "parse_bootstrap"]

_SIZE = struct.Struct(">i")
_CLIENT_ID = "wirebroker-testing"
#: error codes worth a retry while a topic is being created or a leader elected
_RETRIABLE = {
    3,  # UNKNOWN_TOPIC_OR_PARTITION (metadata not propagated yet)
    5,  # LEADER_NOT_AVAILABLE
    6,  # NOT_LEADER_OR_FOLLOWER
    7,  # REQUEST_TIMED_OUT
    13,  # NETWORK_EXCEPTION
    14,  # COORDINATOR_LOAD_IN_PROGRESS
    15,  # COORDINATOR_NOT_AVAILABLE
    19,  # NOT_ENOUGH_REPLICAS
    20,  # NOT_ENOUGH_REPLICAS_AFTER_APPEND
    41,  # NOT_CONTROLLER
    74,  # FENCED_LEADER_EPOCH
    75,  # UNKNOWN_LEADER_EPOCH
}
_TOPIC_ALREADY_EXISTS = 36


class KafkaError(RuntimeError):
    """A Kafka error code in an answer (or no answer within the timeout)."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        super().__init__(f"{_error_name(code)} ({code}): {message}")


def _error_name(code: int) -> str:
    from protocol.errors import ErrorCode

    try:
        return ErrorCode(code).name
    except ValueError:
        return "UNKNOWN_ERROR_CODE"


@dataclass(frozen=True, slots=True)
class Message:
    """One record read back from a topic."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """ "h1:p1,h2:p2" (IPv6 hosts in brackets) -> [(host, port), ...]."""
    out: list[tuple[str, int]] = []
    for item in bootstrap.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"bad bootstrap address {item!r}: expected HOST:PORT")
        out.append((host.strip("[]") or "127.0.0.1", int(port)))
    if not out:
        raise ValueError("empty bootstrap address list")
    return out


def _as_bytes(value: str | bytes | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


class WireClient:
    """A blocking client bound to one cluster (see the module doc). Use as a context manager
    or call close()."""

    def __init__(self, bootstrap: str, *, timeout: float = 30.0) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.timeout = timeout
        self._socks: dict[tuple[str, int], socket.socket] = {}
        self._ids = itertools.count(1)

    # -- plumbing -------------------------------------------------------------------------
    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for sock in self._socks.values():
            with contextlib.suppress(OSError):
                sock.close()
        self._socks.clear()

    def _sock(self, address: tuple[str, int]) -> socket.socket:
        sock = self._socks.get(address)
        if sock is None:
            sock = socket.create_connection(address, timeout=self.timeout)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._socks[address] = sock
        return sock

    def request(self, address: tuple[str, int], api_key: int, version: int, body: Any) -> Any:
        """Send one request to `address`, return the decoded answer (a construct Container)."""
        from protocol.codec import decode_response, encode_request

        cid = next(self._ids)
        frame = encode_request(api_key, version, cid, _CLIENT_ID, body)
        sock = self._sock(address)
        try:
            sock.sendall(frame)
            (size,) = _SIZE.unpack(self._read(sock, 4))
            got, answer = decode_response(api_key, version, self._read(sock, size))
        except OSError:
            self._socks.pop(address, None)
            sock.close()
            raise
        if got != cid:
            raise ConnectionError(f"{address}: correlation id {got}, expected {cid}")
        return answer

    @staticmethod
    def _read(sock: socket.socket, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            buf += chunk
        return bytes(buf)

    def _any(self, api_key: int, version: int, body: Any) -> Any:
        """Send to the first bootstrap address that answers."""
        last: Exception | None = None
        for address in self.bootstrap:
            try:
                return self.request(address, api_key, version, body)
            except OSError as exc:
                last = exc
        raise ConnectionError(f"no broker of {self.bootstrap} answered: {last}")

    # -- metadata -------------------------------------------------------------------------
    def metadata(self, topics: Sequence[str] | None = None, *, auto_create: bool = False) -> Any:
        """The Metadata v7 answer (all topics when `topics` is None); `auto_create` lets the
        broker create missing topics (if its auto.create.topics.enable allows)."""
        body = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": auto_create,
        }
        return self._any(3, 7, body)

    def list_topics(self) -> list[str]:
        """The names of the cluster's topics, internal ones (`__consumer_offsets`) excluded."""
        meta = self.metadata()
        return sorted(t.name for t in meta.topics if t.error_code == 0 and not t.is_internal)

    def _leaders(
        self, topic: str, auto_create: bool = False, created: bool = False
    ) -> dict[int, tuple[str, int]]:
        """partition -> leader address; retried until every partition has a leader (an
        unknown topic fails at once unless `auto_create` or just `created`)."""
        deadline = time.monotonic() + self.timeout
        while True:
            meta = self.metadata([topic], auto_create=auto_create)
            brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
            (t,) = meta.topics
            leaders = {p.partition_index: brokers.get(p.leader_id) for p in t.partitions}
            if t.error_code == 0 and t.partitions and all(leaders.values()):
                return {p: a for p, a in leaders.items() if a is not None}
            code = t.error_code or 5
            unknown = code == 3 and not (auto_create or created)
            if unknown or code not in _RETRIABLE or time.monotonic() > deadline:
                raise KafkaError(code, f"no leader for every partition of {topic!r}")
            time.sleep(0.01)

    # -- topics ---------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        exist_ok: bool = False,
    ) -> str:
        """Create a topic (CreateTopics v4 to the controller, or any broker), then wait until
        it has a leader for every partition. Returns `name`."""
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": replication_factor,
                    "assignments": [],
                    "configs": [{"name": k, "value": str(v)} for k, v in (configs or {}).items()],
                }
            ],
            "timeout_ms": int(self.timeout * 1000),
            "validate_only": False,
        }
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._controller_request(19, 4, body)
            (result,) = answer.topics
            code = result.error_code
            if code == 0 or (code == _TOPIC_ALREADY_EXISTS and exist_ok):
                break
            if code not in _RETRIABLE or time.monotonic() > deadline:
                raise KafkaError(code, result.error_message or f"cannot create topic {name!r}")
            time.sleep(0.01)
        self._leaders(name, created=True)
        return name

    def _controller_request(self, api_key: int, version: int, body: Any) -> Any:
        meta = self.metadata([])
        brokers = {b.node_id: (b.host, b.port) for b in meta.brokers}
        address = brokers.get(meta.controller_id)
        if address is None:
            return self._any(api_key, version, body)
        return self.request(address, api_key, version, body)

    # -- produce --------------------------------------------------------------------------
    def produce(
        self,
        topic: str,
        values: Iterable[str | bytes | tuple[str | bytes | None, str | bytes | None] | None],
        *,
        partition: int = 0,
        headers: Sequence[tuple[str, str | bytes | None]] = (),
    ) -> list[int]:
        """Append records to one partition (acks=all, one batch); their offsets. A missing
        topic is auto-created, as Kafka producers do, when the broker allows it.

        Each item is a value or a (key, value) pair; str is encoded as UTF-8."""
        from protocol.records import RecordSpec, build_batch

        hdrs = tuple((k, _as_bytes(v)) for k, v in headers)
        specs = []
        for item in values:
            if isinstance(item, tuple):
                key, value = item
            else:
                key, value = None, item
            specs.append(RecordSpec(_as_bytes(key), _as_bytes(value), hdrs))
        if not specs:
            return []
        batch = build_batch(specs)
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": int(self.timeout * 1000),
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }
        deadline = time.monotonic() + self.timeout
        while True:
            leader = self._leaders(topic, auto_create=True).get(partition)
            if leader is None:
                raise KafkaError(3, f"{topic!r} has no partition {partition}")
            answer = self.request(leader, 0, 7, body)
            part = answer.responses[0].partition_responses[0]
            if part.error_code == 0:
                return list(range(part.base_offset, part.base_offset + len(specs)))
            if part.error_code not in _RETRIABLE or time.monotonic() > deadline:
                raise KafkaError(part.error_code, f"produce to {topic}-{partition}")
            time.sleep(0.01)

    # -- offsets and reads ----------------------------------------------------------------
    def offsets(self, topic: str, timestamp: int) -> dict[int, int]:
        """partition -> offset for ListOffsets `timestamp` (-2 earliest, -1 latest)."""
        by_leader: dict[tuple[str, int], list[int]] = {}
        for part, leader in self._leaders(topic).items():
            by_leader.setdefault(leader, []).append(part)
        out: dict[int, int] = {}
        for leader, parts in by_leader.items():
            body = {
                "replica_id": -1,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {"partition_index": p, "timestamp": timestamp} for p in parts
                        ],
                    }
                ],
            }
            answer = self.request(leader, 2, 2, body)
            for p in answer.topics[0].partitions:
                if p.error_code:
                    raise KafkaError(p.error_code, f"list offsets of {topic}-{p.partition_index}")
                out[p.partition_index] = p.offset
        return out

    def end_offsets(self, topic: str) -> dict[int, int]:
        """partition -> the offset the next record will get (the high watermark)."""
        return self.offsets(topic, -1)

    def read_to_end(self, topic: str) -> list[Message]:
        """Every record of `topic` from its earliest offset up to its end offset taken at the
        call (the high watermark: what consumers may see), partition by partition, in offset
        order. Control records (transaction markers) are skipped."""
        from protocol.records import decode_records, iter_batches

        starts = self.offsets(topic, -2)
        ends = self.end_offsets(topic)
        leaders = self._leaders(topic)
        messages: list[Message] = []
        deadline = time.monotonic() + self.timeout
        for part in sorted(ends):
            offset, end = starts.get(part, 0), ends[part]
            while offset < end:
                data = self._fetch(leaders[part], topic, part, offset)
                progressed = False
                for pos, header in iter_batches(data):
                    if header.last_offset < offset:
                        continue
                    progressed = True
                    if not header.is_control:
                        for r in decode_records(data, pos):
                            if offset <= r.offset < end:
                                messages.append(
                                    Message(
                                        topic,
                                        part,
                                        r.offset,
                                        r.key,
                                        r.value,
                                        r.headers,
                                        r.timestamp,
                                    )
                                )
                    offset = max(offset, header.last_offset + 1)
                if not progressed and time.monotonic() > deadline:
                    raise KafkaError(7, f"{topic}-{part}: no data from {offset} before {end}")
        return messages

    def _fetch(self, leader: tuple[str, int], topic: str, partition: int, offset: int) -> bytes:
        body = {
            "replica_id": -1,
            "max_wait_ms": 100,
            "min_bytes": 1,
            "max_bytes": 8 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": offset,
                            "log_start_offset": -1,
                            "partition_max_bytes": 4 << 20,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        answer = self.request(leader, 1, 11, body)
        if answer.error_code:
            raise KafkaError(answer.error_code, f"fetch {topic}-{partition}")
        p = answer.responses[0].partitions[0]
        if p.error_code:
            raise KafkaError(p.error_code, f"fetch {topic}-{partition} at {offset}")
        records = p.records
        if records is None:
            return b""
        return bytes(records)
