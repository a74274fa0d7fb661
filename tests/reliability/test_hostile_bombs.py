"""Decompression bombs in Produce to a compacted topic (where the broker decompresses records
to check their keys): rejected with INVALID_RECORD, memory bounded by the decode cap (64 MiB),
nothing appended, and the partition still takes valid batches afterwards."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from _nettools import BrokerProcess, hostile

from protocol.errors import ErrorCode
from protocol.records import build_batch

CODECS = {"gzip": 1, "lz4": 3, "zstd": 4}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hostile.InProcessBroker]:
    data = Path(tmp_path_factory.mktemp("hostile-bombs")) / "data"
    with hostile.InProcessBroker(data) as running:
        yield running


def _produce(broker: hostile.InProcessBroker, records: bytes) -> int:
    out = broker.exchange(hostile.produce_request(hostile.COMPACT_TOPIC, records), timeout=60)
    assert not out.errors and len(out.responses) == 1, out
    (code,) = hostile.produce_errors(out.responses[0])
    return code


def _high_watermark(broker: hostile.InProcessBroker) -> int:
    partition = broker.broker.replicas.partition(hostile.COMPACT_TOPIC, 0)
    assert partition is not None
    return int(partition.high_watermark)


@pytest.mark.parametrize("name", sorted(CODECS))
def test_bomb_is_rejected_within_the_decode_cap(broker: hostile.InProcessBroker, name: str) -> None:
    request = hostile.bomb_request(CODECS[name])
    assert len(request) < 1_100_000  # fits under the default max.message.bytes
    before = _high_watermark(broker)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        out = broker.exchange(request, timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not out.errors
    (code,) = hostile.produce_errors(out.responses[0])
    assert code == ErrorCode.INVALID_RECORD
    assert peak - base < hostile.DECODE_CAP + (8 << 20), f"peak {peak - base} bytes"
    assert _high_watermark(broker) == before
    assert _produce(broker, build_batch([(b"key", b"value")])) == ErrorCode.NONE
    assert _high_watermark(broker) == before + 1


def test_bomb_just_under_the_cap_is_decoded_and_judged_on_its_records(
    broker: hostile.InProcessBroker,
) -> None:
    """32 MiB of zeros is below the cap: decompressed, then rejected as garbage records."""
    request = hostile.bomb_request(4, size=32 << 20)
    out = broker.exchange(request, timeout=60)
    assert not out.errors
    assert hostile.produce_errors(out.responses[0]) == [ErrorCode.INVALID_RECORD]


def test_snappy_block_declaring_a_huge_length_is_rejected(
    broker: hostile.InProcessBroker,
) -> None:
    """Snappy's ratio is ~21:1 at best; a block *declaring* 2**31 bytes is refused unread."""
    varint = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x07])
    records = hostile.raw_batch(varint + b"\x00" * 64, compression=2)
    assert _produce(broker, records) == ErrorCode.INVALID_RECORD


@pytest.mark.slow
def test_bomb_to_the_live_broker_is_answered_and_the_broker_stays_up(tmp_path: Path) -> None:
    proc = BrokerProcess(tmp_path / "data", log_path=tmp_path / "broker.log")
    try:
        bootstrap = proc.start()
        hostile.create_topics_live(bootstrap)
        host, _, port = bootstrap.rpartition(":")
        for codec in CODECS.values():
            client = hostile.Client(host, int(port))
            try:
                client.sock.sendall(hostile.bomb_request(codec))
                frame = client.read_frame()
                assert frame is not None
                assert hostile.produce_errors(frame) == [ErrorCode.INVALID_RECORD]
                assert client.api_versions_ok()  # the same connection keeps working
            finally:
                client.close()
    finally:
        proc.close()
    assert hostile.count_unhandled(proc.log_text()) == 0
