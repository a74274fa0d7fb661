"""kafka-python adapter: KafkaProducer, KafkaConsumer and KafkaAdminClient, used as documented.

Producers are cached per (bootstrap, compression, idempotence) so that a scenario's calls
share one producer (and one producer id) as an application would. kafka-python 3.x is
idempotent by default; `idempotent=False` switches it off explicitly (acks=all either way).
Consumers without a group use assign() + seek(); group members use subscribe() with
enable_auto_commit=False and commit() after each poll that returned records.

Not expressible: a null header value (KafkaProducer.send requires (str, bytes) header tuples).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import KafkaError

from compat.kafka_python_join import unstick_join
from compat.scenarios.api import (
    Adapter,
    ClientError,
    ConsumeFrom,
    Delivery,
    GroupInfo,
    GroupMemberInfo,
    Member,
    Rec,
)

TIMEOUT_MS = 15_000
# kafka-python's error class `message` names differ from Kafka's in a few places.
_RENAMES = {"MESSAGE_SIZE_TOO_LARGE": "MESSAGE_TOO_LARGE"}


def _client_error(exc: Exception) -> ClientError:
    name = getattr(exc, "message", None) if isinstance(exc, KafkaError) else None
    code = _RENAMES.get(str(name), str(name)) if name else type(exc).__name__
    return ClientError(code, f"{type(exc).__name__}: {exc}")


def _rec(msg: Any) -> Rec:
    return Rec(
        key=msg.key,
        value=msg.value,
        headers=tuple((k, v) for k, v in (msg.headers or [])),
        timestamp=msg.timestamp,
        partition=msg.partition,
        offset=msg.offset,
        timestamp_type=msg.timestamp_type,
    )


class KafkaPythonMember(Member):
    def __init__(self, bootstrap: str, group: str, topics: Iterable[str], client_id: str):
        self._consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=TIMEOUT_MS,
            heartbeat_interval_ms=500,
            session_timeout_ms=10_000,
            fetch_max_wait_ms=100,
        )
        self._consumer.subscribe(list(topics))

    def poll(self, timeout_s: float) -> list[Rec]:
        batch = self._consumer.poll(timeout_ms=int(timeout_s * 1000))
        out = [_rec(m) for msgs in batch.values() for m in msgs]
        if out:
            self._consumer.commit()
        unstick_join(self._consumer)  # a kafka-python race, compat/kafka_python_join.py
        return out

    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def close(self) -> None:
        self._consumer.close()


class KafkaPythonAdapter(Adapter):
    name = "kafka-python"
    version = "3.0.12"
    capabilities = frozenset(
        {
            "timestamp",
            "headers",
            "null_value",
            "null_key",
            "binary",
            "idempotent",
            "tstype",
            "legacy",
        }
    )
    codecs = ("gzip", "snappy", "lz4", "zstd")

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self._producers: dict[tuple[str, str | None, bool], KafkaProducer] = {}
        self._admin: KafkaAdminClient | None = None

    def close(self) -> None:
        for p in self._producers.values():
            p.close(timeout=5)
        self._producers.clear()
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    @property
    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            self._admin = KafkaAdminClient(
                bootstrap_servers=self.bootstrap, request_timeout_ms=TIMEOUT_MS
            )
        return self._admin

    def _producer(self, bootstrap: str, compression: str | None, idempotent: bool) -> Any:
        key = (bootstrap, compression, idempotent)
        if key not in self._producers:
            self._producers[key] = KafkaProducer(
                bootstrap_servers=bootstrap,
                compression_type=compression,
                enable_idempotence=idempotent,
                acks="all",
                retries=10,
                linger_ms=5,
                request_timeout_ms=TIMEOUT_MS,
                max_block_ms=TIMEOUT_MS,
            )
        return self._producers[key]

    def produce(
        self,
        topic: str,
        records: list[Rec],
        *,
        compression: str | None = None,
        idempotent: bool = False,
        bootstrap: str | None = None,
        timeout_s: float = 30.0,
    ) -> list[Delivery]:
        producer = self._producer(bootstrap or self.bootstrap, compression, idempotent)
        try:
            futures = [
                producer.send(
                    topic,
                    key=r.key,
                    value=r.value,
                    headers=list(r.headers),
                    partition=r.partition,
                    timestamp_ms=r.timestamp,
                )
                for r in records
            ]
            producer.flush(timeout=timeout_s)
            metas = [f.get(timeout=timeout_s) for f in futures]
        except KafkaError as exc:
            raise _client_error(exc) from exc
        return [Delivery(m.partition, m.offset) for m in metas]

    def transactional_produce(
        self,
        topic: str,
        transactions: list[tuple[list[Rec], bool]],
        transactional_id: str,
        timeout_s: float = 30.0,
    ) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            transactional_id=transactional_id,
            linger_ms=5,
            request_timeout_ms=TIMEOUT_MS,
            max_block_ms=TIMEOUT_MS,
        )
        try:
            producer.init_transactions()
            for records, commit in transactions:
                producer.begin_transaction()
                futures = [
                    producer.send(topic, key=r.key, value=r.value, partition=r.partition)
                    for r in records
                ]
                producer.flush(timeout=timeout_s)
                for f in futures:
                    f.get(timeout=timeout_s)
                if commit:
                    producer.commit_transaction()
                else:
                    producer.abort_transaction()
        except KafkaError as exc:
            raise _client_error(exc) from exc
        finally:
            producer.close(timeout=5)

    def consume_from(self, q: ConsumeFrom) -> list[Rec]:
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            request_timeout_ms=TIMEOUT_MS,
            fetch_max_wait_ms=100,
            isolation_level=q.isolation_level,
        )
        try:
            tp = TopicPartition(q.topic, q.partition)
            consumer.assign([tp])
            consumer.seek(tp, q.start)
            out: list[Rec] = []
            deadline = time.monotonic() + q.timeout_s
            while len(out) < q.count and time.monotonic() < deadline:
                for msgs in consumer.poll(timeout_ms=200).values():
                    out += [_rec(m) for m in msgs]
            return out[: q.count]
        finally:
            consumer.close()

    def list_topics(self) -> dict[str, int]:
        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, request_timeout_ms=TIMEOUT_MS)
        try:
            topics = consumer.topics()
            return {t: len(consumer.partitions_for_topic(t) or ()) for t in topics}
        finally:
            consumer.close()

    # admin -----------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        self.admin.create_topics(
            [
                NewTopic(
                    name,
                    num_partitions=partitions,
                    replication_factor=self.replication_factor,
                    topic_configs=configs,
                )
            ]
        )

    def create_partitions(self, name: str, total: int) -> None:
        self.admin.create_partitions({name: total})

    def describe_topic_configs(self, name: str) -> dict[str, str | None]:
        result = self.admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name)], config_filter="all"
        )
        configs = result["TOPIC"][name] if "TOPIC" in result else _first_resource(result)
        return {k: (v.get("value") if isinstance(v, dict) else v) for k, v in configs.items()}

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        self.admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, name, configs=configs)])

    def delete_topic(self, name: str) -> None:
        self.admin.delete_topics([name])

    def list_groups(self) -> set[str]:
        return {_group_id(g) for g in self.admin.list_groups()}

    def describe_group(self, group: str) -> GroupInfo:
        desc = self.admin.describe_groups([group])[group]
        members = []
        for m in desc.get("members", []):
            assignment = m.get("member_assignment") or {}
            tps: set[tuple[str, int]] = set()
            for t in assignment.get("assigned_partitions", []) or []:
                topic: str = t["topic"] if isinstance(t, dict) else t[0]
                parts: list[int] = t["partitions"] if isinstance(t, dict) else t[1]
                tps.update((topic, p) for p in parts)
            members.append(GroupMemberInfo(m.get("member_id", ""), m.get("client_id", ""), tps))
        return GroupInfo(group, desc.get("group_state", ""), desc.get("protocol_type", ""), members)

    def delete_group(self, group: str) -> None:
        result = self.admin.delete_groups([group])  # {group_id: "OK" | error class name}
        if result.get(group) != "OK":
            raise ClientError(str(result.get(group)), repr(result))

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int | None:
        tp = TopicPartition(topic, partition)
        got = self.admin.list_partition_offsets({tp: timestamp})[tp]
        return None if got is None or got.offset in (-1, None) else got.offset

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        tp = TopicPartition(topic, partition)
        result = self.admin.delete_records({tp: before})
        return int(_low_watermark(result[tp]))

    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        return KafkaPythonMember(self.bootstrap, group, topics, client_id)

    def legacy_round_trip(
        self, topic: str, message_format: int, values: list[bytes]
    ) -> list[bytes]:
        # An explicit api_version makes kafka-python use that broker's request versions:
        # (0, 9) -> Produce v1, message format v0; (0, 10, 1) -> Produce v2, message format v1.
        api_version = (0, 9) if message_format == 0 else (0, 10, 1)
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            api_version=api_version,
            enable_idempotence=False,
            acks=1,
            retries=0,
            request_timeout_ms=TIMEOUT_MS,
            max_block_ms=TIMEOUT_MS,
        )
        try:
            futures = [producer.send(topic, value=v, partition=0) for v in values]
            producer.flush(timeout=30)
            for f in futures:
                f.get(timeout=30)
        except KafkaError as exc:
            raise _client_error(exc) from exc
        finally:
            producer.close(timeout=5)
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            api_version=api_version,
            group_id=None,
            enable_auto_commit=False,
            request_timeout_ms=TIMEOUT_MS,
        )
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            consumer.seek(tp, 0)
            out: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(out) < len(values) and time.monotonic() < deadline:
                for msgs in consumer.poll(timeout_ms=200).values():
                    out += [m.value for m in msgs]
            return out
        finally:
            consumer.close()


def _first_resource(result: Any) -> Any:
    for per_type in result.values():
        for configs in per_type.values():
            return configs
    raise AssertionError(f"empty describe_configs result {result!r}")


def _group_id(g: Any) -> str:
    if isinstance(g, dict):
        return str(g.get("group_id"))
    if isinstance(g, tuple):
        return str(g[0])
    return str(getattr(g, "group_id", g))


def _low_watermark(value: Any) -> int:
    if isinstance(value, dict):
        return int(value["low_watermark"])
    return int(getattr(value, "low_watermark", value))


ADAPTER = KafkaPythonAdapter
