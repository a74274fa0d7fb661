"""Apache Kafka 4.4 beside wirebroker, from the command line.

    python -m compat.oracle              # demo: start both, put the same questions to each,
                                         # print the answers side by side, stop both
    python -m compat.oracle fetch        # fetch Kafka's jars into the cache (once)
    python -m compat.oracle serve [--ready-file F] [--keep-data]
                                         # start Apache Kafka, print `apache kafka ready on
                                         # HOST:PORT`, run until SIGINT/SIGTERM

`compat/oracle/run` is this module with the repository's .venv (the README's one command).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from compat.oracle.kafka import KAFKA_VERSION, ApacheKafka, cache_dir, ensure_libs
from compat.scenarios.broker import Broker
from compat.scenarios.wire import Wire
from protocol.api import SCHEMAS, ApiKey

READY = "apache kafka ready on "


def _serve(ready_file: Path | None, keep: bool) -> int:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    started = time.monotonic()
    kafka = ApacheKafka(keep=keep)
    try:
        kafka.start()
        print(f"{READY}{kafka.bootstrap}", flush=True)
        print(
            f"(Apache Kafka {KAFKA_VERSION}, ready in {time.monotonic() - started:.1f} s; "
            f"data and log in {kafka.workdir})",
            file=sys.stderr,
            flush=True,
        )
        if ready_file is not None:
            ready_file.write_text(kafka.bootstrap + "\n")
        while not stop.wait(0.5):
            if not kafka.is_running():
                print("apache kafka exited:\n" + kafka.log_tail(), file=sys.stderr)
                return 1
    finally:
        kafka.stop()
    return 0


def _answers(bootstrap: str, topic: str) -> dict[str, str]:
    """The same questions to one broker: what it serves, who it is, a produce and a fetch."""
    out: dict[str, str] = {}
    with Wire(bootstrap) as wire:
        versions = wire.call(
            ApiKey.API_VERSIONS,
            3,
            {"client_software_name": "oracle-demo", "client_software_version": "1"},
        )
        keys = {a.api_key: (a.min_version, a.max_version) for a in versions.api_keys}
        out["APIs advertised"] = str(len(keys))
        out["Produce / Fetch versions"] = f"{keys.get(0)} / {keys.get(1)}"
        meta = wire.call(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
        out["cluster id"] = str(meta.cluster_id)
        out["brokers"] = ", ".join(f"{b.node_id}@{b.host}:{b.port}" for b in meta.brokers)
        wire.create_topic(topic, partitions=3)
        offset = wire.produce(topic, 1, [(b"key", b"value from oracle-demo")])
        out[f"produce to {topic}-1"] = f"offset {offset}"
        [record] = wire.read(topic, 1)
        out[f"fetch {topic}-1"] = f"{record.key!r} = {record.value!r}"
        out["high watermark"] = str(wire.list_offset(topic, 1, -1))
        out["_keys"] = ",".join(str(k) for k in sorted(keys))
    return out


def _demo() -> int:
    started = time.monotonic()
    print(f"fetching Apache Kafka {KAFKA_VERSION} (cache: {cache_dir()}) ...", flush=True)
    ensure_libs()
    print(f"  ready after {time.monotonic() - started:.1f} s", flush=True)
    with tempfile.TemporaryDirectory(prefix="oracle-demo-") as tmp, ApacheKafka() as kafka:
        print(f"Apache Kafka {KAFKA_VERSION} ready on {kafka.bootstrap}", flush=True)
        broker = Broker(Path(tmp) / "wirebroker")
        broker.start()
        print(f"wirebroker ready on {broker.bootstrap}", flush=True)
        try:
            topic = f"oracle-demo-{int(time.time())}"
            kafka_says = _answers(kafka.bootstrap, topic)
            wb_says = _answers(broker.bootstrap, topic)
        finally:
            broker.stop()
    kafka_keys = set(map(int, kafka_says.pop("_keys").split(",")))
    wb_keys = set(map(int, wb_says.pop("_keys").split(",")))
    width = max(len(k) for k in kafka_says)
    print()
    print(f"{'':{width}}  {'Apache Kafka ' + KAFKA_VERSION:44}  wirebroker")
    for key, value in kafka_says.items():
        print(f"{key:{width}}  {value[:44]:44}  {wb_says.get(key, '')}")

    def names(keys: set[int]) -> str:
        return ", ".join(SCHEMAS[k].NAME if k in SCHEMAS else f"api {k}" for k in sorted(keys))

    print()
    print(f"APIs only Apache Kafka advertises ({len(kafka_keys - wb_keys)}): ")
    print(f"  {names(kafka_keys - wb_keys)}")
    print(f"APIs only wirebroker advertises ({len(wb_keys - kafka_keys)}): ")
    print(f"  {names(wb_keys - kafka_keys) or '-'}")
    print("\nfield-by-field comparison of every API: compat/CONFORMANCE.md")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="compat/oracle/run", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("demo", help="start both brokers and compare their answers (the default)")
    sub.add_parser("fetch", help="fetch Apache Kafka's jars with Maven into the cache")
    serve = sub.add_parser("serve", help="run Apache Kafka until SIGINT/SIGTERM")
    serve.add_argument("--ready-file", type=Path, help="write the bootstrap here once ready")
    serve.add_argument("--keep-data", action="store_true", help="keep its temporary data dir")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        print(ensure_libs(quiet=False))
        return 0
    if args.command == "serve":
        return _serve(args.ready_file, args.keep_data)
    return _demo()


if __name__ == "__main__":
    sys.exit(main())
