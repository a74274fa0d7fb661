"""iter_record_summaries: each record's index, offset, timestamp and key/value sizes, as
decode_records reads them, and the same errors for a malformed batch."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.records import (
    BATCH_HEADER_SIZE,
    BATCH_OVERHEAD,
    InvalidBatch,
    RecordSpec,
    build_batch,
    decode_records,
    iter_record_summaries,
)

CAP = 4 << 20
_specs = st.lists(
    st.builds(
        RecordSpec,
        key=st.one_of(st.none(), st.binary(max_size=20)),
        value=st.one_of(st.none(), st.binary(max_size=200)),
        headers=st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=5)), max_size=2),
        timestamp=st.one_of(st.none(), st.integers(-(10**6), 10**6)),
    ),
    min_size=1,
    max_size=30,
)


def _outcome(fn: object) -> object:
    try:
        return fn()  # type: ignore[operator]
    except InvalidBatch as exc:
        return type(exc).__name__


@settings(max_examples=150, deadline=None)
@given(specs=_specs, codec=st.sampled_from([0, 1, 2, 3, 4]), log_append=st.booleans())
def test_summaries_match_decoded_records(
    specs: list[RecordSpec], codec: int, log_append: bool
) -> None:
    batch = build_batch(
        specs, compression=codec, base_offset=7, base_timestamp=5000, timestamp_type=log_append
    )
    got = list(iter_record_summaries(batch, max_decompressed_bytes=CAP))
    want = decode_records(batch, max_decompressed_bytes=CAP)
    assert [(s.index, s.offset, s.timestamp) for s in got] == [
        (i, r.offset, r.timestamp) for i, r in enumerate(want)
    ]
    assert [(s.key_size, s.value_size) for s in got] == [
        (-1 if r.key is None else len(r.key), -1 if r.value is None else len(r.value)) for r in want
    ]


@settings(max_examples=200, deadline=None)
@given(
    specs=_specs,
    flips=st.lists(st.tuples(st.integers(0, 10**5), st.integers(1, 255)), max_size=3),
    cut=st.one_of(st.none(), st.integers(0, 10**5)),
)
def test_malformed_records_fail_as_decode_records_does(
    specs: list[RecordSpec], flips: list[tuple[int, int]], cut: int | None
) -> None:
    plain = bytearray(build_batch(specs, base_timestamp=1000))
    records = plain[BATCH_HEADER_SIZE:]
    for at, xor in flips:
        if records:
            records[at % len(records)] ^= xor
    if cut is not None and records:
        del records[cut % len(records) :]
    batch = bytearray(plain[:BATCH_HEADER_SIZE] + records)
    struct.pack_into(">i", batch, 8, len(batch) - BATCH_OVERHEAD)

    def summaries() -> object:
        return [
            (s.offset, s.key_size, s.value_size)
            for s in iter_record_summaries(batch, max_decompressed_bytes=CAP)
        ]

    def decoded() -> object:
        return [
            (r.offset, -1 if r.key is None else len(r.key), -1 if r.value is None else len(r.value))
            for r in decode_records(batch, max_decompressed_bytes=CAP)
        ]

    assert _outcome(summaries) == _outcome(decoded)


def test_decompression_is_capped() -> None:
    batch = build_batch([(b"k", b"x" * 10_000)], compression=1)
    with pytest.raises(InvalidBatch):
        list(iter_record_summaries(batch, max_decompressed_bytes=1000))
