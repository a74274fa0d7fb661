"""Background producers and consumers for the failover tests (real client libraries).

A stream runs one client in a daemon thread and records what the client reports:

    ConfluentProducerStream(bootstrap, topic, partitions, idempotent=True)
    KafkaPythonProducerStream(bootstrap, topic, partitions)
        produce values b"<prefix>-00000000", b"<prefix>-00000001", ... round-robin over the
        partitions (explicit partition), at most `max_in_flight` unacknowledged, and record
        every acknowledgement as `Ack(value, partition, offset, at)` (at: time.monotonic())
        and every delivery error. stop() stops producing and waits for the outstanding
        acknowledgements (bounded).
    ConfluentConsumerStream / KafkaPythonConsumerStream(bootstrap, topic, partitions)
        assign() the partitions from the beginning (no group) and record every record as
        `Got(value, partition, offset, at)`.

The streams share `wait_for(predicate, timeout, what)` style helpers; a test asserts on the
recorded lists after stop().
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from _cluster import wait_until


@dataclass(frozen=True)
class Ack:
    value: bytes
    partition: int
    offset: int
    at: float


@dataclass(frozen=True)
class Got:
    value: bytes
    partition: int
    offset: int
    at: float


class _Stream:
    """A daemon thread running `self._run()` until stop(); failures are kept in `crash`."""

    name = "stream"

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.crash: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)

    def start(self) -> _Stream:
        self._thread.start()
        return self

    def _main(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by check()
            self.crash = exc

    def _run(self) -> None:
        raise NotImplementedError

    def stop(self, timeout: float = 60.0) -> None:
        self.stopping.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.name} did not stop within {timeout} s"
        self.check()

    def check(self) -> None:
        if self.crash is not None:
            raise AssertionError(f"{self.name} crashed: {self.crash!r}") from self.crash


class _ProducerStream(_Stream):
    def __init__(
        self, topic: str, partitions: int, *, prefix: str = "v", max_in_flight: int = 50
    ) -> None:
        super().__init__()
        self.topic = topic
        self.partitions = partitions
        self.prefix = prefix
        self.max_in_flight = max_in_flight
        self.sent = 0
        self.acks: list[Ack] = []
        self.errors: list[str] = []

    def value(self, i: int) -> bytes:
        return f"{self.prefix}-{i:08d}".encode()

    def _acked(self, value: bytes, partition: int, offset: int) -> None:
        with self.lock:
            self.acks.append(Ack(value, partition, offset, time.monotonic()))

    def _failed(self, value: bytes, error: str) -> None:
        with self.lock:
            self.errors.append(f"{value.decode()}: {error}")

    def in_flight(self) -> int:
        with self.lock:
            return self.sent - len(self.acks) - len(self.errors)

    def acked_since(self, since: float, partition: int | None = None) -> list[Ack]:
        with self.lock:
            return [
                a
                for a in self.acks
                if a.at >= since and (partition is None or a.partition == partition)
            ]

    def wait_acked(
        self, count: int, *, since: float = 0.0, partition: int | None = None, timeout: float = 30
    ) -> None:
        """Wait for `count` acknowledgements after `since` (on `partition` if given)."""

        def enough() -> bool:
            self.check()
            return len(self.acked_since(since, partition)) >= count

        where = "" if partition is None else f" on partition {partition}"
        wait_until(
            enough,
            timeout,
            f"{count} acknowledged records{where} from {self.name} "
            f"(errors so far: {self.errors[:3]})",
        )

    def acked_values(self) -> set[bytes]:
        with self.lock:
            return {a.value for a in self.acks}


class ConfluentProducerStream(_ProducerStream):
    """confluent-kafka (librdkafka) producer, acks=all, idempotent unless told otherwise."""

    name = "confluent-kafka producer"

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        *,
        idempotent: bool = True,
        config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(topic, partitions, **kwargs)
        from confluent_kafka import Producer

        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": idempotent,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            "request.timeout.ms": 10_000,
            "retry.backoff.ms": 100,
            "retry.backoff.max.ms": 500,
            "reconnect.backoff.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 2_000,
        }
        conf.update(config or {})
        self.producer = Producer(conf)

    def _run(self) -> None:
        producer = self.producer

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                self._failed(msg.value(), str(err))
            else:
                self._acked(msg.value(), msg.partition(), msg.offset())

        while not self.stopping.is_set():
            if self.in_flight() >= self.max_in_flight:
                producer.poll(0.01)
                continue
            i = self.sent
            try:
                producer.produce(
                    self.topic, self.value(i), partition=i % self.partitions, on_delivery=report
                )
            except BufferError:
                producer.poll(0.01)
                continue
            self.sent += 1
            producer.poll(0.002)  # serve callbacks; also paces the stream (~500 records/s)
        left = producer.flush(60)
        if left:
            self._failed(b"<flush>", f"{left} records not delivered within 60 s of stop")


class KafkaPythonProducerStream(_ProducerStream):
    """kafka-python producer, acks=all, retries > 0 (not idempotent)."""

    name = "kafka-python producer"

    def __init__(self, bootstrap: str, topic: str, partitions: int, **kwargs: Any) -> None:
        super().__init__(topic, partitions, **kwargs)
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap.split(","),
            acks="all",
            retries=1000,
            retry_backoff_ms=100,
            request_timeout_ms=10_000,
            delivery_timeout_ms=60_000,
            linger_ms=5,
            metadata_max_age_ms=2_000,
            reconnect_backoff_max_ms=500,
            max_in_flight_requests_per_connection=1,
        )

    def _run(self) -> None:
        while not self.stopping.is_set():
            if self.in_flight() >= self.max_in_flight:
                self.stopping.wait(0.01)
                continue
            i = self.sent
            value = self.value(i)
            future = self.producer.send(self.topic, value, partition=i % self.partitions)
            self.sent += 1
            future.add_callback(
                lambda md, v=value: self._acked(v, md.partition, md.offset)
            ).add_errback(lambda exc, v=value: self._failed(v, repr(exc)))
            self.stopping.wait(0.002)  # pacing: ~500 records/s at most
        self.producer.flush(timeout=60)
        self.producer.close(timeout=10)


class _ConsumerStream(_Stream):
    def __init__(self, topic: str, partitions: int) -> None:
        super().__init__()
        self.topic = topic
        self.partitions = partitions
        self.got: list[Got] = []
        self.errors: list[str] = []

    def _record(self, value: bytes, partition: int, offset: int) -> None:
        with self.lock:
            self.got.append(Got(value, partition, offset, time.monotonic()))

    def values(self) -> set[bytes]:
        with self.lock:
            return {g.value for g in self.got}

    def wait_values(self, wanted: Callable[[], set[bytes]], timeout: float) -> None:
        """Wait until every value of `wanted()` was consumed."""

        def done() -> bool:
            self.check()
            return not (wanted() - self.values())

        try:
            wait_until(done, timeout, f"{self.name} to read every acknowledged record")
        except AssertionError:
            missing = sorted(wanted() - self.values())
            raise AssertionError(
                f"{self.name}: {len(missing)} acknowledged records not consumed within "
                f"{timeout} s, e.g. {missing[:5]}; consumer errors {self.errors[:3]}"
            ) from None


class ConfluentConsumerStream(_ConsumerStream):
    name = "confluent-kafka consumer"

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(topic, partitions)
        from _client_env import librdkafka_extra  # tests/integration, on the path by _cluster
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"unused-{topic}",  # required by the client; assign() joins none
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 200,
                "topic.metadata.refresh.interval.ms": 2_000,
                "reconnect.backoff.max.ms": 500,
            }
            | librdkafka_extra()
        )

    def _run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        consumer = self.consumer
        consumer.assign(
            [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)]
        )
        try:
            while not self.stopping.is_set():
                for msg in consumer.consume(500, 0.2):
                    if msg.error() is not None:
                        with self.lock:
                            self.errors.append(str(msg.error()))
                        continue
                    self._record(msg.value(), msg.partition(), msg.offset())
        finally:
            consumer.close()


class KafkaPythonConsumerStream(_ConsumerStream):
    name = "kafka-python consumer"

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        super().__init__(topic, partitions)
        from kafka import KafkaConsumer, TopicPartition

        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap.split(","),
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=200,
            request_timeout_ms=10_000,
            metadata_max_age_ms=2_000,
            reconnect_backoff_max_ms=500,
        )
        self.tps = [TopicPartition(topic, p) for p in range(partitions)]

    def _run(self) -> None:
        consumer = self.consumer
        consumer.assign(self.tps)
        consumer.seek_to_beginning(*self.tps)
        try:
            while not self.stopping.is_set():
                for tp, records in consumer.poll(timeout_ms=200).items():
                    for r in records:
                        self._record(r.value, tp.partition, r.offset)
        finally:
            consumer.close()
