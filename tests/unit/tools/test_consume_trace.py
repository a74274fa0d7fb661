"""tools/bench/_consume_trace.py's readers: librdkafka's debug log (per Fetch: answer bytes,
round trip, the gap to the next request, queue-full back-offs) and the stored batches of a
partition directory. No broker, no client: the inputs are written here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[3] / "tools" / "bench"


@pytest.fixture(scope="module")
def trace() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("_consume_trace", BENCH / "_consume_trace.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def _line(ts: str, fac: str, text: str) -> str:
    return f"%7|{ts}|{fac}|rdkafka#consumer-1| [thrd:127.0.0.1:1/0]: 127.0.0.1:1/0: {text}"


def test_parse_trace_takes_each_fetch(trace: ModuleType) -> None:
    log = "\n".join(
        [
            _line("100.000", "SEND", "Sent FetchRequest (v16, 98 bytes @ 0, CorrId 4)"),
            _line(
                "100.002",
                "RECV",
                "Received FetchResponse (v16, 900000 bytes, CorrId 4, rtt 2.00ms)",
            ),
            _line("100.005", "SEND", "Sent FetchRequest (v16, 98 bytes @ 0, CorrId 5)"),
            _line(
                "100.009",
                "RECV",
                "Received FetchResponse (v16, 700000 bytes, CorrId 5, rtt 4.00ms)",
            ),
            _line("100.010", "BACKOFF", "t [0]: Fetch backoff for 10ms: Local: Queue full"),
            _line("100.021", "SEND", "Sent FetchRequest (v16, 98 bytes @ 0, CorrId 6)"),
            _line(
                "100.022", "RECV", "Received FetchResponse (v16, 90 bytes, CorrId 6, rtt 1.00ms)"
            ),
        ]
    )
    got = trace.parse_trace(log)
    assert got["fetches"] == 3
    assert got["fetches_with_records"] == 2  # the 90-byte answer carried no records
    assert got["resp_bytes_median"] == 800_000
    assert got["resp_bytes_min"] == 700_000
    assert got["rtt_ms_median"] == pytest.approx(3.0)
    assert got["gap_ms_median"] == pytest.approx(7.5)  # 3 ms, then 12 ms
    assert got["queue_full_backoffs"] == 1


def test_batch_sizes_walks_the_segments(trace: ModuleType, tmp_path: Path) -> None:
    part = tmp_path / "data" / "t-0"
    part.mkdir(parents=True)

    def batch(base: int, size: int) -> bytes:
        return base.to_bytes(8, "big") + (size - 12).to_bytes(4, "big") + bytes(size - 12)

    (part / "00000000000000000000.log").write_bytes(batch(0, 100) + batch(5, 300))
    (part / "00000000000000000010.log").write_bytes(batch(10, 200))
    got = trace.batch_sizes(tmp_path, "t")
    assert got == {
        "batches": 3,
        "batch_bytes_median": 200,
        "batch_bytes_min": 100,
        "batch_bytes_max": 300,
    }
    assert trace.batch_sizes(tmp_path, "other") == {"batches": 0}
