"""Micro-benchmarks of the protocol layer (wirebroker only, in-process): `run()` -> rows,
`render(rows)` -> Markdown; `run_in_subprocess()` runs them in a fresh interpreter with the
broker's malloc settings (what bench_broker.py uses). Also runnable alone:

    python tools/bench/_micro.py [--quick] [--json]

Each figure is the best of 5 repeats of a timeit loop sized to take ~0.1 s (--quick: 3 repeats,
~0.02 s), so it is the cost with warm caches, without the noise of the rest of the machine.
The inputs are what confluent-kafka sends and receives in bench_broker.py's workloads.
"""

from __future__ import annotations

import os
import sys
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

Row = tuple[str, float, int]  # (operation, seconds per call, bytes per call or 0)


def _time(func: Callable[[], Any], quick: bool) -> float:
    timer = timeit.Timer(func)
    number, elapsed = timer.autorange()
    target = 0.02 if quick else 0.1
    number = max(1, int(number * target / max(elapsed, 1e-9)))
    return min(timer.repeat(3 if quick else 5, number)) / number


def _batch(n: int, size: int) -> bytes:
    from protocol.records import build_batch

    value = os.urandom(size)
    return build_batch([(None, value)] * n, base_timestamp=1_700_000_000_000)


def _produce_frame(records: bytes, version: int = 9) -> bytes:
    from protocol.codec import encode_request

    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 30000,
        "topic_data": [
            {
                "name": "bench",
                "topic_id": uuid.uuid4(),
                "partition_data": [{"index": 0, "records": records}],
            }
        ],
    }
    return encode_request(0, version, 1, "rdkafka", body)[4:]


def _fetch_body(records: bytes) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "bench",
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 1000,
                        "last_stable_offset": 1000,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": records,
                    }
                ],
            }
        ],
    }


def _metadata_body(partitions: int) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}],
        "cluster_id": "bench",
        "controller_id": 1,
        "topics": [
            {
                "error_code": 0,
                "name": "wide",
                "topic_id": uuid.uuid4(),
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": i,
                        "leader_id": 1,
                        "leader_epoch": 0,
                        "replica_nodes": [1],
                        "isr_nodes": [1],
                        "offline_replicas": [],
                    }
                    for i in range(partitions)
                ],
                "topic_authorized_operations": -2147483648,
            }
        ],
    }


def run(quick: bool = False) -> list[Row]:
    from protocol.codec import (
        decode_request,
        decode_request_generic,
        encode_response,
        encode_response_generic,
    )
    from protocol.crc32c import BACKEND, crc32c
    from protocol.framing import FrameDecoder
    from protocol.records import parse_header, stamp_batch

    rows: list[Row] = []

    def add(name: str, func: Callable[[], Any], nbytes: int = 0) -> None:
        rows.append((name, _time(func, quick), nbytes))

    small = _batch(100, 100)  # ~ one linger of 100 B records
    large = _batch(97, 10 * 1024)  # ~ one 1 MB batch of 10 KiB records
    for label, records in (("100 x 100 B", small), ("97 x 10 KiB", large)):
        frame = _produce_frame(records)
        add(
            f"decode Produce v9 request, 1 batch of {label}: construct",
            lambda f=frame: decode_request_generic(f),
            len(frame),
        )
        add(
            f"decode Produce v9 request, 1 batch of {label}: fastcodec",
            lambda f=frame: decode_request(f),
            len(frame),
        )

    mib = os.urandom(1 << 20)
    body = _fetch_body(mib)
    add(
        "encode Fetch v12 response, 1 partition, 1 MiB of records: construct",
        lambda: encode_response_generic(1, 12, 7, body),
        1 << 20,
    )
    add(
        "encode Fetch v12 response, 1 partition, 1 MiB of records: fastcodec",
        lambda: encode_response(1, 12, 7, body),
        1 << 20,
    )
    meta = _metadata_body(1000)
    add(
        "encode Metadata v12 response, 1 topic x 1,000 partitions: construct",
        lambda: encode_response_generic(3, 12, 7, meta),
    )
    add(
        "encode Metadata v12 response, 1 topic x 1,000 partitions: fastcodec",
        lambda: encode_response(3, 12, 7, meta),
    )
    produce_resp = {
        "responses": [
            {
                "name": "bench",
                "partition_responses": [
                    {
                        "index": 0,
                        "error_code": 0,
                        "base_offset": 123456,
                        "log_append_time_ms": -1,
                        "log_start_offset": 0,
                        "record_errors": [],
                        "error_message": None,
                    }
                ],
            }
        ],
        "throttle_time_ms": 0,
    }
    add("encode Produce v9 response, 1 partition", lambda: encode_response(0, 9, 7, produce_resp))

    add("parse a batch header (61 bytes)", lambda: parse_header(small))
    buf = bytearray(large)
    add(
        "stamp a batch (base offset, leader epoch)",
        lambda: stamp_batch(buf, 0, base_offset=42, partition_leader_epoch=0),
    )
    add(f"CRC-32C of 1 MiB ({BACKEND})", lambda: crc32c(mib), 1 << 20)
    ten_k = mib[: 10 * 1024]
    add(f"CRC-32C of 10 KiB ({BACKEND})", lambda: crc32c(ten_k), 10 * 1024)
    wire = b"".join(len(f).to_bytes(4, "big") + f for f in [_produce_frame(large)] * 4)
    chunks = [wire[i : i + 65536] for i in range(0, len(wire), 65536)]

    def split() -> None:
        dec = FrameDecoder(100 << 20)
        for c in chunks:
            dec.receive_data(c)
            while dec.next_frame() is not None:
                pass

    add("FrameDecoder: 4 x 1 MB request frames arriving in 64 KiB pieces", split, len(wire))
    return rows


def render(rows: list[Row]) -> str:
    lines = [
        "### Protocol layer micro-benchmarks (wirebroker, in-process)",
        "",
        "Best of 5 timeit repeats, warm caches, in a fresh process with the broker's malloc "
        "settings (`tools/bench/_micro.py`; `wirebroker.malloc_tuning`).",
        "",
        "| operation | time per call | throughput |",
        "|---|---:|---:|",
    ]
    for name, seconds, nbytes in rows:
        if seconds >= 1e-3:
            t = f"{seconds * 1e3:.2f} ms"
        elif seconds >= 1e-6:
            t = f"{seconds * 1e6:.1f} us"
        else:
            t = f"{seconds * 1e9:.0f} ns"
        rate = f"{nbytes / seconds / 1e9:.2f} GB/s" if nbytes else ""
        lines.append(f"| {name} | {t} | {rate} |")
    return "\n".join(lines) + "\n"


def run_in_subprocess(quick: bool = False) -> list[Row]:
    """`run()` in a fresh interpreter with the broker's malloc settings: glibc's dynamic mmap
    threshold depends on what a process freed before, so in a long-lived driver process 1 MB
    buffers may or may not fault in fresh pages, and the figures would depend on history."""
    import json
    import subprocess

    cmd = [sys.executable, __file__, "--json"] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout
    return [(str(n), float(t), int(b)) for n, t, b in json.loads(out.strip().splitlines()[-1])]


def main(argv: list[str]) -> int:
    from wirebroker.malloc_tuning import tune_malloc

    tune_malloc()  # as `wirebroker serve` does
    rows = run(quick="--quick" in argv)
    if "--json" in argv:
        import json

        print(json.dumps(rows))
    else:
        print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
