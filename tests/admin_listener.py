"""Shared parts of the tests of the admin listener (tests/integration/test_admin_*.py,
tests/cluster/test_cluster_admin.py and test_cluster_faults.py): the listener's URL from the
line a broker process prints at start, /metrics as a dict, and a group member that has read a
topic and committed offsets (kept open so the group is Stable with that member while the test
looks at /metrics, /api/state and the web view).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["ADMIN_PREFIX", "Samples", "admin_url", "group_member", "parse_metrics"]

#: What `wirebroker serve --admin-port` prints once the admin listener is up, then its URL.
ADMIN_PREFIX = "wirebroker admin on "
#: /metrics samples: {(name, sorted labels): value}.
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def admin_url(stdout_lines: Iterable[str]) -> str:
    """The admin listener's URL from a broker's stdout (exactly one admin line)."""
    lines = [line for line in stdout_lines if line.startswith(ADMIN_PREFIX)]
    assert len(lines) == 1, lines
    return lines[0][len(ADMIN_PREFIX) :].strip()


def parse_metrics(text: str) -> Samples:
    """The Prometheus text exposition `text` as {(name, sorted labels): value}."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@contextlib.contextmanager
def group_member(
    bootstrap: str,
    topic: str,
    group: str,
    client_id: str,
    *,
    expect: int,
    commit: Mapping[int, int],
    polls: int = 50,
    poll_ms: int = 300,
) -> Iterator[int]:
    """A kafka-python group member of `group` subscribed to `topic`: polls (at most `polls`
    times) until `expect` records are read, commits `{partition: offset}` and yields how many
    records it read; it stays in the group until the block ends."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=client_id,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    try:
        got = 0
        for _ in range(polls):
            got += sum(len(v) for v in consumer.poll(timeout_ms=poll_ms).values())
            if got >= expect:
                break
        consumer.commit(
            {TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in commit.items()}
        )
        yield got
    finally:
        consumer.close()
