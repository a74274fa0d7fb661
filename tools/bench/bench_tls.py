#!/usr/bin/env python3
"""TLS benchmark: produce and consume throughput over SSL against PLAINTEXT, same broker, same run.

Not a test. One wirebroker (`wirebroker.testing.BrokerHandle(security="SSL")`: an SSL listener
with a throwaway CA, and a PLAINTEXT one) serves both; each round runs, for PLAINTEXT then SSL,
the load client of bench_broker.py (`_load.py`, confluent-kafka in its own process; SSL through
`BENCH_CLIENT_CONFIG`: security.protocol=SSL, ssl.ca.location): produce COUNT records of SIZE
bytes acks=1 into a new 1-partition topic (linger.ms 5, batch.size 1 MB), then consume them
from offset 0 (assign, no group). Reports the median of the rounds, records/s and MB/s
(10^6 bytes), and SSL / PLAINTEXT. TLS 1.3 (the client's and the broker's default), an
EC P-256 certificate.

    python tools/bench/bench_tls.py [--rounds 3] [--count 200000] [--size 100]
                                    [--count2 20000] [--size2 10240] [--kafka]

--kafka: also Apache Kafka 4.4 (compat/oracle's jars, single-node KRaft, started here) with a
PLAINTEXT and an SSL listener (PEM keystore: the same throwaway CA's broker certificate),
the same workloads, after wirebroker's in each round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from wirebroker.testing import BrokerHandle  # noqa: E402

LOAD = str(Path(__file__).with_name("_load.py"))


def load(bootstrap: str, client: dict[str, str], workload: str, **options: Any) -> dict[str, Any]:
    """One `_load.py` workload in a new process; its JSON result."""
    cmd = [sys.executable, LOAD, workload, "--bootstrap", bootstrap]
    for key, value in options.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    env = os.environ | {"BENCH_CLIENT_CONFIG": json.dumps(client)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{workload} failed: {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


Listeners = dict[str, tuple[str, dict[str, str]]]


def one_round(listeners: Listeners, sizes: list[tuple[int, int]]) -> dict[str, float]:
    """{"<listener> <op> <size>": records/s} for each listener, op and (count, size)."""
    out: dict[str, float] = {}
    for count, size in sizes:
        for name, (bootstrap, client) in listeners.items():
            topic = f"tls-bench-{uuid.uuid4().hex[:8]}"
            load(bootstrap, client, "create", topic=topic)
            got = load(bootstrap, client, "produce", topic=topic, count=count, size=size, acks=1)
            out[f"{name} produce {size}"] = got["records"] / got["seconds"]
            got = load(bootstrap, client, "consume", topic=topic, count=count)
            out[f"{name} consume {size}"] = got["records"] / got["seconds"]
    return out


def render(
    samples: dict[str, list[float]], brokers: list[str], sizes: list[tuple[int, int]], rounds: int
) -> str:
    lines = [
        f"| broker | workload (median of {rounds}) | PLAINTEXT records/s (MB/s) "
        "| SSL records/s (MB/s) | SSL / PLAINTEXT |",
        "|---|---|---:|---:|---:|",
    ]
    for broker in brokers:
        for count, size in sizes:
            for op in ("produce", "consume"):
                plain = statistics.median(samples[f"{broker} PLAINTEXT {op} {size}"])
                tls = statistics.median(samples[f"{broker} SSL {op} {size}"])
                lines.append(
                    f"| {broker} | {op} {count:,} x {size:,} B "
                    f"| {plain:,.0f} ({plain * size / 1e6:.1f}) "
                    f"| {tls:,.0f} ({tls * size / 1e6:.1f}) | {tls / plain:.2f} |"
                )
    return "\n".join(lines)


def start_kafka_ssl(workdir: Path, certs: Path) -> Any:
    """Apache Kafka 4.4 (compat/oracle's, single-node KRaft) with a PLAINTEXT and an SSL
    listener, the SSL one with the same throwaway CA's broker certificate (PEM keystore)."""
    from compat.oracle.kafka import ApacheKafka, free_ports

    port, controller, tls = free_ports(3)
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller},"
        f"SSL://127.0.0.1:{tls}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{tls}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs / "broker.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs / "ca.pem"),
    }
    kafka = ApacheKafka(workdir, overrides, ports=(port, controller))
    kafka.start()
    return kafka, f"127.0.0.1:{port}", f"127.0.0.1:{tls}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--count", type=int, default=200_000, help="records of --size per run")
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--size2", type=int, default=10_240, help="a second size (0: none)")
    ap.add_argument("--count2", type=int, default=20_000, help="records of --size2 per run")
    ap.add_argument("--kafka", action="store_true", help="also Apache Kafka 4.4 over SSL")
    args = ap.parse_args(argv)
    sizes = [(args.count, args.size)]
    if args.size2:
        sizes.append((args.count2, args.size2))
    handle = BrokerHandle(security="SSL").start()
    kafka = None
    try:
        assert handle.secured is not None and handle.secured.cert_dir is not None
        certs = handle.secured.cert_dir
        ssl = {"security.protocol": "SSL", "ssl.ca.location": str(certs / "ca.pem")}
        listeners: Listeners = {
            "wirebroker PLAINTEXT": (handle.helper_bootstrap, {}),
            "wirebroker SSL": (handle.bootstrap, ssl),
        }
        if args.kafka:
            kafka, plain, tls = start_kafka_ssl(Path(tempfile.mkdtemp(prefix="tls-kafka-")), certs)
            listeners |= {"Kafka PLAINTEXT": (plain, {}), "Kafka SSL": (tls, ssl)}
        samples: dict[str, list[float]] = {}
        for r in range(args.rounds):
            for key, value in one_round(listeners, sizes).items():
                samples.setdefault(key, []).append(value)
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    finally:
        handle.stop()
        if kafka is not None:
            kafka.stop()
    brokers = ["wirebroker", *(["Kafka"] if args.kafka else [])]
    print(render(samples, brokers, sizes, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
