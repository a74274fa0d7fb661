"""Kafka's own load tools as a second load client: kafka-producer-perf-test and
kafka-consumer-perf-test (`org.apache.kafka.tools.ProducerPerformance` and
`ConsumerPerformance` from the oracle's Maven cache, compat/oracle), run against any broker.

Not a test, not part of the broker. The tools' JVM: compat/oracle's tool options (512 MB heap,
as bin/kafka-producer-perf-test.sh sets) with the JIT's top tier back on
(`-XX:TieredStopAtLevel=4`: the oracle's tools stop at C1 to start fast, a load generator
needs C2).

    producer_perf(bootstrap, topic, count, size, acks) -> {"records_s", "mb_s", "p99_ms", ...}
    consumer_perf(bootstrap, topic, count)             -> {"records_s", "mb_s"}

MB here is the tools' MB (2^20 bytes), converted to 10^6 bytes to match the other rows.
The consumer's figures are its fetch phase (fetch.nMsg.sec, fetch.MB.sec): the tool joins
a group first, and the join's time (group.initial.rebalance.delay.ms on Kafka) is not
throughput.
"""

from __future__ import annotations

import re

import _peers  # noqa: F401  (puts the repository on sys.path for the compat import)

from compat.oracle.kafka import run_tool

__all__ = ["consumer_perf", "producer_perf"]

JIT_ON = ["-XX:TieredStopAtLevel=4"]
MIB = 1024 * 1024
_PRODUCER_LINE = re.compile(
    r"(?P<n>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>\d+) ms 50th, "
    r"(?P<p95>\d+) ms 95th, (?P<p99>\d+) ms 99th, (?P<p999>\d+) ms 99.9th"
)


def producer_perf(
    bootstrap: str, topic: str, count: int, size: int, acks: str, timeout: float = 600.0
) -> dict[str, float]:
    """kafka-producer-perf-test: `count` records of `size` bytes as fast as it can
    (--throughput -1), acks `acks`, the tool's other producer defaults."""
    ran = run_tool(
        "org.apache.kafka.tools.ProducerPerformance",
        [
            *("--topic", topic, "--num-records", str(count), "--record-size", str(size)),
            *("--throughput", "-1", "--bootstrap-server", bootstrap),
            *("--command-property", f"acks={acks}"),
        ],
        timeout=timeout,
        jvm_opts=JIT_ON,
    )
    found = [m for line in ran.stdout.splitlines() if (m := _PRODUCER_LINE.search(line))]
    if ran.returncode != 0 or not found:
        raise RuntimeError(f"ProducerPerformance failed: {ran.stdout[-1000:]}{ran.stderr[-2000:]}")
    last = found[-1]
    return {
        "records_s": float(last["rate"]),
        "mb_s": float(last["mb"]) * MIB / 1e6,
        "p50_ms": float(last["p50"]),
        "p99_ms": float(last["p99"]),
    }


def consumer_perf(
    bootstrap: str, topic: str, count: int, group: str, timeout: float = 600.0
) -> dict[str, float]:
    """kafka-consumer-perf-test: `count` records of `topic` from the start, in group `group`."""
    ran = run_tool(
        "org.apache.kafka.tools.ConsumerPerformance",
        [
            *("--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(count)),
            *("--group", group, "--timeout", str(int(timeout * 1000))),
        ],
        timeout=timeout + 60,
        jvm_opts=JIT_ON,
    )
    lines = [line for line in ran.stdout.splitlines() if line.strip()]
    header = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    if ran.returncode != 0 or header is None or header + 1 >= len(lines):
        raise RuntimeError(f"ConsumerPerformance failed: {ran.stdout[-1000:]}{ran.stderr[-2000:]}")
    names = [n.strip() for n in lines[header].split(",")]
    values = dict(zip(names, (v.strip() for v in lines[header + 1].split(",")), strict=False))
    consumed = int(values["data.consumed.in.nMsg"])
    if consumed < count:
        raise RuntimeError(f"ConsumerPerformance consumed {consumed} of {count} records")
    return {
        "records_s": float(values["fetch.nMsg.sec"]),
        "mb_s": float(values["fetch.MB.sec"]) * MIB / 1e6,
    }
