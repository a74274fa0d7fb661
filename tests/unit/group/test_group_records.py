"""Codecs of the __consumer_offsets records: round trips, Kafka's byte layouts, bad input."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupRecordError,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)

MEMBER = MemberMetadata(
    member_id="c-1",
    group_instance_id="inst",
    client_id="c",
    client_host="/10.0.0.1",
    session_timeout=10000,
    subscription=b"\x00\x01sub",
    assignment=b"\x00\x01asg",
    rebalance_timeout=30000,
)


# -- known bytes (written out field by field from Kafka's JSON layouts) --------------------


def test_offset_commit_key_known_bytes() -> None:
    expected = (
        b"\x00\x01"  # key version 1 = OffsetCommitKey
        b"\x00\x02gr"  # group
        b"\x00\x03top"  # topic
        b"\x00\x00\x00\x07"  # partition 7
    )
    assert encode_offset_commit_key("gr", "top", 7) == expected
    assert decode_key(expected) == OffsetCommitKey("gr", "top", 7, version=1)


def test_group_metadata_key_known_bytes() -> None:
    expected = b"\x00\x02\x00\x05group"
    assert encode_group_metadata_key("group") == expected
    assert decode_key(expected) == GroupMetadataKey("group")


def test_offset_commit_value_v3_known_bytes() -> None:
    value = OffsetCommitValue(offset=42, metadata="m", commit_timestamp=1000, leader_epoch=5)
    expected = (
        b"\x00\x03"  # version 3 (what Kafka writes without an expire timestamp)
        + struct.pack(">q", 42)  # offset
        + struct.pack(">i", 5)  # leader epoch
        + b"\x00\x01m"  # metadata
        + struct.pack(">q", 1000)  # commit timestamp
    )
    assert encode_offset_commit_value(value) == expected
    decoded = decode_offset_commit_value(expected)
    assert decoded == value and decoded.version == 3


def test_offset_commit_value_v1_known_bytes_when_expire_timestamp_set() -> None:
    value = OffsetCommitValue(offset=1, metadata="", commit_timestamp=10, expire_timestamp=99)
    expected = (
        b"\x00\x01"
        + struct.pack(">q", 1)
        + b"\x00\x00"
        + struct.pack(">q", 10)
        + struct.pack(">q", 99)  # expire timestamp: version 1 only
    )
    assert encode_offset_commit_value(value) == expected
    assert decode_offset_commit_value(expected) == value


def test_group_metadata_value_v3_known_bytes() -> None:
    member = MemberMetadata(
        member_id="m",
        group_instance_id=None,
        client_id="c",
        client_host="h",
        session_timeout=6000,
        subscription=b"S",
        assignment=b"",
        rebalance_timeout=7000,
    )
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=3,
        protocol="range",
        leader="m",
        members=(member,),
        current_state_timestamp=123,
    )
    expected = (
        b"\x00\x03"
        + b"\x00\x08consumer"
        + struct.pack(">i", 3)
        + b"\x00\x05range"
        + b"\x00\x01m"  # leader
        + struct.pack(">q", 123)  # current state timestamp (v2+)
        + struct.pack(">i", 1)  # one member
        + b"\x00\x01m"  # member id
        + b"\xff\xff"  # group instance id: null (v3+)
        + b"\x00\x01c"  # client id
        + b"\x00\x01h"  # client host
        + struct.pack(">i", 7000)  # rebalance timeout (v1+)
        + struct.pack(">i", 6000)  # session timeout
        + struct.pack(">i", 1)
        + b"S"  # subscription bytes
        + struct.pack(">i", 0)  # assignment bytes
    )
    assert encode_group_metadata_value(value) == expected
    assert decode_group_metadata_value(expected) == value


def test_empty_group_value_known_bytes() -> None:
    value = GroupMetadataValue(protocol_type="", generation=0, protocol=None, leader=None)
    expected = (
        b"\x00\x03"
        b"\x00\x00" + struct.pack(">i", 0) + b"\xff\xff"
        b"\xff\xff" + struct.pack(">q", -1) + struct.pack(">i", 0)
    )
    assert encode_group_metadata_value(value) == expected


def test_flexible_v4_offset_value_bytes_and_tagged_fields_skipped() -> None:
    value = OffsetCommitValue(offset=7, metadata="ab", commit_timestamp=5, leader_epoch=2)
    encoded = encode_offset_commit_value(value, version=4)
    assert encoded == (
        b"\x00\x04"
        + struct.pack(">q", 7)
        + struct.pack(">i", 2)
        + b"\x03ab"  # compact string: length + 1
        + struct.pack(">q", 5)
        + b"\x00"  # no tagged fields
    )
    # A newer writer may add tagged fields: one tag (id 9, 2 bytes) is skipped.
    with_tag = encoded[:-1] + b"\x01\x09\x02zz"
    assert decode_offset_commit_value(with_tag) == value


# -- round trips ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_offset_commit_value_round_trip_all_versions(version: int) -> None:
    value = OffsetCommitValue(
        offset=123456789012,
        metadata="meta\u00e9",
        commit_timestamp=1700000000000,
        leader_epoch=9 if version >= 3 else -1,
        expire_timestamp=1800000000000 if version == 1 else -1,
    )
    decoded = decode_offset_commit_value(encode_offset_commit_value(value, version))
    assert decoded == value
    assert decoded.version == version


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_value_round_trip_all_versions(version: int) -> None:
    member = MemberMetadata(
        member_id=MEMBER.member_id,
        group_instance_id=MEMBER.group_instance_id if version >= 3 else None,
        client_id=MEMBER.client_id,
        client_host=MEMBER.client_host,
        session_timeout=MEMBER.session_timeout,
        subscription=MEMBER.subscription,
        assignment=MEMBER.assignment,
        rebalance_timeout=MEMBER.rebalance_timeout if version >= 1 else -1,
    )
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=12,
        protocol="cooperative-sticky",
        leader="c-1",
        members=(member, member),
        current_state_timestamp=55 if version >= 2 else -1,
    )
    decoded = decode_group_metadata_value(encode_group_metadata_value(value, version))
    assert decoded == value
    assert decoded.version == version


def test_older_versions_drop_newer_fields() -> None:
    value = OffsetCommitValue(offset=1, metadata="", commit_timestamp=2, leader_epoch=8)
    assert decode_offset_commit_value(encode_offset_commit_value(value, 2)).leader_epoch == -1
    g = GroupMetadataValue("consumer", 1, "range", "c-1", (MEMBER,), 77)
    old = decode_group_metadata_value(encode_group_metadata_value(g, 0))
    assert old.current_state_timestamp == -1
    assert old.members[0].group_instance_id is None
    assert old.members[0].rebalance_timeout == -1


@given(
    group=st.text(max_size=40),
    topic=st.text(max_size=40),
    partition=st.integers(-(2**31), 2**31 - 1),
)
def test_offset_commit_key_round_trip_property(group: str, topic: str, partition: int) -> None:
    assert decode_key(encode_offset_commit_key(group, topic, partition)) == OffsetCommitKey(
        group, topic, partition
    )


# -- bad input -----------------------------------------------------------------------------


def test_unknown_key_versions_are_reported_not_decoded() -> None:
    assert decode_key(b"\x00\x03anything") == UnknownKey(3)
    assert decode_key(struct.pack(">h", 1000)) == UnknownKey(1000)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\xff\xff",  # negative key version
        b"\x00\x01\x00\x05ab",  # string longer than the bytes left
        b"\x00\x02\xff\xff",  # null group
        b"\x00\x01\x00\x01g\x00\x01t\x00\x00",  # truncated partition
        b"\x00\x02\x00\x02\xc3\x28",  # invalid UTF-8
    ],
)
def test_malformed_keys_raise(data: bytes) -> None:
    with pytest.raises(GroupRecordError):
        decode_key(data)


def test_malformed_values_raise() -> None:
    good = encode_group_metadata_value(GroupMetadataValue("consumer", 1, "r", "m", (MEMBER,), 1))
    for cut in range(len(good)):
        with pytest.raises(GroupRecordError):
            decode_group_metadata_value(good[:cut])
    with pytest.raises(GroupRecordError):
        decode_offset_commit_value(b"\x00\x05" + bytes(30))  # unknown version
    huge_array = (
        b"\x00\x03\x00\x00"
        + struct.pack(">i", 1)
        + b"\xff\xff\xff\xff"
        + struct.pack(">q", -1)
        + struct.pack(">i", 2**31 - 1)
    )
    with pytest.raises(GroupRecordError, match="array"):
        decode_group_metadata_value(huge_array)
    overlong_varint = b"\x00\x04" + struct.pack(">qi", 0, 0) + b"\xff\xff\xff\xff\xff\x01"
    with pytest.raises(GroupRecordError, match="varint"):
        decode_offset_commit_value(overlong_varint)


@given(st.binary(max_size=80))
def test_random_bytes_never_raise_anything_but_group_record_error(data: bytes) -> None:
    for decode in (decode_key, decode_offset_commit_value, decode_group_metadata_value):
        with contextlib.suppress(GroupRecordError):
            decode(data)
