"""`wirebroker serve` with the records of every produced batch read while validating, as
Kafka's LogValidator reads them: the alternatives `bench_record_checks.py` measures against
the broker as it is (which reads records only where they may be refused: docs/log.md).

    python tools/bench/_checked_broker.py VARIANT serve [wirebroker serve options]

VARIANT:
  as-is         the broker unchanged (the baseline; started the same way)
  framing       uncompressed batches: each record's length varint walked, the record count
                and the batch's end checked (no field inside a record read); compressed
                batches as they are
  every-record  every batch's records read in full, as `protocol.records.check_records` reads
                a compacted topic's (uncompressed ones in place, compressed ones decompressed
                in a ~1 MiB window): every record's fields within its length, exactly the
                batch's record count, no trailing bytes; Kafka's reading of a produced batch

The extra check wraps `LogValidator._check_batch` in this process only: a benchmark aid, not
a broker setting.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from protocol.records import BATCH_HEADER_SIZE, BatchHeader, InvalidBatch, check_records  # noqa: E402
from wirebroker.log.config import DECODE_CAP  # noqa: E402
from wirebroker.log.errors import InvalidRecordError  # noqa: E402
from wirebroker.log.validator import LogValidator  # noqa: E402

VARIANTS = ("as-is", "framing", "every-record")
_original = LogValidator._check_batch


def walk_lengths(buf: bytes | bytearray | memoryview, pos: int, h: BatchHeader) -> None:
    """The uncompressed records' length varints, `h.records_count` of them, ending exactly at
    the batch's end (one- and two-byte lengths inlined; longer ones read in full)."""
    p = pos + BATCH_HEADER_SIZE
    end = pos + h.size
    for _ in range(h.records_count):
        if p >= end:
            raise InvalidRecordError("Incorrect declared batch size, premature EOF reached")
        b = buf[p]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            p += 1
        else:
            raw, shift, p = b & 0x7F, 7, p + 1
            while True:
                if p >= end or shift > 28:
                    raise InvalidRecordError("bad record length varint")
                c = buf[p]
                p += 1
                raw |= (c & 0x7F) << shift
                if c < 0x80:
                    break
                shift += 7
            length = (raw >> 1) ^ -(raw & 1)
        if length < 0 or length > end - p:
            raise InvalidRecordError(f"Invalid record size: {length}")
        p += length
    if p != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")


def _framing(
    self: LogValidator, buf: bytearray | memoryview, pos: int, h: BatchHeader, now_ms: int
) -> None:
    _original(self, buf, pos, h, now_ms)
    if h.compression == 0:
        walk_lengths(buf, pos, h)


def _every_record(
    self: LogValidator, buf: bytearray | memoryview, pos: int, h: BatchHeader, now_ms: int
) -> None:
    _original(self, buf, pos, h, now_ms)
    try:
        check_records(buf, pos, require_keys=False, max_decompressed_bytes=DECODE_CAP)
    except InvalidBatch as exc:
        raise InvalidRecordError(f"undecodable batch: {exc}") from None


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in VARIANTS:
        print(f"usage: _checked_broker.py {{{','.join(VARIANTS)}}} serve [...]", file=sys.stderr)
        return 2
    variant = argv[0]
    if variant == "framing":
        LogValidator._check_batch = _framing  # type: ignore[method-assign]
    elif variant == "every-record":
        LogValidator._check_batch = _every_record  # type: ignore[method-assign]
    from wirebroker.cli import main as wirebroker_main

    return wirebroker_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
