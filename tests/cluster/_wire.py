"""Kafka requests without a client library, for the cluster tests: exact error codes and
exactly one broker asked (a client library retries, refreshes metadata and picks brokers).

Frames come from `protocol.codec`; one blocking socket per call (`request`), bounded by
`timeout`. Helpers:
    metadata(addr, topics)                  -> Metadata v12 response (brokers, controller_id,
                                               topics[].partitions[] leader/replicas/isr)
    list_offset(addr, topic, p, ts=-1)      -> (error_code, offset); -1 latest = the high
                                               watermark, -2 earliest
    produce(addr, topic, p, values, acks)   -> (error_code, base_offset), one v2 batch
    create_topic(addr, name, partitions, rf, configs) -> error code (0 or TOPIC_ALREADY_EXISTS)
    find_coordinator(addr, group)           -> (error_code, node_id)
"""

from __future__ import annotations

import itertools
import socket
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from protocol.codec import decode_response, encode_request
from protocol.records import build_batch

METADATA, LIST_OFFSETS, PRODUCE, CREATE_TOPICS, FIND_COORDINATOR = 3, 2, 0, 19, 10
LATEST, EARLIEST = -1, -2
_cids = itertools.count(1)


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def request(
    address: str, api_key: int, version: int, body: Mapping[str, Any], timeout: float = 10.0
) -> Any:
    """One request to the broker at `address` ("host:port"); its decoded response."""
    cid = next(_cids)
    with socket.create_connection(split_address(address), timeout) as sock:
        sock.sendall(encode_request(api_key, version, cid, "cluster-tests", dict(body)))
        (size,) = struct.unpack(">i", _recv_exact(sock, 4))
        got, resp = decode_response(api_key, version, _recv_exact(sock, size))
    assert got == cid, f"correlation id {got} != {cid}"
    return resp


def metadata(address: str, topics: Sequence[str] | None = None) -> Any:
    body = {
        "topics": None if topics is None else [{"name": t} for t in topics],
        "allow_auto_topic_creation": False,
    }
    return request(address, METADATA, 12, body)


def partition_view(address: str, topic: str) -> dict[int, dict[str, Any]]:
    """{partition: {leader, leader_epoch, replicas, isr, offline, error}} as `address` sees it."""
    resp = metadata(address, [topic])
    (t,) = resp.topics
    return {
        p.partition_index: {
            "leader": p.leader_id,
            "leader_epoch": p.leader_epoch,
            "replicas": list(p.replica_nodes),
            "isr": list(p.isr_nodes),
            "offline": list(p.offline_replicas),
            "error": p.error_code or t.error_code,
        }
        for p in t.partitions
    }


def list_offset(
    address: str, topic: str, partition: int, timestamp: int = LATEST
) -> tuple[int, int]:
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": partition,
                        "current_leader_epoch": -1,
                        "timestamp": timestamp,
                    }
                ],
            }
        ],
    }
    resp = request(address, LIST_OFFSETS, 7, body)
    p = resp.topics[0].partitions[0]
    return p.error_code, p.offset


def produce(
    address: str,
    topic: str,
    partition: int,
    values: Sequence[bytes],
    *,
    acks: int = -1,
    timeout_ms: int = 10_000,
) -> tuple[int, int]:
    batch = build_batch([(None, v) for v in values])
    body = {
        "transactional_id": None,
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}],
    }
    resp = request(address, PRODUCE, 9, body, timeout=timeout_ms / 1000 + 10)
    p = resp.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def create_topic(
    address: str,
    name: str,
    partitions: int,
    replication_factor: int,
    configs: Mapping[str, str] | None = None,
) -> tuple[int, str | None]:
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": partitions,
                "replication_factor": replication_factor,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
            }
        ],
        "timeout_ms": 30_000,
        "validate_only": False,
    }
    resp = request(address, CREATE_TOPICS, 5, body, timeout=40)
    t = resp.topics[0]
    return t.error_code, t.error_message


def find_coordinator(address: str, group: str) -> tuple[int, int]:
    resp = request(address, FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
    return resp.error_code, resp.node_id
