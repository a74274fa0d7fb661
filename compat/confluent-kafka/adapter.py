"""confluent-kafka (librdkafka 2.16) adapter: Producer, Consumer and AdminClient as documented.

Producers are cached per (bootstrap, compression, idempotence); each produce() call flushes
and collects the delivery reports. Consumers without a group use assign() at an offset (a
group.id is configured because the Python binding requires one, but nothing joins or
commits). Group members use subscribe() with enable.auto.commit=false and a synchronous
commit() after each poll that returned records. Admin calls use the AdminClient futures.

ApiVersions can be switched off (api.version.request=false + broker.version.fallback), which
makes librdkafka use the request versions of that old broker and legacy message sets.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from compat.scenarios.api import (
    Adapter,
    ClientError,
    ConsumeFrom,
    Delivery,
    GroupInfo,
    GroupMemberInfo,
    Member,
    Rec,
    Unsupported,
)

TIMEOUT = 15.0
# librdkafka's names for Kafka errors that differ from Kafka's own.
_RENAMES = {
    "MSG_SIZE_TOO_LARGE": "MESSAGE_TOO_LARGE",
    "_UNSUPPORTED_FEATURE": "UNSUPPORTED_VERSION",
}
_TSTYPE = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}


def _code(err: KafkaError) -> str:
    name = err.name()
    return _RENAMES.get(name, name)


def _rec(msg: Any) -> Rec:
    tstype, ts = msg.timestamp()
    return Rec(
        key=msg.key(),
        value=msg.value(),
        headers=tuple(msg.headers() or ()),
        timestamp=ts,
        partition=msg.partition(),
        offset=msg.offset(),
        timestamp_type=_TSTYPE.get(tstype),
    )


def _wait(futures: dict[Any, Any]) -> dict[Any, Any]:
    try:
        return {k: f.result(timeout=TIMEOUT) for k, f in futures.items()}
    except KafkaException as exc:
        err = exc.args[0]
        raise ClientError(_code(err), str(err)) from exc


class ConfluentMember(Member):
    def __init__(
        self,
        bootstrap: str,
        group: str,
        topics: Iterable[str],
        client_id: str,
        group_protocol: str = "classic",
    ):
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
            "group.protocol": group_protocol,
        }
        if group_protocol == "classic":  # the consumer protocol's timeouts are the broker's
            conf |= {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 500}
        self._consumer = Consumer(conf)
        self._consumer.subscribe(list(topics))

    def poll(self, timeout_s: float) -> list[Rec]:
        msgs = self._consumer.consume(num_messages=500, timeout=timeout_s)
        out = []
        for m in msgs:
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise ClientError(_code(err), str(err))
            out.append(_rec(m))
        if out:
            self._consumer.commit(asynchronous=False)
        return out

    def assignment(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def close(self) -> None:
        self._consumer.close()


class ConfluentAdapter(Adapter):
    name = "confluent-kafka"
    version = "2.16.1"
    group_protocols = frozenset({"classic", "consumer"})
    capabilities = frozenset(
        {
            "timestamp",
            "headers",
            "header_null",
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
        self._producers: dict[tuple[str, str | None, bool], Producer] = {}
        self._admin: AdminClient | None = None

    def close(self) -> None:
        for p in self._producers.values():
            p.flush(5)
        self._producers.clear()
        self._admin = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin

    def _producer(self, bootstrap: str, compression: str | None, idempotent: bool) -> Producer:
        key = (bootstrap, compression, idempotent)
        if key not in self._producers:
            self._producers[key] = Producer(
                {
                    "bootstrap.servers": bootstrap,
                    "compression.type": compression or "none",
                    "enable.idempotence": idempotent,
                    "acks": "all",
                    "linger.ms": 5,
                    "request.timeout.ms": int(TIMEOUT * 1000),
                }
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
        reports: list[Any] = [None] * len(records)

        def report(i: int) -> Any:
            def cb(err: KafkaError | None, msg: Any) -> None:
                reports[i] = err if err is not None else Delivery(msg.partition(), msg.offset())

            return cb

        for i, r in enumerate(records):
            kwargs: dict[str, Any] = {"key": r.key, "value": r.value, "on_delivery": report(i)}
            if r.partition is not None:
                kwargs["partition"] = r.partition
            if r.timestamp is not None:
                kwargs["timestamp"] = r.timestamp
            if r.headers:
                kwargs["headers"] = list(r.headers)
            try:
                producer.produce(topic, **kwargs)
            except KafkaException as exc:
                raise ClientError(_code(exc.args[0]), str(exc)) from exc
        left = producer.flush(timeout_s)
        if left:
            raise ClientError("TIMEOUT", f"{left} messages not delivered in {timeout_s} s")
        for rep in reports:
            if isinstance(rep, KafkaError):
                raise ClientError(_code(rep), str(rep))
        return list(reports)

    def _plain_consumer(self, extra: dict[str, Any] | None = None) -> Consumer:
        config = {
            "bootstrap.servers": self.bootstrap,
            "group.id": "compat-unused",  # required by the binding; assign() joins no group
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
        }
        config.update(extra or {})
        return Consumer(config)

    def consume_from(self, q: ConsumeFrom) -> list[Rec]:
        consumer = self._plain_consumer({"isolation.level": q.isolation_level})
        return self._consume(consumer, q.topic, q.partition, q.start, q.count, q.timeout_s)

    def transactional_produce(
        self,
        topic: str,
        transactions: list[tuple[list[Rec], bool]],
        transactional_id: str,
        timeout_s: float = 30.0,
    ) -> None:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": transactional_id,
                "linger.ms": 5,
                "message.timeout.ms": int(timeout_s * 1000),
            }
        )
        errors: list[KafkaError] = []

        def on_delivery(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        try:
            producer.init_transactions(timeout_s)
            for records, commit in transactions:
                producer.begin_transaction()
                for r in records:
                    kwargs: dict[str, Any] = {"key": r.key, "value": r.value}
                    if r.partition is not None:
                        kwargs["partition"] = r.partition
                    producer.produce(topic, on_delivery=on_delivery, **kwargs)
                if producer.flush(timeout_s):
                    raise ClientError("TIMEOUT", f"not delivered in {timeout_s} s")
                if errors:
                    raise ClientError(_code(errors[0]), str(errors[0]))
                if commit:
                    producer.commit_transaction(timeout_s)
                else:
                    producer.abort_transaction(timeout_s)
        except KafkaException as exc:
            raise ClientError(_code(exc.args[0]), str(exc)) from exc

    @staticmethod
    def _consume(
        consumer: Consumer, topic: str, partition: int, start: int, count: int, timeout_s: float
    ) -> list[Rec]:
        try:
            consumer.assign([TopicPartition(topic, partition, start)])
            out: list[Rec] = []
            deadline = time.monotonic() + timeout_s
            while len(out) < count and time.monotonic() < deadline:
                for m in consumer.consume(num_messages=500, timeout=0.2):
                    err = m.error()
                    if err is not None:
                        raise ClientError(_code(err), str(err))
                    out.append(_rec(m))
            return out[:count]
        finally:
            consumer.close()

    def list_topics(self) -> dict[str, int]:
        meta = self.admin.list_topics(timeout=TIMEOUT)
        return {name: len(t.partitions) for name, t in meta.topics.items()}

    # admin -----------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, configs: dict[str, str]) -> None:
        _wait(
            self.admin.create_topics(
                [NewTopic(name, partitions, self.replication_factor, config=configs)]
            )
        )

    def create_partitions(self, name: str, total: int) -> None:
        _wait(self.admin.create_partitions([NewPartitions(name, total)]))

    def describe_topic_configs(self, name: str) -> dict[str, str | None]:
        result = _wait(self.admin.describe_configs([ConfigResource(ResourceType.TOPIC, name)]))
        [entries] = result.values()
        return {k: e.value for k, e in entries.items()}

    def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        entries = [
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in configs.items()
        ]
        resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=entries)
        _wait(self.admin.incremental_alter_configs([resource]))

    def delete_topic(self, name: str) -> None:
        _wait(self.admin.delete_topics([name]))

    def list_groups(self) -> set[str]:
        result = self.admin.list_consumer_groups().result(timeout=TIMEOUT)
        if result.errors:
            raise ClientError("LIST_GROUPS", repr(result.errors))
        return {g.group_id for g in result.valid}

    def describe_group(self, group: str) -> GroupInfo:
        [desc] = _wait(self.admin.describe_consumer_groups([group])).values()
        members = [
            GroupMemberInfo(
                m.member_id,
                m.client_id,
                {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions},
            )
            for m in desc.members
        ]
        state = {
            "STABLE": "Stable",
            "EMPTY": "Empty",
            "DEAD": "Dead",
            "PREPARING_REBALANCE": "PreparingRebalance",
            "COMPLETING_REBALANCE": "CompletingRebalance",
        }.get(desc.state.name, desc.state.name)
        ptype = "consumer" if desc.is_simple_consumer_group is False else ""
        return GroupInfo(group, state, ptype, members)

    def delete_group(self, group: str) -> None:
        _wait(self.admin.delete_consumer_groups([group]))

    def offset_for_time(self, topic: str, partition: int, timestamp: int) -> int | None:
        tp = TopicPartition(topic, partition)
        [info] = _wait(self.admin.list_offsets({tp: OffsetSpec.for_timestamp(timestamp)})).values()
        return None if info.offset < 0 else int(info.offset)

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        info = _wait(self.admin.delete_records([TopicPartition(topic, partition, before)]))
        [deleted] = info.values()
        return int(deleted.low_watermark)

    def group_member(self, group: str, topics: Iterable[str], client_id: str) -> Member:
        return ConfluentMember(self.bootstrap, group, topics, client_id, self.group_protocol)

    # old protocol ---------------------------------------------------------------------------
    def legacy_round_trip(
        self, topic: str, message_format: int, values: list[bytes]
    ) -> list[bytes]:
        if message_format != 0:
            raise Unsupported(
                "librdkafka sends ApiVersions whenever broker.version.fallback >= 0.10, "
                "so it never produces message format v1 to a Kafka 4 broker"
            )
        fallback = "0.9.0"
        legacy = {"api.version.request": False, "broker.version.fallback": fallback}
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "acks": "all",
                "message.timeout.ms": 20_000,
                **legacy,
            }
        )
        errors: list[KafkaError] = []

        def cb(err: KafkaError | None, _msg: Any) -> None:
            if err is not None:
                errors.append(err)

        for v in values:
            producer.produce(topic, value=v, partition=0, on_delivery=cb)
        left = producer.flush(30)
        if errors:
            raise ClientError(_code(errors[0]), str(errors[0]))
        if left:
            raise ClientError("TIMEOUT", f"{left} messages undelivered after 30 s")
        consumer = self._plain_consumer(legacy)
        got = self._consume(consumer, topic, 0, 0, len(values), 20)
        return [r.value or b"" for r in got]


ADAPTER = ConfluentAdapter
