"""LZ4 frames in Produce batches, asked of wirebroker (alone and as a cluster) and of Apache
Kafka 4.4 with the same assertions (tests/oracle/conftest.py).

Kafka reads a batch's LZ4 data with its own frame reader, which refuses what it does not
support (dependent blocks, the dictionary-id and reserved bits, a version other than 1, block
sizes other than 64 KiB-4 MiB, a wrong header or block checksum, a frame cut short): the
partition is answered UNKNOWN_SERVER_ERROR (-1) with the log start offset and nothing is
stored. What it never verifies (a content size, a content checksum, bytes after the end mark)
it accepts. The frames are those of the conformance corpus (compat/conformance/corpus/
bad_batches.py).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from compat.conformance.corpus.bad_batches import batch_of_payload, lz4_cases
from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode

LZ4 = 3
LATEST = -1
REFUSED = {
    "dependent",
    "header_checksum",
    "dict_id",
    "reserved_bit",
    "version_0",
    "block_size_3",
    "bd_reserved",
    "bad_magic",
    "no_end_mark",
    "empty",
    "short_header",
    "block_too_large",
    "bad_block_checksum",
}
CASES = {name: frame for name, frame, _note in lz4_cases()}


def test_every_case_is_classified() -> None:
    assert set(CASES) > REFUSED


@pytest.mark.parametrize("case", sorted(CASES))
def test_lz4_frames(any_broker: str, unique: Callable[[str], str], case: str) -> None:
    batch = batch_of_payload(CASES[case], LZ4)
    with Wire(any_broker) as wire:
        topic = unique(f"lz4-{case.replace('_', '-')}")
        wire.create_topic(topic, 1)
        leader = wire.brokers()[wire.leader(topic, 0)]
        body = {
            "transactional_id": None,
            "acks": -1,
            "timeout_ms": 10_000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        }
        [p] = wire.call(ApiKey.PRODUCE, 9, body, leader).responses[0].partition_responses
        answer = (ErrorCode(p.error_code), p.base_offset, p.log_start_offset, p.error_message)
        if case in REFUSED:
            assert answer == (ErrorCode.UNKNOWN, -1, 0, None)
            assert wire.list_offset(topic, 0, LATEST) == 0  # nothing stored
        else:
            assert answer == (ErrorCode.NONE, 0, 0, None)
            assert wire.list_offset(topic, 0, LATEST) == 3
