"""Broker-bound throughput, without a client library: pre-encoded requests over one socket.

    produce(port, topic, cpu, requests) -> {"mb_s", "cpu_ms_per_mb"}
    fetch(port, topic, cpu, batches)    -> {"mb_s", "cpu_ms_per_mb"}

(`cpu`: a function returning the broker process's CPU seconds so far.)

bench_broker.py measures with confluent-kafka, which on a 2-CPU machine is often the
bottleneck itself (its Python produce() loop, its fetch queue). These two figures take the
client out: the same Produce v9 request (one ~1 MB batch of 100 x 10 KiB records, acks=1) is
sent `requests` times with up to 5 requests in flight (librdkafka's default
max.in.flight.requests.per.connection), then the data is read back with Fetch v11 requests
(partition_max_bytes and max_bytes 1 MiB, max_wait_ms 100), one at a time, each from the
offset after the previous answer's last whole batch, as a consumer does. (Tansu 0.6 ignores
partition_max_bytes and returns about 2 MB per request; MB/s counts what arrived.)
Reported: MB/s of record data and the broker's CPU time per MB (/proc/PID/stat, user +
system), which is what limits a broker sharing 2 CPUs with its clients.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Callable
from typing import Any

_SIZE = struct.Struct(">i")
RECORDS_PER_BATCH = 100
RECORD_BYTES = 10 * 1024
WINDOW = 5


def _batch() -> bytes:
    from protocol.records import build_batch

    return build_batch(
        [(None, os.urandom(RECORD_BYTES))] * RECORDS_PER_BATCH,
        base_timestamp=int(time.time() * 1000),
    )


def _produce_frame(topic: str, batch: bytes, cid: int) -> bytes:
    from protocol.codec import encode_request

    body = {
        "acks": 1,
        "timeout_ms": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    return encode_request(0, 9, cid, "bench-raw", body)


def _fetch_frame(topic: str, offset: int, cid: int) -> bytes:
    from protocol.codec import encode_request

    body = {
        "replica_id": -1,
        "max_wait_ms": 100,  # the data is there; Tansu 0.6 answers nothing at max_wait_ms 0
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return encode_request(1, 11, cid, "bench-raw", body)


def _pipeline(port: int, frames: list[bytes], window: int) -> tuple[float, list[bytes]]:
    """Send `frames` keeping up to `window` unanswered; (seconds, response frames)."""
    sock = socket.create_connection(("127.0.0.1", port), 30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(60)
    responses: list[bytes] = []
    buf = bytearray()
    sent = 0
    t0 = time.perf_counter()
    try:
        while len(responses) < len(frames):
            while sent < len(frames) and sent - len(responses) < window:
                sock.sendall(frames[sent])
                sent += 1
            while True:
                if len(buf) >= 4:
                    size = _SIZE.unpack_from(buf)[0]
                    if len(buf) >= 4 + size:
                        responses.append(bytes(buf[4 : 4 + size]))
                        del buf[: 4 + size]
                        break
                chunk = sock.recv(1 << 20)
                if not chunk:
                    raise ConnectionError("broker closed the connection")
                buf += chunk
    finally:
        sock.close()
    return time.perf_counter() - t0, responses


def produce(port: int, topic: str, cpu: Callable[[], float], requests: int) -> dict[str, Any]:
    from protocol.codec import decode_response

    batch = _batch()
    frames = [_produce_frame(topic, batch, cid) for cid in range(requests)]
    _pipeline(port, frames[:10], WINDOW)  # warm-up: connection, segment
    c0 = cpu()
    seconds, responses = _pipeline(port, frames, WINDOW)
    cpu_s = cpu() - c0
    for frame in responses[:3] + responses[-3:]:
        _cid, resp = decode_response(0, 9, frame)
        code = resp.responses[0].partition_responses[0].error_code
        if code != 0:
            raise RuntimeError(f"raw produce: error code {code}")
    mb = len(batch) * requests / 1e6
    return {"mb_s": mb / seconds, "cpu_ms_per_mb": cpu_s * 1000 / mb}


def fetch(port: int, topic: str, cpu: Callable[[], float], batches: int) -> dict[str, Any]:
    """Read the first `batches` batches back as a consumer does: one Fetch at a time, each
    from the offset after the last batch of the previous answer."""
    from protocol.codec import decode_response

    end = batches * RECORDS_PER_BATCH
    sock = socket.create_connection(("127.0.0.1", port), 30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(60)
    offset = total = cid = 0
    c0 = cpu()
    t0 = time.perf_counter()
    try:
        while offset < end:
            cid += 1
            sock.sendall(_fetch_frame(topic, offset, cid))
            (size,) = _SIZE.unpack(_recv_exact(sock, 4))
            _cid, resp = decode_response(1, 11, _recv_exact(sock, size))
            parts = [p for t in resp.responses for p in t.partitions]
            if not parts or parts[0].error_code != 0 or not parts[0].records:
                raise RuntimeError(f"raw fetch at offset {offset}: {resp}")
            got, offset = _whole_batches(parts[0].records, offset)
            total += got
    finally:
        sock.close()
    seconds = time.perf_counter() - t0
    cpu_s = cpu() - c0
    mb = total / 1e6
    return {"mb_s": mb / seconds, "cpu_ms_per_mb": cpu_s * 1000 / mb}


def _whole_batches(records: bytes, offset: int) -> tuple[int, int]:
    """(bytes of the whole batches in a Fetch answer's records, the offset after the last):
    Apache Kafka fills partition_max_bytes and may end with a partial batch, which a consumer
    drops and fetches again from its start."""
    from protocol.records import BATCH_HEADER_SIZE, parse_header

    pos = 0
    while len(records) - pos >= BATCH_HEADER_SIZE:
        header = parse_header(records, pos)
        if header.size > len(records) - pos:
            break
        offset = max(offset, header.next_offset)
        pos += header.size
    if pos == 0:
        raise RuntimeError(f"raw fetch at offset {offset}: no whole batch in the answer")
    return pos, offset


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def first_produce(port: int, topic: str, since: float, timeout: float = 120.0) -> float:
    """Seconds from `since` (a `time.perf_counter()` value: the broker's spawn) until a first
    Produce (acks=1, one 100 B record) to `topic` is acknowledged: what an application that
    starts with its broker waits for. The topic is created on first use (Metadata with
    allow_auto_topic_creation, auto.create.topics.enable being true on both brokers); every
    refusal (no connection yet, no leader yet) is retried at once."""
    from protocol.codec import decode_response, encode_request
    from protocol.records import build_batch

    batch = build_batch([(None, b"x" * 100)])
    meta = {"topics": [{"name": topic}], "allow_auto_topic_creation": True}
    body = {
        "acks": 1,
        "timeout_ms": 30000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
    }
    deadline = time.monotonic() + timeout
    cid = 0
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), 5) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                while time.monotonic() < deadline:
                    cid += 2
                    sock.sendall(encode_request(3, 12, cid, "bench-start", meta))
                    (size,) = _SIZE.unpack(_recv_exact(sock, 4))
                    _recv_exact(sock, size)
                    sock.sendall(encode_request(0, 9, cid + 1, "bench-start", body))
                    (size,) = _SIZE.unpack(_recv_exact(sock, 4))
                    _cid, resp = decode_response(0, 9, _recv_exact(sock, size))
                    if resp.responses[0].partition_responses[0].error_code == 0:
                        return time.perf_counter() - since
                    time.sleep(0.002)
        except OSError:
            time.sleep(0.002)
    raise RuntimeError(f"no produce to {topic} acknowledged within {timeout:.0f} s")


def create_until_led(port: int, topic: str, partitions: int, timeout: float = 120.0) -> float:
    """Seconds from sending CreateTopics (v7, `partitions` partitions, replication factor 1)
    until the broker's Metadata shows every partition with a leader: when the topic is usable
    (a KRaft Kafka answers CreateTopics once its controller has committed the topic, before
    its broker has created the logs; wirebroker answers with the logs created)."""
    from protocol.codec import decode_response, encode_request

    meta = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    with socket.create_connection(("127.0.0.1", port), timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = _create(sock, topic, partitions, timeout)
        cid = 1
        while time.perf_counter() - t0 < timeout:
            cid += 1
            sock.sendall(encode_request(3, 12, cid, "bench-create", meta))
            (size,) = _SIZE.unpack(_recv_exact(sock, 4))
            _cid, md = decode_response(3, 12, _recv_exact(sock, size))
            parts = md.topics[0].partitions if md.topics else []
            led = [p for p in parts if p.error_code == 0 and p.leader_id >= 0]
            if len(led) == partitions:
                return time.perf_counter() - t0
            time.sleep(0.002)
    raise RuntimeError(f"{topic}: not every partition led within {timeout:.0f} s")


def create_until_writable(port: int, topic: str, partitions: int, timeout: float = 120.0) -> float:
    """Seconds from sending CreateTopics (as `create_until_led`) until every partition has
    acknowledged a Produce (acks=1, one 100 B record each; one request names every partition
    not yet written, sent again at once for those refused): when the topic takes writes. A
    KRaft Kafka shows leaders before its broker has made the logs (`create_until_led`); a
    Produce waits for them."""
    from protocol.codec import decode_response, encode_request
    from protocol.records import build_batch

    batch = build_batch([(None, b"x" * 100)])
    pending = set(range(partitions))
    with socket.create_connection(("127.0.0.1", port), timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = _create(sock, topic, partitions, timeout)
        cid = 1
        while pending and time.perf_counter() - t0 < timeout:
            cid += 1
            parts = [{"index": p, "records": batch} for p in sorted(pending)]
            body = {
                "acks": 1,
                "timeout_ms": 30000,
                "topic_data": [{"name": topic, "partition_data": parts}],
            }
            sock.sendall(encode_request(0, 9, cid, "bench-create", body))
            (size,) = _SIZE.unpack(_recv_exact(sock, 4))
            _cid, produced = decode_response(0, 9, _recv_exact(sock, size))
            for topic_resp in produced.responses:
                for part in topic_resp.partition_responses:
                    if part.error_code == 0:
                        pending.discard(part.index)
            if pending:
                time.sleep(0.002)
        if pending:
            raise RuntimeError(f"{topic}: {len(pending)} partitions took no write in {timeout} s")
        return time.perf_counter() - t0


def _create(sock: socket.socket, topic: str, partitions: int, timeout: float) -> float:
    """Send CreateTopics v7 (`partitions` partitions, replication factor 1) and read its
    answer (RuntimeError unless created); -> `time.perf_counter()` when it was sent."""
    from protocol.codec import decode_response, encode_request

    create = {
        "topics": [
            {
                "name": topic,
                "num_partitions": partitions,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout_ms": int(timeout * 1000),
        "validate_only": False,
    }
    t0 = time.perf_counter()
    sock.sendall(encode_request(19, 7, 1, "bench-create", create))
    (size,) = _SIZE.unpack(_recv_exact(sock, 4))
    _cid, resp = decode_response(19, 7, _recv_exact(sock, size))
    if resp.topics[0].error_code != 0:
        raise RuntimeError(f"CreateTopics {topic}: error {resp.topics[0].error_code}")
    return t0
