"""Which `__consumer_offsets` partition holds a group: Kafka's `partitionFor`.

Kafka: `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`, where `hashCode` is
Java's `String.hashCode` (s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, in 32-bit
two's-complement arithmetic) and `Utils.abs(Integer.MIN_VALUE)` is 0. Matching it exactly
keeps a group on the same partition as on a real Kafka cluster (tools that read
`__consumer_offsets` rely on it).
"""

from __future__ import annotations


def java_string_hash(s: str) -> int:
    """Java's `String.hashCode()` as a signed 32-bit int."""
    h = 0
    raw = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + (raw[i] << 8 | raw[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def kafka_abs(n: int) -> int:
    """Kafka's `Utils.abs`: like abs, but the minimum int maps to 0 (not to itself)."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    """The `__consumer_offsets` partition of `group_id`."""
    return kafka_abs(java_string_hash(group_id)) % num_partitions
