"""Kafka's partitionFor (Java String.hashCode) and the keyed timer heap."""

from __future__ import annotations

import pytest

from wirebroker.group.partitioning import java_string_hash, kafka_abs, partition_for
from wirebroker.group.timers import Timers


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),  # the classic collision
        ("polygenelubricants", -(2**31)),  # hashes to Integer.MIN_VALUE
        ("\u00e9", 0xE9),  # one UTF-16 unit
        ("\U0001f600", 55357 * 31 + 56832),  # surrogate pair: two units
        # values below printed by a JVM (String.hashCode)
        ("console-consumer-12345", 158455506),
        ("my-group", -1906497762),
    ],
)
def test_java_string_hash(s: str, expected: int) -> None:
    assert java_string_hash(s) == expected


def test_partition_for_uses_kafka_abs() -> None:
    assert kafka_abs(-(2**31)) == 0
    assert kafka_abs(-5) == 5
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    # Partitions as Kafka computes them (checked against a JVM): 50 partitions by default.
    assert partition_for("console-consumer-12345", 50) == 6
    assert partition_for("my-group", 50) == 12
    assert partition_for("test-group", 50) == 12
    assert all(0 <= partition_for(f"g{i}", 7) < 7 for i in range(200))


def test_timers_order_replace_cancel() -> None:
    t: Timers[str] = Timers()
    assert t.next_deadline() is None and t.pop_due(10**9) is None
    t.schedule("a", 30, "A")
    t.schedule("b", 10, "B")
    t.schedule("c", 10, "C")
    t.schedule("a", 5, "A2")  # replaces the 30 ms timer
    t.cancel("c")
    assert len(t) == 2 and "a" in t and "c" not in t
    assert t.next_deadline() == 5
    assert t.pop_due(4) is None
    assert t.pop_due(100) == ("a", "A2")
    assert t.pop_due(100) == ("b", "B")
    assert t.pop_due(100) is None
    assert t.next_deadline() is None


def test_timers_same_deadline_fire_in_scheduling_order_and_cancel_where() -> None:
    t: Timers[int] = Timers()
    for i in range(5):
        t.schedule(("x", i), 7, i)
    t.cancel_where(lambda k: isinstance(k, tuple) and k[1] % 2 == 1)
    fired = []
    while (due := t.pop_due(7)) is not None:
        fired.append(due[1])
    assert fired == [0, 2, 4]


def test_timers_compaction_keeps_live_entries() -> None:
    t: Timers[int] = Timers()
    for i in range(1000):
        t.schedule("same", i, i)  # replaced 999 times: stale heap entries get compacted
    assert len(t._heap) < 200
    assert t.next_deadline() == 999
    assert t.pop_due(999) == ("same", 999)
