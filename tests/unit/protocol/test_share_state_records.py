"""The `__share_group_state` record codecs (`protocol.share_state_records`): Kafka 4.4's
ShareSnapshot / ShareUpdate layouts, byte for byte, round trips and malformed input."""

from __future__ import annotations

import uuid

import pytest

from protocol.share_state_records import (
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    ShareRecordError,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    StateBatchRecord,
    decode_key,
    decode_snapshot,
    decode_update,
    encode_key,
    encode_snapshot,
    encode_update,
)

TOPIC = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def test_key_layout_is_type_then_group_topic_partition() -> None:
    key = ShareStateKey(SHARE_UPDATE, "g", TOPIC, 7)
    data = encode_key(key)
    assert data == b"\x00\x01" + b"\x00\x01g" + TOPIC.bytes + b"\x00\x00\x00\x07"
    assert decode_key(data) == key
    assert decode_key(b"\x00\x05" + data[2:]) is None  # an unknown record type is skipped


def test_snapshot_layout_and_round_trip() -> None:
    value = ShareSnapshotValue(
        snapshot_epoch=1,
        state_epoch=2,
        leader_epoch=3,
        start_offset=10,
        create_timestamp=100,
        write_timestamp=200,
        state_batches=(StateBatchRecord(10, 19, 2, 1),),
    )
    data = encode_snapshot(value)
    expected = (
        b"\x00\x00"  # version 0
        + (1).to_bytes(4, "big")
        + (2).to_bytes(4, "big")
        + (3).to_bytes(4, "big")
        + (10).to_bytes(8, "big")
        + (100).to_bytes(8, "big")
        + (200).to_bytes(8, "big")
        + b"\x02"  # compact array: one batch
        + (10).to_bytes(8, "big")
        + (19).to_bytes(8, "big")
        + b"\x02"
        + b"\x00\x01"
        + b"\x00"  # the batch's tagged fields
        + b"\x00"  # the value's tagged fields: delivery_complete_count -1 is not written
    )
    assert data == expected
    assert decode_snapshot(data) == value


def test_delivery_complete_count_is_tag_zero() -> None:
    value = ShareUpdateValue(0, 4, -1, (), delivery_complete_count=5)
    data = encode_update(value)
    assert data.endswith(b"\x01\x00\x04\x00\x00\x00\x05")
    assert decode_update(data) == value
    snap = ShareSnapshotValue(0, 0, 0, 0, 0, 0, (), delivery_complete_count=0)
    assert decode_snapshot(encode_snapshot(snap)).delivery_complete_count == 0


@pytest.mark.parametrize(
    "data",
    [b"", b"\x00", b"\x00\x01" + b"\x00" * 5, b"\x00\x00" + b"\x00" * 16 + b"\x7f"],
)
def test_malformed_values_raise(data: bytes) -> None:
    with pytest.raises(ShareRecordError):
        decode_update(data)
    with pytest.raises(ShareRecordError):
        decode_snapshot(data)


def test_malformed_key_raises() -> None:
    with pytest.raises(ShareRecordError):
        decode_key(b"\x00\x00\x00\x05ab")
    assert SHARE_SNAPSHOT == 0
