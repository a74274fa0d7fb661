"""aiokafka adapter: AIOKafkaProducer, AIOKafkaConsumer and AIOKafkaAdminClient on one event
loop that runs in a background thread; each adapter method submits a coroutine to it.

Producers are cached per (bootstrap, compression, idempotence); acks="all". Consumers without
a group use assign() + seek() + getmany(). Group members subscribe with
enable_auto_commit=False and commit() after each getmany() that returned records. Offsets by
timestamp use the consumer's offsets_for_times() (the admin client has no ListOffsets call).
aiokafka 0.14's admin client has no delete-groups call, and its describe/configs calls return
the raw protocol responses, decoded here.

Not expressible: a null header value (aiokafka requires bytes), ApiVersions switched off.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError

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

T = TypeVar("T")
TIMEOUT_MS = 15_000
_RENAMES = {"MESSAGE_SIZE_TOO_LARGE": "MESSAGE_TOO_LARGE"}


def _client_error(exc: Exception) -> ClientError:
    name = getattr(exc, "message", None) if isinstance(exc, KafkaError) else None
    code = _RENAMES.get(str(name), str(name)) if name else type(exc).__name__
    return ClientError(code, f"{type(exc).__name__}: {exc}")


def _rec(msg: Any) -> Rec:
    return Rec(
        key=msg.key,
        value=msg.value,
        headers=tuple((k, v) for k, v in (msg.headers or ())),
        timestamp=msg.timestamp,
        partition=msg.partition,
        offset=msg.offset,
        timestamp_type=msg.timestamp_type,
    )


def _decode_assignment(data: bytes) -> set[tuple[str, int]]:
    """ConsumerProtocolAssignment: int16 version, [topic string, [int32 partition]], bytes."""
    out: set[tuple[str, int]] = set()
    if not data:
        return out
    pos = 2
    (ntopics,) = struct.unpack_from(">i", data, pos)
    pos += 4
    for _ in range(max(ntopics, 0)):
        (tlen,) = struct.unpack_from(">h", data, pos)
        pos += 2
        topic = data[pos : pos + tlen].decode()
        pos += tlen
        (nparts,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(max(nparts, 0)):
            (p,) = struct.unpack_from(">i", data, pos)
            pos += 4
            out.add((topic, p))
    return out


class Loop:
    """An asyncio loop in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 90.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


class AiokafkaMember(Member):
    def __init__(
        self, loop: Loop, bootstrap: str, group: str, topics: Iterable[str], client_id: str
    ) -> None:
        self._loop = loop

        async def start() -> AIOKafkaConsumer:
            c = AIOKafkaConsumer(
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
            c.subscribe(list(topics))
            await c.start()
            return c

        self._consumer = loop.run(start())

    def poll(self, timeout_s: float) -> list[Rec]:
        async def poll() -> list[Rec]:
            batch = await self._consumer.getmany(timeout_ms=int(timeout_s * 1000))
            out = [_rec(m) for msgs in batch.values() for m in msgs]
            if out:
                await self._consumer.commit()
            return out

        return self._loop.run(poll())

    def assignment(self) -> set[tuple[str, int]]:
        async def assigned() -> set[tuple[str, int]]:
            return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

        return self._loop.run(assigned())

    def close(self) -> None:
        self._loop.run(self._consumer.stop())


class AiokafkaAdapter(Adapter):
    name = "aiokafka"
    version = "0.14.0"
    capabilities = frozenset(
        {"timestamp", "headers", "null_value", "null_key", "binary", "idempotent", "tstype"}
    )
    codecs = ("gzip", "snappy", "lz4", "zstd")

    def __init__(self, bootstrap: str) -> None:
        super().__init__(bootstrap)
        self._loop = Loop()
        self._producers: dict[tuple[str, str | None, bool], AIOKafkaProducer] = {}
        self._admin: AIOKafkaAdminClient | None = None

    def close(self) -> None:
        async def close() -> None:
            for p in self._producers.values():
                await p.stop()
            if self._admin is not None:
                await self._admin.close()

        try:
            self._loop.run(close(), timeout=30)
        finally:
            self._producers.clear()
            self._admin = None
            self._loop.stop()

    def _admin_call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        async def call() -> Any:
            if self._admin is None:
                self._admin = AIOKafkaAdminClient(
                    bootstrap_servers=self.bootstrap, request_timeout_ms=TIMEOUT_MS
                )
                await self._admin.start()
            return await fn(self._admin, *args, **kwargs)

        try:
            return self._loop.run(call())
        except KafkaError as exc:
            raise _client_error(exc) from exc

    def produce(
        self,
        topic: str,
        records: list[Rec],
        *,
        compression: str | None = None,
        idempotent: bool = False,
        bootstrap: str | None = None,
        timeout_s: float = 30.0,
    ) -> list[Delivery] | None:
        key = (bootstrap or self.bootstrap, compression, idempotent)

        async def produce() -> list[Delivery]:
            if key not in self._producers:
                p = AIOKafkaProducer(
                    bootstrap_servers=key[0],
                    compression_type=compression,
                    enable_idempotence=idempotent,
                    acks="all",
                    linger_ms=5,
                    request_timeout_ms=TIMEOUT_MS,
                )
                await p.start()
                self._producers[key] = p
            producer = self._producers[key]
            futures = [
                await producer.send(
                    topic,
                    key=r.key,
                    value=r.value,
                    partition=r.partition,
                    timestamp_ms=r.timestamp,
                    headers=list(r.headers) or None,
                )
                for r in records
            ]
            metas = await asyncio.wait_for(asyncio.gather(*futures), timeout_s)
            return [Delivery(m.partition, m.offset) for m in metas]

        try:
            return self._loop.run(produce(), timeout=timeout_s + 10)
        except KafkaError as exc:
            raise _client_error(exc) from exc

    def _plain_consumer(self, isolation_level: str = "read_uncommitted") -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            request_timeout_ms=TIMEOUT_MS,
            fetch_max_wait_ms=100,
            isolation_level=isolation_level,
        )

    def transactional_produce(
        self,
        topic: str,
        transactions: list[tuple[list[Rec], bool]],
        transactional_id: str,
        timeout_s: float = 30.0,
    ) -> None:
        async def run() -> None:
            producer = AIOKafkaProducer(
                bootstrap_servers=self.bootstrap,
                transactional_id=transactional_id,
                linger_ms=5,
                request_timeout_ms=TIMEOUT_MS,
            )
            await producer.start()  # InitProducerId with the transactional id
            try:
                for records, commit in transactions:
                    await producer.begin_transaction()
                    futures = [
                        await producer.send(topic, key=r.key, value=r.value, partition=r.partition)
                        for r in records
                    ]
                    await asyncio.wait_for(asyncio.gather(*futures), timeout_s)
                    if commit:
                        await producer.commit_transaction()
                    else:
                        await producer.abort_transaction()
            finally:
                await producer.stop()

        try:
            self._loop.run(run(), timeout=timeout_s * (len(transactions) + 1))
        except KafkaError as exc:
            raise _client_error(exc) from exc

    def consume_from(self, q: ConsumeFrom) -> list[Rec]:

        async def consume() -> list[Rec]:
            c = self._plain_consumer(q.isolation_level)
            await c.start()
            try:
                tp = TopicPartition(q.topic, q.partition)
                c.assign([tp])
                c.seek(tp, q.start)
                out: list[Rec] = []
                loop = asyncio.get_running_loop()
                deadline = loop.time() + q.timeout_s
                while len(out) < q.count and loop.time() < deadline:
                    batch = await c.getmany(tp, timeout_ms=200)
                    out += [_rec(m) for m in batch.get(tp, [])]
                return out[: q.count]
            finally:
                await c.stop()

        return self._loop.run(consume(), timeout=q.timeout_s + 20)

    def list_topics(self) -> dict[str, int]:
        topics = self._admin_call(AIOKafkaAdminClient.describe_topics)  # Metadata, all topics
        return {t["topic"]: len(t["partitions"]) for t in topics}

    # admin -----------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        topic = NewTopic(
            name,
            num_partitions=partitions,
            replication_factor=self.replication_factor,
            topic_configs=configs,
        )
        resp = self._admin_call(AIOKafkaAdminClient.create_topics, [topic])
        for t in resp.topic_errors:
            if t[1]:
                raise ClientError(str(t[1]), repr(t))

    def create_partitions(self, name: str, total: int) -> None:
        resp = self._admin_call(
            AIOKafkaAdminClient.create_partitions, {name: NewPartitions(total_count=total)}
        )
        for t in resp.topic_errors:
            if t[1]:
                raise ClientError(str(t[1]), repr(t))

    def describe_topic_configs(self, name: str) -> dict[str, str | None]:
        [resp] = self._admin_call(
            AIOKafkaAdminClient.describe_configs, [ConfigResource(ConfigResourceType.TOPIC, name)]
        )
        [resource] = resp.resources
        if resource[0]:
            raise ClientError(str(resource[0]), str(resource[1]))
        return {entry[0]: entry[1] for entry in resource[4]}

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        [resp] = self._admin_call(
            AIOKafkaAdminClient.alter_configs,
            [ConfigResource(ConfigResourceType.TOPIC, name, configs)],
        )
        for resource in resp.resources:
            if resource[0]:
                raise ClientError(str(resource[0]), str(resource[1]))

    def delete_topic(self, name: str) -> None:
        resp = self._admin_call(AIOKafkaAdminClient.delete_topics, [name])
        for t in resp.topic_error_codes:
            if t[1]:
                raise ClientError(str(t[1]), repr(t))

    def list_groups(self) -> set[str]:
        return {g[0] for g in self._admin_call(AIOKafkaAdminClient.list_consumer_groups)}

    def describe_group(self, group: str) -> GroupInfo:
        [resp] = self._admin_call(AIOKafkaAdminClient.describe_consumer_groups, [group])
        [g] = resp.groups
        if g[0]:
            raise ClientError(str(g[0]), repr(g))
        members = [GroupMemberInfo(m[0], m[1], _decode_assignment(m[-1])) for m in g[5]]
        return GroupInfo(g[1], g[2], g[3], members)

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int | None:
        async def lookup() -> int | None:
            c = self._plain_consumer()
            await c.start()
            try:
                tp = TopicPartition(topic, partition)
                got = await c.offsets_for_times({tp: timestamp})
                hit = got.get(tp)
                return None if hit is None else int(hit.offset)
            finally:
                await c.stop()

        return self._loop.run(lookup())

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        tp = TopicPartition(topic, partition)
        got = self._admin_call(
            AIOKafkaAdminClient.delete_records, {tp: RecordsToDelete(before_offset=before)}
        )
        return int(got[tp])

    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        return AiokafkaMember(self._loop, self.bootstrap, group, topics, client_id)


ADAPTER = AiokafkaAdapter
