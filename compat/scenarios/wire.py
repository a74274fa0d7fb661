"""The oracle: a tiny blocking Kafka client built on this repository's `protocol/` package.

Scenarios use it to set a stage and to check what a client under test did, without trusting
that client (or any other client under test): create topics, write batches with exact
timestamps, read back what is stored (with each batch's codec and timestamp type), read
end/start offsets and committed group offsets, describe configs, list topics.

It speaks fixed request versions (all served by Kafka 4.x) over one socket to the single
broker; every call has a socket timeout, and every error code other than NONE raises
`WireError(api, code)`. It is deliberately small: no retries, no metadata cache.

    Metadata v9, CreateTopics v5, DeleteTopics v4, Produce v8, Fetch v11, ListOffsets v5,
    DescribeConfigs v3, OffsetFetch v7, OffsetCommit v7, ListGroups v4.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass
from typing import Any

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from protocol.records import RecordSpec, build_batch, decode_records, iter_batches

EARLIEST = -2
LATEST = -1


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


class Wire:
    """One connection to `bootstrap` ("host:port"); use as a context manager."""

    def __init__(self, bootstrap: str, timeout: float = 15.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self._sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation = 0

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------------
    def _recv_exact(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self._sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            chunks += chunk
        return bytes(chunks)

    def call(self, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
        self._correlation += 1
        frame = encode_request(int(api), version, self._correlation, "compat-oracle", body)
        self._sock.sendall(frame)
        (size,) = struct.unpack(">i", self._recv_exact(4))
        correlation, response = decode_response(int(api), version, self._recv_exact(size))
        if correlation != self._correlation:
            raise ConnectionError(f"correlation id {correlation} != {self._correlation}")
        return response

    @staticmethod
    def _check(api: str, code: int, detail: str = "") -> None:
        if code != 0:
            raise WireError(api, code, detail)

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
            "replication_factor": 1,
            "assignments": [],
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
        }
        resp = self.call(ApiKey.CREATE_TOPICS, 5, {"topics": [topic], "timeout_ms": 10_000})
        [result] = resp.topics
        self._check("CreateTopics", result.error_code, result.error_message or "")

    def create_topics(self, names: list[str], partitions: int) -> None:
        topics = [{"name": n, "num_partitions": partitions, "replication_factor": 1} for n in names]
        resp = self.call(ApiKey.CREATE_TOPICS, 5, {"topics": topics, "timeout_ms": 30_000})
        for result in resp.topics:
            self._check("CreateTopics", result.error_code, result.name)

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
    ) -> int:
        """Append one batch (acks=-1); returns its base offset."""
        batch = build_batch(records, compression=compression, base_timestamp=base_timestamp)
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": batch}]}
            ],
        }
        resp = self.call(ApiKey.PRODUCE, 8, body)
        [topic_resp] = resp.responses
        [part] = topic_resp.partition_responses
        self._check("Produce", part.error_code, f"{topic}-{partition}")
        return int(part.base_offset)

    def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        """ListOffsets: LATEST (-1), EARLIEST (-2) or a timestamp; -1 when none matches."""
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": partition, "timestamp": timestamp}],
                }
            ],
        }
        resp = self.call(ApiKey.LIST_OFFSETS, 5, body)
        [part] = resp.topics[0].partitions
        self._check("ListOffsets", part.error_code, f"{topic}-{partition}")
        return int(part.offset)

    def read(self, topic: str, partition: int, start: int = 0) -> list[StoredRecord]:
        """Every record of the partition from `start` up to the high watermark at call time."""
        end = self.list_offset(topic, partition, LATEST)
        out: list[StoredRecord] = []
        offset = start
        while offset < end:
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
            resp = self.call(ApiKey.FETCH, 11, body)
            self._check("Fetch", resp.error_code)
            [part] = resp.responses[0].partitions
            self._check("Fetch", part.error_code, f"{topic}-{partition}")
            data = part.records or b""
            progressed = False
            for pos, header in iter_batches(data):
                if header.is_control:
                    offset = max(offset, header.next_offset)
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
                        )
                    )
                    progressed = True
                offset = max(offset, header.next_offset)
            if not progressed and not data:
                raise RuntimeError(f"fetch at {offset} of {topic}-{partition} returned nothing")
        return out

    # -- groups ----------------------------------------------------------------------------
    def committed(self, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
        """{partition: committed offset (-1: none)} of `group`."""
        body = {
            "group_id": group,
            "topics": [{"name": topic, "partition_indexes": partitions}],
            "require_stable": False,
        }
        resp = self.call(ApiKey.OFFSET_FETCH, 7, body)
        self._check("OffsetFetch", resp.error_code, group)
        out: dict[int, int] = {}
        for t in resp.topics:
            for p in t.partitions:
                self._check("OffsetFetch", p.error_code, f"{t.name}-{p.partition_index}")
                out[p.partition_index] = int(p.committed_offset)
        return out

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
        resp = self.call(ApiKey.OFFSET_COMMIT, 7, body)
        for t in resp.topics:
            for p in t.partitions:
                self._check("OffsetCommit", p.error_code, f"{t.name}-{p.partition_index}")

    def groups(self) -> dict[str, str]:
        """{group id: state} from ListGroups v4."""
        resp = self.call(ApiKey.LIST_GROUPS, 4, {"states_filter": []})
        self._check("ListGroups", resp.error_code)
        return {g.group_id: g.group_state for g in resp.groups}
