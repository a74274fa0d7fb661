"""kafka-python and confluent-kafka producers and consumers fail over without a restart.

Both producers (acks=all, retries > 0) and both consumers (assign, no group) run through a
kill -9 of the leader of partition 0; every record either producer had acknowledged must reach
both consumers, which are never restarted or reconfigured. Without idempotence a retried batch
may be written twice, so duplicates are allowed here (they are not in test_cluster_failover).
"""

from __future__ import annotations

import time

from _cluster import ClusterProcesses
from _streams import (
    ConfluentConsumerStream,
    ConfluentProducerStream,
    KafkaPythonConsumerStream,
    KafkaPythonProducerStream,
)

TOPIC = "clients"
PARTITIONS = 2


def test_producers_and_consumers_of_both_libraries_fail_over(cluster: ClusterProcesses) -> None:
    cluster.create_topic(
        TOPIC, partitions=PARTITIONS, replication_factor=3, configs={"min.insync.replicas": "2"}
    )
    bootstrap = cluster.bootstrap
    producers = [
        ConfluentProducerStream(bootstrap, TOPIC, PARTITIONS, idempotent=False, prefix="ck"),
        KafkaPythonProducerStream(bootstrap, TOPIC, PARTITIONS, prefix="kp"),
    ]
    consumers = [
        ConfluentConsumerStream(bootstrap, TOPIC, PARTITIONS),
        KafkaPythonConsumerStream(bootstrap, TOPIC, PARTITIONS),
    ]
    streams = [*producers, *consumers]
    for s in streams:
        s.start()
    try:
        for producer in producers:
            producer.wait_acked(50, partition=0)
        victim = cluster.leader(TOPIC, 0)
        killed_at = time.monotonic()
        cluster.kill9(victim)
        cluster.wait_leader_moved(TOPIC, 0, victim)
        for producer in producers:
            producer.wait_acked(50, since=killed_at, partition=0, timeout=40)
        for producer in producers:
            producer.stop()
        for producer in producers:
            assert not producer.errors, (
                f"{producer.name}: {len(producer.errors)} records failed across the failover "
                f"(acks=all, retries): {producer.errors[:5]}"
            )

        def acked() -> set[bytes]:
            return producers[0].acked_values() | producers[1].acked_values()

        for consumer in consumers:
            consumer.wait_values(acked, timeout=40)
    finally:
        for s in streams:
            if not s.stopping.is_set():
                s.stopping.set()
        for s in streams:
            s._thread.join(30)
    for consumer in consumers:
        consumer.check()
        after = [g for g in consumer.got if g.partition == 0 and g.at >= killed_at]
        assert after, f"{consumer.name} read nothing from partition 0 after the failover"
