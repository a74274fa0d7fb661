"""Controller mutation quotas (KIP-599): the same sequences and the same assertions against Apache
Kafka 4.4 (the oracle), a wirebroker and a 3-broker wirebroker cluster (each of its brokers
keeps its own buckets; the client talks to one). A client id gets `controller_mutation_rate=1`
(AlterClientQuotas; a bucket of 11 partitions that refills at one a second), then creates,
grows and deletes topics: strict versions (CreateTopics v7, CreatePartitions v3, DeleteTopics
v6) take a topic's partitions into the negative with throttle 0, then refuse the next topics
THROTTLING_QUOTA_EXCEEDED (no message) with the time the bucket needs to be back at zero;
permissive versions (CreateTopics v5, DeleteTopics v4) accept and throttle; validate_only
takes; topics refused for another reason take nothing; the connection is muted for the throttle
time. A throttle time is asserted between the debt with no refill and that less the time
since the first request (the bucket refills at one a second); which topics of a
DeleteTopics meet the exhausted quota is not asserted (Kafka deletes in hash order)."""

from __future__ import annotations

import socket
import struct
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode

THROTTLED = ErrorCode.THROTTLING_QUOTA_EXCEEDED
NIL = uuid.UUID(int=0)


class Client:
    """One connection with its own client id (the quota's entity)."""

    def __init__(self, bootstrap: str, client_id: str) -> None:
        host, _, port = bootstrap.split(",")[0].rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.client_id = client_id
        self.correlation = 0
        self.elapsed = 0.0  # of the last call
        self.started = time.monotonic()  # reset once the quota is set (the fixture)

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return bytes(data)

    def call(self, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
        self.correlation += 1
        start = time.monotonic()
        self.sock.sendall(encode_request(int(api), version, self.correlation, self.client_id, body))
        (size,) = struct.unpack(">i", self._read(4))
        _corr, answer = decode_response(int(api), version, self._read(size))
        self.elapsed = time.monotonic() - start
        return answer

    def create(self, version: int, *topics: tuple[str, int], validate_only: bool = False) -> Any:
        body = {
            "topics": [
                {
                    "name": n,
                    "num_partitions": p,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
                for n, p in topics
            ],
            "timeout_ms": 30000,
            "validate_only": validate_only,
        }
        answer = self.call(ApiKey.CREATE_TOPICS, version, body)
        return answer.throttle_time_ms, [
            (t.name, t.error_code, t.error_message) for t in answer.topics
        ]

    def grow(self, *topics: tuple[str, int]) -> Any:
        body = {
            "topics": [{"name": n, "count": c, "assignments": None} for n, c in topics],
            "timeout_ms": 30000,
            "validate_only": False,
        }
        answer = self.call(ApiKey.CREATE_PARTITIONS, 3, body)
        assert all(t.error_message is None for t in answer.results)
        return answer.throttle_time_ms, {t.name: t.error_code for t in answer.results}

    def delete(self, version: int, *names: str) -> Any:
        body: dict[str, Any] = {"timeout_ms": 30000}
        if version >= 6:
            body["topics"] = [{"name": n, "topic_id": NIL} for n in names]
        else:
            body["topic_names"] = list(names)
        answer = self.call(ApiKey.DELETE_TOPICS, version, body)
        return answer.throttle_time_ms, {r.name: r.error_code for r in answer.responses}

    def describe_quota(self) -> dict[str, float]:
        body = {
            "components": [{"entity_type": "client-id", "match_type": 0, "match": self.client_id}],
            "strict": True,
        }
        answer = self.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, body)
        return {v.key: v.value for e in answer.entries or [] for v in e["values"]}

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def quota_client(any_broker: str) -> Iterator[Client]:
    """A client whose client id has controller_mutation_rate=1, seen by the broker."""
    client = Client(any_broker, f"cmq-{uuid.uuid4().hex[:10]}")
    entry = {
        "entity": [{"entity_type": "client-id", "entity_name": client.client_id}],
        "ops": [{"key": "controller_mutation_rate", "value": 1.0, "remove": False}],
    }
    answer = client.call(
        ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [entry], "validate_only": False}
    )
    assert [e.error_code for e in answer.entries] == [0]
    deadline = time.monotonic() + 10  # Kafka's broker learns it from the metadata log
    while client.describe_quota() != {"controller_mutation_rate": 1.0}:
        assert time.monotonic() < deadline
    client.started = time.monotonic()
    yield client
    client.close()


@pytest.fixture
def admin(any_broker: str) -> Iterator[Client]:
    """A client without a quota, to set the stage."""
    client = Client(any_broker, f"free-{uuid.uuid4().hex[:10]}")
    yield client
    client.close()


def near(ms: int, expected: int, client: Client) -> bool:
    """`expected` is the throttle time if the bucket had not refilled at all since the
    client's first request; it refills at one a second, so the answer is less by at most the
    time since (requests, mutes, a cluster's waits for its topics included)."""
    since_ms = (time.monotonic() - client.started) * 1000
    return expected - since_ms - 50 <= ms <= expected + 1


def test_create_topics_strict(quota_client: Client, unique: Any) -> None:
    a, b, c = unique("cmq-a"), unique("cmq-b"), unique("cmq-c")
    assert quota_client.create(7, (a, 12)) == (0, [(a, 0, None)])
    ms, results = quota_client.create(7, (b, 1), (c, 1))
    assert results == [(b, THROTTLED, None), (c, THROTTLED, None)]
    assert near(ms, 1000, quota_client)
    # the connection was muted that long: the next answer comes once the bucket is at zero,
    # and then a topic is created again (zero is not below zero), taking it below
    ms2, results = quota_client.create(7, (b, 1))
    assert quota_client.elapsed >= ms / 1000 - 0.2
    assert (ms2, results) == (0, [(b, 0, None)])


def test_refused_topics_take_nothing_and_validate_only_takes(
    quota_client: Client, unique: Any
) -> None:
    a, b, c = unique("cmq-a"), unique("cmq-b"), unique("cmq-c")
    assert quota_client.create(7, (a, 11)) == (0, [(a, 0, None)])  # the bucket: 0
    # a name taken and a partition count of 0 are refused before the quota is asked
    ms, results = quota_client.create(7, (a, 30), (b, 0))
    assert ms == 0
    assert [(n, code) for n, code, _m in results] == [
        (a, ErrorCode.TOPIC_ALREADY_EXISTS),
        (b, ErrorCode.INVALID_PARTITIONS),
    ]
    assert quota_client.create(7, (b, 3), validate_only=True) == (0, [(b, 0, None)])
    ms, results = quota_client.create(7, (c, 1))
    assert results == [(c, THROTTLED, None)] and near(ms, 3000, quota_client)


def test_create_topics_permissive(quota_client: Client, unique: Any) -> None:
    a, b = unique("cmq-a"), unique("cmq-b")
    ms, results = quota_client.create(5, (a, 6), (b, 6))
    assert results == [(a, 0, None), (b, 0, None)] and near(ms, 1000, quota_client)


def test_create_partitions_strict(quota_client: Client, admin: Client, unique: Any) -> None:
    a, b, missing = unique("cmq-a"), unique("cmq-b"), unique("cmq-missing")
    assert admin.create(7, (a, 1), (b, 1))[1] == [(a, 0, None), (b, 0, None)]
    # (Kafka answers the topics of one request in no set order)
    ms, results = quota_client.grow((missing, 3), (a, 13))
    assert ms == 0 and results == {missing: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, a: 0}
    ms, results = quota_client.grow((b, 2))
    assert results == {b: THROTTLED} and near(ms, 1000, quota_client)


def test_delete_topics(quota_client: Client, admin: Client, unique: Any) -> None:
    names = [unique(f"cmq-d{i}") for i in range(5)]
    assert [code for _n, code, _m in admin.create(7, *((n, 6) for n in names))[1]] == [0] * 5
    ms, results = quota_client.delete(6, *names[:3])
    # 6 + 6 take the bucket of 11 to -1: the third (whichever Kafka takes last) is refused
    assert sorted(results.values()) == [0, 0, THROTTLED] and near(ms, 1000, quota_client)
    kept = [n for n in names[:3] if results[n] == THROTTLED]
    # DeleteTopics v4 is permissive: deleted, and throttled by the debt (-1 - 12, less the
    # refill: about a second, the mute)
    ms, results = quota_client.delete(4, *kept, names[3])
    assert results == {kept[0]: 0, names[3]: 0}
    assert near(ms, 13000, quota_client)
