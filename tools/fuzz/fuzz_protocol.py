"""Coverage-guided fuzz target (atheris) for framing, request decoding and record batches.

`one_input(data)` is the target. Its first byte picks what the rest exercises:

    0  framing      the rest is cut into chunks (chunk sizes taken from the input itself) and
                    fed to `FrameDecoder(4096)`; every complete frame goes to `decode_request`
    1  requests     `decode_request(rest)`: header, then the body schema of that API/version
    2  batches      `iter_batches` + `verify_crc` + `decode_records` (decompression cap 1 MiB)
                    over the rest as a records field
    3  codecs       `decompress(codec, rest, 1 MiB)` for codec = the second byte % 5

Allowed: `protocol.exceptions.ProtocolError` and its subclasses (`InvalidBatch`,
`DecompressionError`, `FrameTooLarge`, ...), the typed errors of the protocol layer. Any other
exception escapes and is a crash for atheris (and a failure for the tests that call
`one_input` directly). Invariants checked too: frames never exceed the cap; decoded records
lie inside their batch's offset range; decompressed output never exceeds the cap.

Run with tools/fuzz/run.py (bounded time, seed corpus; atheris_main.py is the libFuzzer
entry point); `seed_corpus()` gives the seeds:
valid requests for every API and version, valid batches for every codec.
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from protocol import codec  # noqa: E402
from protocol.compression import decompress  # noqa: E402
from protocol.exceptions import ProtocolError  # noqa: E402
from protocol.framing import FrameDecoder  # noqa: E402
from protocol.messages import API_MODULES  # noqa: E402
from protocol.records import build_batch, decode_records, iter_batches, verify_crc  # noqa: E402

MAX_FRAME = 4096
DECODE_CAP = 1 << 20


def _framing(data: bytes) -> None:
    decoder = FrameDecoder(MAX_FRAME)
    pos = 0
    step = 1
    while pos < len(data):
        step = (data[pos] % 64) + 1
        chunk = data[pos + 1 : pos + 1 + step]
        pos += 1 + step
        decoder.receive_data(chunk)
        while (frame := decoder.next_frame()) is not None:
            if len(frame) > MAX_FRAME:
                raise AssertionError(f"frame of {len(frame)} bytes above the cap")
            with contextlib.suppress(ProtocolError):
                codec.decode_request(frame)


def _batches(data: bytes) -> None:
    for pos, header in iter_batches(data):
        verify_crc(data, pos, header)
        for record in decode_records(data, pos, max_decompressed_bytes=DECODE_CAP):
            if not header.base_offset <= record.offset <= header.last_offset:
                raise AssertionError(f"record offset {record.offset} outside its batch")


def one_input(data: bytes) -> None:
    """The fuzz target (see the module docstring)."""
    if not data:
        return
    mode, rest = data[0] % 4, data[1:]
    try:
        if mode == 0:
            _framing(rest)
        elif mode == 1:
            codec.decode_request(rest)
        elif mode == 2:
            _batches(rest)
        elif rest:
            out = decompress(rest[0] % 5, rest[1:], DECODE_CAP)
            if len(out) > DECODE_CAP:
                raise AssertionError(f"decompressed {len(out)} bytes above the cap")
    except ProtocolError:
        pass


def seed_corpus() -> Iterator[bytes]:
    """Valid inputs for every mode: requests of every API/version, batches of every codec."""
    rng = random.Random(0)
    for key, mod in sorted(API_MODULES.items()):
        for version in range(mod.VALID_VERSIONS[0], mod.VALID_VERSIONS[1] + 1):
            frame = codec.encode_request(key, version, 1, "seed", {})
            yield b"\x01" + frame[4:]
            yield b"\x00" + b"".join(
                bytes([63]) + frame[i : i + 64] for i in range(0, len(frame), 64)
            )
    for compression in range(5):
        records = [(b"k%d" % i, rng.randbytes(rng.randint(0, 20))) for i in range(3)]
        batch = build_batch(records, compression=compression, producer_id=1, base_sequence=0)
        yield b"\x02" + batch
        yield b"\x02" + batch + build_batch([(None, b"v")])
    for compression in range(1, 5):
        batch = build_batch([(b"k", b"v" * 50)] * 4, compression=compression)
        yield b"\x03" + bytes([compression]) + batch[61:]


if __name__ == "__main__":
    sys.exit("run tools/fuzz/run.py, or tools/fuzz/atheris_main.py [libFuzzer flags]")
