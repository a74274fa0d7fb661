"""A consumer group keeps consuming across a failover of its group coordinator.

The group's coordinator is the leader of its `__consumer_offsets` partition (Kafka's
partitionFor: abs(javaHash(group)) % offsets.topic.num.partitions). The test consumes part of
a topic, committing after every poll, kills -9 that leader, and keeps consuming: the consumer
must find the new coordinator by itself, its committed offsets must survive (they are
replicated), no record may be skipped, and a record may be consumed twice only if it was not
yet committed when the coordinator died (the uncommitted window).
With `confluent-kip848` the group is a KIP-848 consumer group: the new coordinator loads its
records from the replicated `__consumer_offsets` and the member goes on with its epoch (without
them its next commit is UNKNOWN_MEMBER_ID and its heartbeat GROUP_ID_NOT_FOUND, fatal).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import _wire
import pytest
from _cluster import ClusterProcesses, wait_until

from wirebroker.group.partitioning import partition_for

TOPIC = "orders"
PARTITIONS = 3
PER_PARTITION = 200
OFFSETS_PARTITIONS = 6  # _cluster.DEFAULT_OVERRIDES["offsets.topic.num.partitions"]


class _KafkaPython:
    def __init__(self, bootstrap: str, group: str) -> None:
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap.split(","),
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10_000,
            heartbeat_interval_ms=500,
            request_timeout_ms=15_000,
            fetch_max_wait_ms=200,
            max_poll_records=20,
            metadata_max_age_ms=2_000,
            reconnect_backoff_max_ms=500,
            retry_backoff_ms=100,
        )
        self.consumer.subscribe([TOPIC])

    def poll(self) -> list[tuple[int, int, bytes]]:
        # 1000 ms: a join started inside poll() completes in the same call (tools/bench/README)
        batch = self.consumer.poll(timeout_ms=1000)
        return [(tp.partition, r.offset, r.value) for tp, recs in batch.items() for r in recs]

    def commit(self, positions: dict[int, int]) -> None:
        from kafka import OffsetAndMetadata, TopicPartition

        self.consumer.commit(
            {TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1) for p, o in positions.items()}
        )

    def close(self) -> None:
        self.consumer.close(autocommit=False)


class _Confluent:
    def __init__(self, bootstrap: str, group: str, *, kip848: bool = False) -> None:
        from confluent_kafka import Consumer

        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10_000,
            "heartbeat.interval.ms": 500,
            "fetch.wait.max.ms": 200,
            "topic.metadata.refresh.interval.ms": 2_000,
            "reconnect.backoff.max.ms": 500,
        }
        if kip848:  # the consumer group protocol: the broker sets session and heartbeat
            del settings["session.timeout.ms"], settings["heartbeat.interval.ms"]
            settings["group.protocol"] = "consumer"
        self.consumer = Consumer(settings)
        self.consumer.subscribe([TOPIC])

    def poll(self) -> list[tuple[int, int, bytes]]:
        out = []
        for msg in self.consumer.consume(20, 1.0):
            if msg.error() is None:
                out.append((msg.partition(), msg.offset(), msg.value()))
        return out

    def commit(self, positions: dict[int, int]) -> None:
        from confluent_kafka import TopicPartition

        result = self.consumer.commit(
            offsets=[TopicPartition(TOPIC, p, o) for p, o in positions.items()], asynchronous=False
        )
        failed = [tp for tp in result or [] if tp.error is not None]
        if failed:
            raise RuntimeError(f"commit failed: {failed}")

    def close(self) -> None:
        self.consumer.close()


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    """The group's committed offsets, read by a new consumer of the group (no subscribe)."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap.split(","),
        group_id=group,
        enable_auto_commit=False,
        request_timeout_ms=15_000,
    )
    try:
        out = {}
        for p in range(PARTITIONS):
            committed = consumer.committed(TopicPartition(TOPIC, p))
            out[p] = -1 if committed is None else committed
        return out
    finally:
        consumer.close(autocommit=False)


def _create_and_seed(cluster: ClusterProcesses) -> None:
    """TOPIC, 3 replicas, min.insync.replicas 2, with PER_PARTITION records per partition."""
    cluster.create_topic(
        TOPIC, partitions=PARTITIONS, replication_factor=3, configs={"min.insync.replicas": "2"}
    )
    for p in range(PARTITIONS):
        values = [f"{p}-{i:05d}".encode() for i in range(PER_PARTITION)]
        code, _ = _wire.produce(cluster.address(cluster.leader(TOPIC, p)), TOPIC, p, values)
        assert code == 0, f"seeding partition {p}: error {code}"


def _consumer(client: str, bootstrap: str, group: str) -> Any:
    if client == "kafka-python":
        return _KafkaPython(bootstrap, group)
    return _Confluent(bootstrap, group, kip848=client == "confluent-kip848")


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka", "confluent-kip848"])
def test_group_keeps_consuming_across_a_coordinator_failover(
    cluster: ClusterProcesses, client: str
) -> None:
    """confluent-kip848: a KIP-848 consumer group, whose records the new coordinator loads
    from the replicated `__consumer_offsets` (the member goes on with its epoch)."""
    _create_and_seed(cluster)
    group = f"failover-{client}"
    consumer = _consumer(client, cluster.bootstrap, group)
    seen: list[tuple[int, int]] = []
    positions: dict[int, int] = {}
    committed: dict[int, int] = {}
    commit_errors: list[str] = []

    def step() -> None:
        batch = consumer.poll()
        for p, offset, _value in batch:
            seen.append((p, offset))
            positions[p] = max(positions.get(p, 0), offset + 1)
        if batch:
            try:
                consumer.commit(dict(positions))
                committed.update(positions)
            except Exception as exc:  # the coordinator is moving: commit again next time
                commit_errors.append(repr(exc))

    try:
        deadline = time.monotonic() + 60
        while len(seen) < PARTITIONS * PER_PARTITION // 3:
            assert time.monotonic() < deadline, f"consumed only {len(seen)} records in 60 s"
            step()
        assert not commit_errors, f"commits failed before any failure: {commit_errors[:3]}"

        offsets_partition = partition_for(group, OFFSETS_PARTITIONS)
        coordinator = cluster.leader("__consumer_offsets", offsets_partition)
        code, found = _wire.find_coordinator(cluster.address(coordinator), group)
        assert (code, found) == (0, coordinator), (
            f"FindCoordinator({group}) = error {code}, node {found}; the leader of "
            f"__consumer_offsets-{offsets_partition} is {coordinator}"
        )
        committed_at_kill = dict(committed)
        cluster.kill9(coordinator)
        new = cluster.wait_leader_moved("__consumer_offsets", offsets_partition, coordinator)
        wait_until(
            lambda: _wire.find_coordinator(cluster.any_live_address(), group) == (0, new["leader"]),
            30,
            f"FindCoordinator({group}) to name the new leader {new['leader']}",
        )

        deadline = time.monotonic() + 90
        total = PARTITIONS * PER_PARTITION
        while len(set(seen)) < total:
            assert time.monotonic() < deadline, (
                f"after the coordinator failover the group consumed only {len(set(seen))} of "
                f"{total} records within 90 s (commit errors: {commit_errors[-3:]})"
            )
            step()
        final = {p: PER_PARTITION for p in range(PARTITIONS)}
        wait_until(lambda: (consumer.commit(final), True)[1], 30, "a commit after the failover")
    finally:
        consumer.close()

    counts = Counter(seen)
    skipped = [
        (p, o) for p in range(PARTITIONS) for o in range(PER_PARTITION) if (p, o) not in counts
    ]
    assert not skipped, f"records never consumed (skipped): {skipped[:10]}"
    beyond = sorted(
        (p, o) for (p, o), n in counts.items() if n > 1 and o < committed_at_kill.get(p, 0)
    )
    assert not beyond, (
        f"records consumed again although their offsets were committed before the coordinator "
        f"died (committed then: {committed_at_kill}): {beyond[:10]}"
    )
    after = _committed(cluster.bootstrap, group)
    assert after == final, f"committed offsets read back after the failover: {after}, want {final}"
