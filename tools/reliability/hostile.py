#!/usr/bin/env python3
"""Hostile input against wirebroker: an in-process harness, a live fuzzing client, and the
memory a hostile request costs. `python tools/reliability/hostile.py` prints the figures of
docs/reliability.md ("Hostile input"); the tests in tests/reliability/test_hostile_*.py run the
same code with smaller numbers.

Pieces (importable; the tests use them):

`InProcessBroker` (context manager)
    A real `wirebroker.broker.Broker` (storage in a directory, group coordinator and background
    tasks running) on a trio loop in a background thread. `exchange(data)` serves `data` (the
    bytes a client would send, then EOF) through a `wirebroker.net.Connection` over a scripted
    in-memory stream: framing, header and body decoding, the handler, the response encoding --
    the full server path without a socket. It returns what the broker sent, whether it closed
    the connection, and every ERROR log record the broker emitted meanwhile (a handler that
    raises is logged at ERROR by the connection: an "unhandled exception").

`random_value(rng, fields)` / `mutate(rng, data)` / `hostile_case(rng)`
    Random-but-valid request values for any API and version, byte-level mutations, and one
    hostile client input (random bytes, bad frame sizes, random bodies behind valid headers,
    mutated valid requests, partial frames, huge array counts, garbage and mutated record
    batches, decompression bombs, pipelined mixes).

`fuzz_live(bootstrap, cases, seed)`
    Sends `cases` hostile inputs to a broker over TCP, each on a new connection (then EOF), and
    after every case checks that a fresh connection *and* a witness connection opened at the
    start still get ApiVersions answered.

`memory_figures(broker, frame_bytes)`
    tracemalloc peak of serving one hostile frame of about `frame_bytes` bytes (its share of
    the process's allocations, the frame itself excluded), per kind of hostile frame, and
    whether it was answered. Frames of tiny structs (`TINY_STRUCT_KINDS`) are bounded by the
    decode budget, `max(socket.request.max.bytes, 16 MiB)` of estimated objects: under it they
    are served, over it refused (connection closed) at the array count that crosses it.

Bombs go to a compacted topic: that is where the broker decodes (decompresses) records on
Produce; elsewhere batches are stored as produced.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import logging
import random
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
for _p in (str(REPO_ROOT), str(REPO_ROOT / "tests" / "integration")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import lz4.frame  # noqa: E402
import trio  # noqa: E402
import zstandard  # noqa: E402

from protocol import codec  # noqa: E402
from protocol.api import ApiKey  # noqa: E402
from protocol.crc32c import crc32c  # noqa: E402
from protocol.exceptions import ProtocolError  # noqa: E402
from protocol.fastcodec import decode_produce_request  # noqa: E402
from protocol.headers import parse_request_header  # noqa: E402
from protocol.messages import API_MODULES  # noqa: E402
from protocol.primitives import DecodeBudget, FieldInfo  # noqa: E402
from protocol.records import build_batch  # noqa: E402
from wirebroker.broker import Broker  # noqa: E402
from wirebroker.config import BrokerConfig  # noqa: E402
from wirebroker.handlers.dispatcher import decode_budget  # noqa: E402
from wirebroker.net.connection import Connection  # noqa: E402

#: Every (api key, version) the protocol package knows, served or not.
REQUEST_VERSIONS: list[tuple[int, int]] = [
    (key, v)
    for key, mod in sorted(API_MODULES.items())
    for v in range(mod.VALID_VERSIONS[0], mod.VALID_VERSIONS[1] + 1)
]

#: APIs whose requests may legitimately wait (Fetch long poll, group rebalances): a timeout on
#: them is not a hang.
WAITING_APIS = frozenset({ApiKey.FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP})

#: Topics every harness creates: plain, compacted, and one that random requests may hit.
PLAIN_TOPIC = "hostile-plain"
COMPACT_TOPIC = "hostile-compact"
KNOWN_TOPICS = (PLAIN_TOPIC, COMPACT_TOPIC, "__consumer_offsets", "missing-topic")

#: The decompression cap of the log layer (wirebroker.log.config.DECODE_CAP).
DECODE_CAP = 64 * 1024 * 1024

#: Hostile frames made of tiny structs (a Python object per 2-6 wire bytes): bounded by the
#: decode budget (`wirebroker.handlers.dispatcher.decode_budget`), refused past it.
TINY_STRUCT_KINDS = (
    "Metadata, array of empty topic names",
    "Produce, array of partitions with null records",
    "Produce, topics of 1000 partitions with null records",
)
NESTED_KIND = TINY_STRUCT_KINDS[2]


# -- the in-process broker ----------------------------------------------------------------


class ScriptedStream(trio.abc.Stream):
    """A trio stream that yields `incoming` in chunks, then EOF; collects what is sent."""

    def __init__(self, incoming: bytes, chunk: int = 65536) -> None:
        self._view = memoryview(incoming)
        self._pos = 0
        self._chunk = chunk
        self.sent = bytearray()
        self.closed = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        await trio.lowlevel.checkpoint()
        if self.closed:
            raise trio.ClosedResourceError
        n = min(self._chunk, max_bytes or self._chunk)
        out = self._view[self._pos : self._pos + n].tobytes()
        self._pos += len(out)
        return out

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint()
        if self.closed:
            raise trio.ClosedResourceError
        self.sent += data

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def send_eof(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self.closed = True
        self._view.release()
        await trio.lowlevel.checkpoint()


@dataclass
class Exchange:
    """What the broker did with one client input."""

    responses: list[bytes]  # response frames, without their size prefix
    closed: bool  # the broker closed the connection
    timed_out: bool  # still busy after the timeout (then cancelled)
    errors: list[str]  # ERROR log records emitted meanwhile
    trailing: bytes = b""  # bytes after the last whole response frame (must be empty)


class _ErrorRecords(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[str] = []
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f" [{type(record.exc_info[1]).__name__}: {record.exc_info[1]}]"
        with self._guard:
            self.records.append(text)

    def take(self) -> list[str]:
        with self._guard:
            out, self.records = self.records, []
        return out


def split_frames(data: bytes) -> tuple[list[bytes], bytes]:
    """Response frames in `data` (without size prefixes) and the incomplete rest."""
    frames = []
    pos = 0
    while len(data) - pos >= 4:
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 0 or len(data) - pos - 4 < size:
            break
        frames.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return frames, data[pos:]


class InProcessBroker:
    """A real broker on a trio loop in a thread; `exchange` serves bytes without a socket."""

    def __init__(self, data_dir: Path, overrides: Mapping[str, str] | None = None) -> None:
        values = {
            "node.id": "0",
            "log.dirs": str(data_dir),
            "listeners": "PLAINTEXT://127.0.0.1:0",
            **(overrides or {}),
        }
        self.config = BrokerConfig(values)
        self.broker = Broker(self.config, grace_s=1.0)
        self.max_frame_bytes = self.config.socket_request_max_bytes
        self._errors = _ErrorRecords()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._failure: BaseException | None = None

    def __enter__(self) -> InProcessBroker:
        logging.getLogger("wirebroker").addHandler(self._errors)
        self._thread = threading.Thread(target=self._thread_main, name="hostile-broker")
        self._thread.start()
        if not self._ready.wait(30) or self._failure is not None:
            self.__exit__(None, None, None)
            raise RuntimeError(f"in-process broker did not start: {self._failure!r}")
        self._setup_topics()
        self._errors.take()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None and self._stop is not None:
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        if self._thread is not None:
            self._thread.join(30)
        logging.getLogger("wirebroker").removeHandler(self._errors)

    def _thread_main(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:  # reported by __enter__
            self._failure = exc
            self._ready.set()

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            await nursery.start(self.broker.serve)
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def _setup_topics(self) -> None:
        request = {
            "topics": [
                {"name": PLAIN_TOPIC, "num_partitions": 2, "replication_factor": 1},
                {
                    "name": COMPACT_TOPIC,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [{"name": "cleanup.policy", "value": "compact"}],
                },
            ],
            "timeout_ms": 5000,
        }
        out = self.exchange(codec.encode_request(ApiKey.CREATE_TOPICS, 5, 1, "setup", request))
        if len(out.responses) != 1:
            raise RuntimeError(f"CreateTopics failed: {out}")
        _, body = codec.decode_response(ApiKey.CREATE_TOPICS, 5, out.responses[0])
        for topic in body.topics:
            if topic.error_code not in (0, 36):  # NONE, TOPIC_ALREADY_EXISTS
                raise RuntimeError(f"CreateTopics {topic.name}: error {topic.error_code}")

    def exchange(self, data: bytes, timeout: float = 5.0) -> Exchange:
        """Serve `data` (then EOF) through a Connection; see the module docstring."""
        assert self._token is not None
        result: Exchange = trio.from_thread.run(
            self._exchange, data, timeout, trio_token=self._token
        )
        result.errors = self._errors.take()
        return result

    async def _exchange(self, data: bytes, timeout: float) -> Exchange:
        stream = ScriptedStream(data)
        conn = Connection(
            stream,
            self.broker.dispatcher,
            max_frame_bytes=self.max_frame_bytes,
            idle_timeout_s=60.0,
            peer=("198.51.100.7", 40000),
        )
        with trio.move_on_after(timeout) as scope:
            await conn.run()
        frames, rest = split_frames(bytes(stream.sent))
        return Exchange(frames, stream.closed, scope.cancelled_caught, [], rest)


def check_exchange(data: bytes, out: Exchange) -> list[str]:
    """Problems with how the broker treated `data` (empty: it behaved).

    Allowed outcomes: responses that decode as the request's API and version with its
    correlation id (ApiVersions newer than served: a v0 answer), and/or a closed connection.
    Not allowed: an ERROR log record (an unhandled exception), a response that does not
    decode, stray bytes, a hang on an API that never waits.
    """
    problems = [f"error logged: {e}" for e in out.errors]
    if out.trailing:
        problems.append(f"{len(out.trailing)} stray bytes after the responses")
    header = None
    if len(data) >= 4:
        (size,) = struct.unpack_from(">i", data)
        if 0 <= size <= len(data) - 4:
            with contextlib.suppress(ProtocolError, KeyError, ValueError):
                header, _ = parse_request_header(data[4 : 4 + size])
    if out.timed_out and (header is None or int(header.api_key) not in WAITING_APIS):
        problems.append("no answer and no close within the timeout")
    if header is not None and out.responses:
        key, version = int(header.api_key), int(header.api_version)
        first = out.responses[0]
        try:
            cid, _ = codec.decode_response(key, version, first)
        except (ProtocolError, KeyError, ValueError) as exc:
            try:  # ApiVersions newer than served is answered with v0
                cid, _ = codec.decode_response(ApiKey.API_VERSIONS, 0, first)
                if key != ApiKey.API_VERSIONS:
                    raise ValueError("v0 ApiVersions answer to another API") from exc
            except (ProtocolError, KeyError, ValueError) as exc2:
                problems.append(f"response to {key} v{version} does not decode: {exc2}")
                return problems
        if cid != int(header.correlation_id):
            problems.append(f"correlation id {cid} != {int(header.correlation_id)}")
    return problems


# -- random requests and mutations --------------------------------------------------------

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}


def _random_int(rng: random.Random, kind: str, name: str) -> int:
    lo, hi = _INT_RANGES[kind]
    roll = rng.random()
    if roll < 0.45:  # small values reach the handlers' interesting branches
        return max(lo, min(hi, rng.randint(-2, 5)))
    if roll < 0.6:
        return rng.choice([lo, hi, 0, -1, 1])
    if name.endswith("_ms") or "timeout" in name:
        return rng.randint(0, 2000)
    return rng.randint(lo, hi)


def _random_string(rng: random.Random, name: str) -> str:
    roll = rng.random()
    if ("topic" in name or name == "name") and roll < 0.6:
        return rng.choice(KNOWN_TOPICS)
    if roll < 0.8:
        return "".join(rng.choice("abc-._ é/\x00") for _ in range(rng.randint(0, 6)))
    return "x" * rng.choice([0, 1, 249, 250, 256, 1000])


def random_batch(rng: random.Random) -> bytes:
    """A record batch that is valid, or nearly so (a mutated one)."""
    n = rng.randint(1, 4)
    records = [
        (rng.choice([None, b"k", rng.randbytes(3)]), rng.choice([None, b"v", rng.randbytes(5)]))
        for _ in range(n)
    ]
    batch = build_batch(
        records,
        compression=rng.choice([0, 0, 1, 2, 3, 4]),
        producer_id=rng.choice([-1, -1, rng.randint(0, 5)]),
        producer_epoch=rng.choice([-1, 0]),
        base_sequence=rng.choice([-1, 0, rng.randint(0, 10)]),
    )
    return mutate(rng, batch) if rng.random() < 0.4 else batch


def _random_scalar(rng: random.Random, kind: str, name: str) -> Any:
    if kind in _INT_RANGES:
        return _random_int(rng, kind, name)
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.choice([0.0, -1.0, 1e308, float("inf")])
    if kind == "uuid":
        return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128))])
    if kind == "string":
        return _random_string(rng, name)
    if kind == "bytes":
        return rng.randbytes(rng.randint(0, 16))
    if kind == "records":
        roll = rng.random()
        if roll < 0.6:
            return random_batch(rng)
        return rng.randbytes(rng.randint(0, 80))
    raise ValueError(kind)


def random_value(rng: random.Random, fields: tuple[FieldInfo, ...], depth: int = 0) -> dict:
    """A random value for a message or struct with `fields` (encodable by protocol.codec)."""
    out: dict[str, Any] = {}
    for info in fields:
        if info.nullable and rng.random() < 0.15:
            out[info.name] = None
        elif info.kind == "struct":
            out[info.name] = random_value(rng, info.fields, depth + 1)
        elif info.kind == "array":
            count = rng.choice([0, 1, 1, 2, 3]) if depth < 3 else 0
            if info.element == "struct":
                out[info.name] = [random_value(rng, info.fields, depth + 1) for _ in range(count)]
            else:
                element = str(info.element)
                out[info.name] = [_random_scalar(rng, element, info.name) for _ in range(count)]
        else:
            out[info.name] = _random_scalar(rng, info.kind, info.name)
    return out


def random_request(rng: random.Random, key: int, version: int, correlation_id: int = 7) -> bytes:
    """A complete valid request frame (size prefix included) with random field values."""
    value = random_value(rng, API_MODULES[key].request_fields(version))
    return codec.encode_request(key, version, correlation_id, "hostile", value)


def mutate(rng: random.Random, data: bytes, rounds: int | None = None) -> bytes:
    """`data` with 1-4 byte-level mutations: bit flips, boundary bytes, inserts, deletes,
    truncation, int32 fields set to extreme values."""
    out = bytearray(data)
    for _ in range(rounds if rounds is not None else rng.randint(1, 4)):
        op = rng.choice(["flip", "set", "insert", "delete", "truncate", "int32"])
        pos = rng.randint(0, max(len(out) - 1, 0))
        if op == "flip" and out:
            out[pos] ^= 1 << rng.randint(0, 7)
        elif op == "set" and out:
            out[pos] = rng.choice([0x00, 0x7F, 0x80, 0xFF])
        elif op == "insert":
            out[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif op == "delete" and out:
            del out[pos : pos + rng.randint(1, 8)]
        elif op == "truncate":
            del out[pos:]
        elif op == "int32" and len(out) >= 4:
            pos = min(pos, len(out) - 4)
            value = rng.choice([-1, -(2**31), 2**31 - 1, 2**24, 0x7FFF])
            out[pos : pos + 4] = struct.pack(">i", value)
    return bytes(out)


def reframe(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request_header(key: int, version: int, correlation_id: int = 7) -> bytes:
    """A valid request header (v2 when the API/version is flexible), without a size prefix."""
    fmin = API_MODULES[key].FLEXIBLE_MIN
    head = struct.pack(">hhih", key, version, correlation_id, 7) + b"hostile"
    return head + b"\x00" if fmin is not None and version >= fmin else head


# -- record batches by hand: bombs --------------------------------------------------------


def raw_batch(payload: bytes, *, compression: int, records_count: int = 1) -> bytes:
    """A v2 batch around an arbitrary (compressed) `payload`, with a correct CRC."""
    now = int(time.time() * 1000)
    last_delta = max(records_count - 1, 0)
    after_crc = (
        struct.pack(">hiqqqhii", compression, last_delta, now, now, -1, -1, -1, records_count)
        + payload
    )
    length = 4 + 1 + 4 + len(after_crc)  # partitionLeaderEpoch, magic, crc, rest
    head = struct.pack(">qiib", 0, length, -1, 2)
    return head + struct.pack(">I", crc32c(after_crc)) + after_crc


def bomb_payload(compression: int, size: int) -> bytes:
    """`size` zero bytes compressed with `compression` (1 gzip, 3 lz4, 4 zstd)."""
    block = bytes(1 << 20)
    if compression == 1:
        sink = io.BytesIO()
        with gzip.GzipFile(fileobj=sink, mode="wb", compresslevel=9, mtime=0) as gz:
            for _ in range(size // len(block)):
                gz.write(block)
            gz.write(bytes(size % len(block)))
        return sink.getvalue()
    if compression == 3:
        # Independent blocks: Kafka's reader refuses dependent (linked) ones before inflating.
        ctx = lz4.frame.LZ4FrameCompressor(
            block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, compression_level=9
        )
        parts = [ctx.begin()]
        for _ in range(size // len(block)):
            parts.append(ctx.compress(block))
        parts.append(ctx.compress(bytes(size % len(block))))
        parts.append(ctx.flush())
        return b"".join(parts)
    if compression == 4:
        cctx = zstandard.ZstdCompressor(level=19)
        zobj = cctx.compressobj()
        parts = []
        for _ in range(size // len(block)):
            parts.append(zobj.compress(block))
        parts.append(zobj.compress(bytes(size % len(block))))
        parts.append(zobj.flush())
        return b"".join(parts)
    raise ValueError(f"no bomb for codec {compression}")


def produce_request(
    topic: str, records: bytes, *, version: int = 9, acks: int = -1, correlation_id: int = 7
) -> bytes:
    """A Produce request frame (size prefix included) with one partition (0) of `topic`."""
    value = {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": 0, "records": records}],
            }
        ],
    }
    return codec.encode_request(ApiKey.PRODUCE, version, correlation_id, "hostile", value)


def produce_errors(response: bytes, version: int = 9) -> list[int]:
    """Partition error codes of a Produce response frame."""
    _, body = codec.decode_response(ApiKey.PRODUCE, version, response)
    return [int(p.error_code) for t in body.responses for p in t.partition_responses]


_BOMB_CACHE: dict[tuple[int, int], bytes] = {}


def bomb_request(compression: int, size: int = DECODE_CAP + (1 << 20)) -> bytes:
    """Produce to the compacted topic: one batch whose payload inflates to `size` zero bytes."""
    if (compression, size) not in _BOMB_CACHE:
        _BOMB_CACHE[(compression, size)] = raw_batch(
            bomb_payload(compression, size), compression=compression
        )
    return produce_request(COMPACT_TOPIC, _BOMB_CACHE[(compression, size)])


# -- one hostile client input --------------------------------------------------------------


@dataclass
class Case:
    kind: str
    data: bytes


CASE_KINDS = (
    "random-bytes",
    "random-frame",
    "random-body",
    "mutated-request",
    "valid-random-request",
    "bad-size",
    "partial-frame",
    "huge-count",
    "garbage-records",
    "bomb",
    "pipelined",
)


def hostile_case(rng: random.Random, kind: str | None = None) -> Case:
    """One hostile client input of `kind` (random when None); see CASE_KINDS."""
    kind = kind or rng.choice(CASE_KINDS)
    key, version = rng.choice(REQUEST_VERSIONS)
    if kind == "random-bytes":
        data = rng.randbytes(rng.randint(0, 200))
    elif kind == "random-frame":
        data = reframe(rng.randbytes(rng.randint(0, 200)))
    elif kind == "random-body":
        data = reframe(request_header(key, version) + rng.randbytes(rng.randint(0, 120)))
    elif kind == "mutated-request":
        frame = random_request(rng, key, version)[4:]
        data = reframe(mutate(rng, frame))
        if rng.random() < 0.2:
            data = mutate(rng, data, rounds=1)  # the size prefix too, sometimes
    elif kind == "valid-random-request":
        data = random_request(rng, key, version)
    elif kind == "bad-size":
        size = rng.choice([-1, -(2**31), 2**31 - 1, 104857601, 1 << 30])
        data = struct.pack(">i", size) + rng.randbytes(rng.randint(0, 32))
    elif kind == "partial-frame":
        frame = random_request(rng, key, version)
        data = frame[: rng.randint(1, max(len(frame) - 1, 1))]
    elif kind == "huge-count":
        count = rng.choice([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f", b"\x80\x00\x00\x00"])
        data = reframe(request_header(key, version) + rng.randbytes(rng.randint(0, 4)) + count)
    elif kind == "garbage-records":
        records = rng.choice([rng.randbytes(rng.randint(0, 300)), random_batch(rng)])
        topic = rng.choice([PLAIN_TOPIC, COMPACT_TOPIC])
        data = produce_request(topic, records, version=rng.randint(3, 9))
    elif kind == "bomb":
        data = bomb_request(rng.choice([1, 3, 4]))
    elif kind == "pipelined":
        parts = [random_request(rng, *rng.choice(REQUEST_VERSIONS)) for _ in range(3)]
        parts.insert(rng.randint(0, 3), reframe(rng.randbytes(rng.randint(0, 40))))
        data = b"".join(parts)
    else:
        raise ValueError(kind)
    return Case(kind, data)


# -- the live fuzzing client ----------------------------------------------------------------


class Client:
    """A blocking Kafka-protocol socket client (ApiVersions checks, raw sends)."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def read_frame(self) -> bytes | None:
        head = self._read(4)
        if head is None:
            return None
        (size,) = struct.unpack(">i", head)
        return self._read(size)

    def _read(self, n: int) -> bytes | None:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def api_versions_ok(self) -> bool:
        """Send ApiVersions v3; True when it is answered without error."""
        self.correlation_id += 1
        request = codec.encode_request(
            ApiKey.API_VERSIONS,
            3,
            self.correlation_id,
            "hostile-check",
            {"client_software_name": "hostile", "client_software_version": "1"},
        )
        try:
            self.sock.sendall(request)
            frame = self.read_frame()
        except OSError:
            return False
        if frame is None:
            return False
        cid, body = codec.decode_response(ApiKey.API_VERSIONS, 3, frame)
        return cid == self.correlation_id and int(body.error_code) == 0


@dataclass
class LiveFigures:
    cases: int = 0
    healthy_after: int = 0  # cases after which a new connection got ApiVersions answered
    witness_ok: int = 0  # ... and the witness connection did too
    outcomes: dict[str, int] = field(default_factory=dict)  # answered / closed / open
    kinds: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _send_case(host: str, port: int, data: bytes, read_timeout: float) -> str:
    """Send one case on a new connection, then EOF; what the broker did."""
    sock = socket.create_connection((host, port), timeout=10)
    try:
        with contextlib.suppress(OSError):
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        sock.settimeout(read_timeout)
        got = 0
        try:
            while chunk := sock.recv(65536):
                got += len(chunk)
        except TimeoutError:
            return "open"
        except OSError:
            return "reset"
        return "answered" if got else "closed"
    finally:
        sock.close()


def fuzz_live(bootstrap: str, cases: int, seed: int, read_timeout: float = 2.0) -> LiveFigures:
    """Send `cases` hostile inputs; after each, check a new and the witness connection."""
    host, _, port_s = bootstrap.rpartition(":")
    port = int(port_s)
    rng = random.Random(seed)
    figures = LiveFigures()
    witness = Client(host, port)
    start = time.monotonic()
    try:
        if not witness.api_versions_ok():
            raise RuntimeError("the broker does not answer ApiVersions before fuzzing")
        for i in range(cases):
            case = hostile_case(rng)
            figures.kinds[case.kind] = figures.kinds.get(case.kind, 0) + 1
            outcome = _send_case(host, port, case.data, read_timeout)
            figures.outcomes[outcome] = figures.outcomes.get(outcome, 0) + 1
            figures.cases += 1
            fresh_ok = False
            with contextlib.suppress(OSError):
                fresh = Client(host, port)
                try:
                    fresh_ok = fresh.api_versions_ok()
                finally:
                    fresh.close()
            witness_ok = witness.api_versions_ok()
            figures.healthy_after += fresh_ok
            figures.witness_ok += witness_ok
            if not (fresh_ok and witness_ok):
                figures.failures.append(
                    f"case {i} ({case.kind}, {len(case.data)} bytes, seed {seed}): "
                    f"new connection ok={fresh_ok}, witness ok={witness_ok}"
                )
                if not witness_ok:
                    witness.close()
                    witness = Client(host, port)
    finally:
        witness.close()
        figures.seconds = time.monotonic() - start
    return figures


def count_unhandled(log_text: str) -> int:
    """Unhandled-exception reports in a broker's stderr (tracebacks)."""
    return log_text.count("Traceback (most recent call last)")


# -- memory per request ---------------------------------------------------------------------


def memory_frames(frame_bytes: int) -> dict[str, bytes]:
    """Hostile frames (size prefix included) of about `frame_bytes` bytes each, by kind."""
    rng = random.Random(1)
    budget = frame_bytes - 200
    frames: dict[str, bytes] = {}
    frames["random bytes behind a Produce header"] = reframe(
        request_header(ApiKey.PRODUCE, 9) + rng.randbytes(budget)
    )
    frames["Produce, garbage records (plain topic)"] = produce_request(
        PLAIN_TOPIC, rng.randbytes(budget)
    )
    frames.update(tiny_struct_frames(frame_bytes))
    # A valid batch of many tiny keyed records, uncompressed, to the compacted topic.
    count = budget // 10
    frames["Produce to compacted topic, many tiny records"] = produce_request(
        COMPACT_TOPIC, build_batch([(b"k", None)] * count)
    )
    # The same, zstd-compressed: up to ~64 MiB of records (the decode cap) from a small frame.
    count = min(budget, (DECODE_CAP - (1 << 20)) // 10)  # zstd packs these ~12:1
    frames["Produce to compacted topic, zstd batch of tiny records"] = produce_request(
        COMPACT_TOPIC,
        raw_batch(tiny_records(count, compress=True), compression=4, records_count=count),
    )
    frames["Produce to compacted topic, gzip bomb (64 MiB + 1 MiB of zeros)"] = bomb_request(1)
    frames["Produce to compacted topic, zstd bomb"] = bomb_request(4)
    frames["Produce to compacted topic, lz4 bomb"] = bomb_request(3)
    return frames


def tiny_struct_frames(frame_bytes: int) -> dict[str, bytes]:
    """The `TINY_STRUCT_KINDS` frames (size prefix included) of about `frame_bytes` bytes."""
    budget = frame_bytes - 200
    frames: dict[str, bytes] = {}
    # Metadata v4: topics array of empty names: 2 wire bytes -> one parsed struct each.
    n = budget // 2
    frames[TINY_STRUCT_KINDS[0]] = reframe(
        request_header(ApiKey.METADATA, 4) + struct.pack(">i", n) + b"\x00\x00" * n + b"\x00"
    )
    # Produce v9 (flexible): many partitions with null records: ~6 wire bytes each.
    n = budget // 6
    body = (
        b"\x00"  # transactional id: null (compact nullable string)
        + struct.pack(">hi", -1, 5000)
        + b"\x02"  # one topic
        + b"\x02t"  # name "t"
        + _uvarint(n + 1)
        + (struct.pack(">i", 0) + b"\x00" + b"\x00") * n  # index, null records, no tags
        + b"\x00"  # topic tags
        + b"\x00"  # request tags
    )
    frames[TINY_STRUCT_KINDS[1]] = reframe(request_header(ApiKey.PRODUCE, 9) + body)
    # The same partitions split into topics of 1000: each count charges the decode budget
    # on its own, so an over-budget frame is refused part-way, after allocating ~the budget.
    per_topic = 1000
    part = struct.pack(">i", 1000) + b"\x00\x00"  # index (not a cached int), null records, tags
    topic = b"\x02t" + _uvarint(per_topic + 1) + part * per_topic + b"\x00"
    n = max(budget // len(topic), 1)
    body = b"\x00" + struct.pack(">hi", -1, 5000) + _uvarint(n + 1) + topic * n + b"\x00"
    frames[NESTED_KIND] = reframe(request_header(ApiKey.PRODUCE, 9) + body)
    return frames


def decode_charge(frame: bytes) -> int:
    """The decode budget the body of a request `frame` (size prefix included) charges."""
    header, offset = parse_request_header(frame[4:])
    budget = DecodeBudget(1 << 62)
    if int(header.api_key) == ApiKey.PRODUCE:
        decode_produce_request(frame[4:], offset, header.api_version, budget)
    else:
        schema = API_MODULES[int(header.api_key)].request_schema(header.api_version)
        codec._parse_body(schema, frame[4:], offset, budget)
    return budget.charged


def tiny_struct_frames_under(budget: int) -> dict[str, bytes]:
    """`TINY_STRUCT_KINDS` frames whose decode charges 90-97% of `budget`: the worst ones
    a broker with that decode budget serves."""
    frames = {}
    for kind in TINY_STRUCT_KINDS:
        size = 256 * 1024 * budget // decode_charge(tiny_struct_frames(256 * 1024)[kind])
        frame = tiny_struct_frames(size)[kind]
        while decode_charge(frame) > 0.97 * budget:
            size = int(size * 0.98)
            frame = tiny_struct_frames(size)[kind]
        if decode_charge(frame) < 0.9 * budget:
            raise RuntimeError(f"{kind}: no frame charging 90-97% of {budget}")
        frames[kind] = frame
    return frames


def tiny_records(count: int, *, compress: bool = False) -> bytes:
    """The records section of a batch of `count` records (key b"k", null value, ~10 bytes
    each), zstd-compressed when `compress`."""
    parts = []
    for i in range(count):
        body = b"\x00\x00" + _uvarint(i << 1) + b"\x02k\x01\x00"
        parts.append(_uvarint(len(body) << 1))
        parts.append(body)
    data = b"".join(parts)
    return zstandard.ZstdCompressor(level=3).compress(data) if compress else data


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


@dataclass
class MemoryFigure:
    kind: str
    frame_bytes: int
    peak_bytes: int
    answered: bool
    errors: list[str]

    @property
    def ratio(self) -> float:
        return self.peak_bytes / max(self.frame_bytes, 1)


def measure_memory(broker: InProcessBroker, frame: bytes, kind: str) -> MemoryFigure:
    """tracemalloc peak (above the level before) of serving `frame`; the frame's own bytes,
    allocated before, are not counted."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        out = broker.exchange(frame, timeout=120)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return MemoryFigure(kind, len(frame), peak - before, bool(out.responses), out.errors)


def memory_figures(broker: InProcessBroker, frame_bytes: int) -> list[MemoryFigure]:
    """Peak per hostile frame kind, after a warm-up with small frames of every kind (so the
    first request's one-time costs, schema caches and the like, are not counted); then the
    tiny-struct kinds again, sized just under the broker's decode budget (`UNDER_BUDGET`)."""
    for frame in memory_frames(64 * 1024).values():
        broker.exchange(frame, timeout=120)
    figures = [measure_memory(broker, f, k) for k, f in memory_frames(frame_bytes).items()]
    under = tiny_struct_frames_under(decode_budget(broker.max_frame_bytes))
    figures += [measure_memory(broker, f, k + UNDER_BUDGET) for k, f in under.items()]
    return figures


#: Suffix of the kinds measured just under the decode budget (`tiny_struct_frames_under`).
UNDER_BUDGET = ", just under the decode budget"


# -- command line ---------------------------------------------------------------------------


def _mib(n: float) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def _kib(n: float) -> str:
    return f"{n / 1024:.0f} KiB"


def _size(n: float) -> str:
    return _mib(n) if n >= 1 << 20 else _kib(n)


@dataclass
class ServerPathFigures:
    inputs: int = 0
    answered: int = 0
    closed_without_answer: int = 0
    problems: list[str] = field(default_factory=list)


def server_path(broker: InProcessBroker, per_version: int, seed: int) -> ServerPathFigures:
    """For every API/version: `per_version` random bodies behind a valid header and
    `per_version` random valid requests (half of them mutated), through `exchange`."""
    rng = random.Random(seed)
    figures = ServerPathFigures()
    for key, version in REQUEST_VERSIONS:
        for i in range(2 * per_version):
            if i % 2 == 0:
                body = rng.randbytes(rng.randint(0, 96))
                data = reframe(request_header(key, version) + body)
            else:
                data = random_request(rng, key, version)
                if rng.random() < 0.5:
                    data = reframe(mutate(rng, data[4:]))
            out = broker.exchange(data, timeout=3.0)
            figures.inputs += 1
            if out.responses:
                figures.answered += 1
            else:
                figures.closed_without_answer += 1
            figures.problems += [f"{key} v{version}: {p}" for p in check_exchange(data, out)]
    return figures


#: What the "Hostile input" section says besides the figures (kept with the tool that
#: rewrites the section).
NOTES = """\
How to read these:

- *Hostile cases* (live broker, one new connection per case, then EOF): random bytes, random
  frames, random bodies behind valid headers of every API/version, mutated valid requests,
  negative/huge frame sizes, partial frames, huge array counts, garbage and mutated record
  batches, decompression bombs, pipelined mixes. After every case a new connection and a
  witness connection opened before the first case must get ApiVersions answered.
- *Server path* (in-process broker, the real `Connection`, decoders and handlers): every input
  must get a response that decodes as its API/version, or a closed connection; never an ERROR
  log record (an unhandled handler exception), stray bytes or a hang. CI runs the same property
  with hypothesis (`tests/reliability/test_hostile_server_path.py`).
- *Memory*: tracemalloc peak above the level before, while one hostile frame goes through
  framing, decoding and the handler (the frame's own bytes excluded); `python
  tools/reliability/hostile.py --memory-only` prints just these figures. Raw bytes cost ~2x the
  frame (receive buffer + the frame copied out). Frames made of tiny structs would cost ~100x
  (each 2-6 wire bytes become a parsed Python object: ~10 GiB for one request at Kafka's default
  `socket.request.max.bytes` of 100 MiB), so request decoding has a budget: every array count
  charges an estimate of the objects its elements will create, before creating them, and a
  request whose estimate passes `max(socket.request.max.bytes, 16 MiB)` is refused (connection
  closed, one warning, as Kafka closes on an invalid request). Near the cap such a frame is
  refused at ~2x the frame when one array count is over the budget, or after about the budget's
  worth of objects when nested arrays reach it one by one; the worst frames still served (just
  under the budget) peak at ~1.4x the budget (the decoded request plus the handler's response
  entries). One request thus costs at most ~2x the frame + ~1.5x the budget. Records sent to
  a compacted topic are checked for keys by walking their bytes, never decoded into objects,
  and compressed batches are decompressed in 256 KiB chunks through a 1 MiB window: ~2x the
  frame (~3x for zstd batches of tiny records). Decompression bombs are answered
  INVALID_RECORD once the decompressed size passes the 64 MiB decode cap, having held ~2-3 MiB;
  topics that are not compacted store batches without decompressing them. `python
  tools/reliability/hostile.py --memory-only --frame-mib 2` reproduces these lines (54 s).
"""


def memory_overrides(frame_bytes: int) -> dict[str, str]:
    """Broker settings for memory figures of `frame_bytes` frames (the cap just above)."""
    return {
        "socket.request.max.bytes": str(frame_bytes + 1024),
        "message.max.bytes": str(frame_bytes + 1024),
    }


def memory_lines(figures: list[MemoryFigure], frame_bytes: int) -> list[tuple[str, bool]]:
    """The printed memory figures: (line, whether it reports a failure)."""
    out: list[tuple[str, bool]] = []
    budget = decode_budget(frame_bytes + 1024)
    for fig in figures:
        if "bomb" in fig.kind:
            out.append(
                (
                    f"- peak memory of one hostile request, {fig.kind}: {_mib(fig.peak_bytes)} "
                    f"for a {_kib(fig.frame_bytes)} frame (decode cap {_mib(DECODE_CAP)}) "
                    f"(1 operations, 1 faults)",
                    False,
                )
            )
            continue
        outcome = "answered" if fig.answered else "refused, connection closed"
        if fig.kind in TINY_STRUCT_KINDS or fig.kind.endswith(UNDER_BUDGET):
            outcome += f"; decode budget {_mib(budget)}"
        line = (
            f"- peak memory of one hostile request, {fig.kind}: {fig.ratio:.1f}x the frame "
            f"({_mib(fig.peak_bytes)} for {_size(fig.frame_bytes)}; {outcome}) "
            f"(1 operations, 1 faults)"
        )
        out.append((line, bool(fig.errors)))
        out += [(f"  - ERROR {error}", True) for error in fig.errors]
    return out


def _memory_only(frame_mib: int) -> int:
    frame_bytes = frame_mib << 20
    with tempfile.TemporaryDirectory(prefix="wb-hostile-mem-") as tmp:
        overrides = memory_overrides(frame_bytes)
        with InProcessBroker(Path(tmp) / "memory", overrides) as broker:
            figures = memory_figures(broker, frame_bytes)
    failed = False
    for line, bad in memory_lines(figures, frame_bytes):
        print(line, flush=True)
        failed |= bad
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10000, help="live fuzzing cases")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--per-version", type=int, default=50, help="server-path inputs per API/version and kind"
    )
    parser.add_argument(
        "--frame-mib", type=int, default=2, help="socket.request.max.bytes for memory figures"
    )
    parser.add_argument("--fuzz-seconds", type=int, default=300, help="tools/fuzz/run.py time")
    parser.add_argument("--update-doc", action="store_true", help="rewrite docs/reliability.md")
    parser.add_argument(
        "--memory-only", action="store_true", help="print the memory figures only (no doc update)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.CRITICAL)
    if args.memory_only:
        if args.update_doc:
            parser.error("--memory-only prints part of the section: no --update-doc")
        return _memory_only(args.frame_mib)
    command = " ".join(["python tools/reliability/hostile.py", *(argv or sys.argv[1:])])
    command = command.replace(" --update-doc", "")
    lines: list[str] = []
    failed = False

    def emit(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    from _broker import BrokerProcess

    with tempfile.TemporaryDirectory(prefix="wb-hostile-") as tmp:
        proc = BrokerProcess(Path(tmp) / "data", log_path=Path(tmp) / "broker.log")
        try:
            bootstrap = proc.start()
            create_topics_live(bootstrap)
            live = fuzz_live(bootstrap, args.cases, args.seed)
            alive = proc.is_running()
        finally:
            proc.close()
        unhandled = count_unhandled(proc.log_text())
    n = live.cases
    emit(
        f"- broker answered ApiVersions on a new connection after every hostile case: "
        f"{live.healthy_after}/{n} ({n} operations, {n} faults)"
    )
    emit(
        f"- a witness connection opened before the first case kept working: "
        f"{live.witness_ok}/{n} ({n} operations, {n} faults)"
    )
    emit(
        f"- unhandled exceptions (tracebacks) in the broker log: {unhandled} "
        f"({n} operations, {n} faults)"
    )
    emit(f"- broker process alive after the hostile cases: {alive} ({n} operations, {n} faults)")
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(live.outcomes.items()))
    emit(f"  - outcomes: {outcomes}; {live.seconds:.0f} s; seed {args.seed}")
    for failure in live.failures[:20]:
        emit(f"  - FAILURE {failure}")
    failed |= bool(live.failures) or unhandled > 0 or not alive

    frame_bytes = args.frame_mib << 20
    with tempfile.TemporaryDirectory(prefix="wb-hostile-mem-") as tmp:
        overrides = memory_overrides(frame_bytes)
        with InProcessBroker(Path(tmp) / "path", overrides) as broker:
            path = server_path(broker, args.per_version, args.seed)
        # a fresh broker: random requests may have deleted or reconfigured the test topics
        with InProcessBroker(Path(tmp) / "memory", overrides) as broker:
            figures = memory_figures(broker, frame_bytes)
    m = path.inputs
    emit(
        f"- server path, every API and version ({len(REQUEST_VERSIONS)}): inputs with an "
        f"unhandled exception, undecodable response or hang: {len(path.problems)} "
        f"({m} operations, {m} faults)"
    )
    emit(f"  - answered {path.answered}, closed without an answer {path.closed_without_answer}")
    for problem in path.problems[:20]:
        emit(f"  - FAILURE {problem}")
    failed |= bool(path.problems)
    for line, bad in memory_lines(figures, frame_bytes):
        emit(line)
        failed |= bad

    fuzz = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "tools" / "fuzz" / "run.py"),
            "--seconds",
            str(args.fuzz_seconds),
        ],
        capture_output=True,
        text=True,
    )
    summary = fuzz.stdout.strip().splitlines()[-1] if fuzz.stdout.strip() else fuzz.stderr[-500:]
    match = re.match(r"fuzz \((\w+)\): (\d+) executions in (\d+) s, (\d+) crashes", summary)
    if match:
        engine, execs, secs, crashes = match.groups()
        emit(
            f"- coverage-guided fuzzing ({engine}) of framing, request decoding, record batches "
            f"and codecs: {crashes} crashes in {secs} s ({execs} operations, {execs} faults)"
        )
    else:
        emit(f"- coverage-guided fuzzing: could not run: {summary}")
    failed |= fuzz.returncode != 0

    if args.update_doc:
        from docsections import update_section

        body = "\n".join(["## Hostile input", "", "```sh", command, "```", "", *lines, "", NOTES])
        update_section("hostile-input", body)
    return 1 if failed else 0


def create_topics_live(bootstrap: str) -> None:
    host, _, port = bootstrap.rpartition(":")
    client = Client(host, int(port))
    try:
        request = {
            "topics": [
                {"name": PLAIN_TOPIC, "num_partitions": 2, "replication_factor": 1},
                {
                    "name": COMPACT_TOPIC,
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": [{"name": "cleanup.policy", "value": "compact"}],
                },
            ],
            "timeout_ms": 5000,
        }
        client.sock.sendall(codec.encode_request(ApiKey.CREATE_TOPICS, 5, 1, "setup", request))
        if client.read_frame() is None:
            raise RuntimeError("CreateTopics: connection closed")
    finally:
        client.close()


def iter_cases(seed: int, n: int) -> Iterator[Case]:
    rng = random.Random(seed)
    for _ in range(n):
        yield hostile_case(rng)


if __name__ == "__main__":
    sys.exit(main())
