"""kafka-python helpers shared by the integration tests: bounded produce and read-to-end.

Consumers here never use a consumer group (group_id=None, assign(), no commits): groups are a
later feature, and these tests are about the data path.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from kafka import KafkaConsumer, TopicPartition

#: Client timeouts (ms): small enough that a broken broker fails a test quickly.
REQUEST_TIMEOUT_MS = 10_000


def read_to_end(
    bootstrap: str,
    topic: str,
    partitions: Iterable[int],
    *,
    timeout: float = 30.0,
    **consumer_config: Any,
) -> dict[int, list[Any]]:
    """Every record of `partitions` from the beginning up to the end offsets taken at the start.

    Returns {partition: [ConsumerRecord, ...]} in offset order. Raises AssertionError when the
    end is not reached within `timeout` seconds.
    """
    tps = [TopicPartition(topic, p) for p in partitions]
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        fetch_max_wait_ms=200,
        **consumer_config,
    )
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps, timeout_ms=REQUEST_TIMEOUT_MS)
        out: dict[int, list[Any]] = {tp.partition: [] for tp in tps}
        deadline = time.monotonic() + timeout
        while True:
            done = all(
                consumer.position(tp, timeout_ms=REQUEST_TIMEOUT_MS) >= ends[tp] for tp in tps
            )
            if done:
                return out
            left = deadline - time.monotonic()
            assert left > 0, (
                f"did not reach the end offsets {ends} within {timeout} s; "
                f"read {[len(v) for v in out.values()]}"
            )
            batch = consumer.poll(timeout_ms=min(500, int(left * 1000) + 1))
            for tp, records in batch.items():
                out[tp.partition].extend(records)
    finally:
        consumer.close(autocommit=False, timeout_ms=5000)
