"""Golden bytes of the KIP-848 consumer group and KIP-932 share group records of
`__consumer_offsets` (`protocol.consumer_group_records`, `protocol.share_group_records`).

Each value is encoded to the exact bytes the codecs wrote when these were recorded (and Kafka
4.4's layouts: the per-module tests check the shapes against the JSON), then decoded from
those bytes and encoded again to the same bytes. A change to the shared writer or reader that
moves one byte fails here.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from protocol import consumer_group_records as cr
from protocol import share_group_records as sr

T = uuid.UUID(int=0x0102030405060708090A0B0C0D0E0F10)
U = uuid.UUID(int=7)

Case = tuple[Any, Callable[[Any], bytes], Callable[[bytes], Any], str]

CASES: dict[str, Case] = {
    "consumer key, group": (
        cr.ConsumerKey(cr.GROUP_METADATA, "cg"),
        cr.encode_key,
        cr.decode_consumer_key,
        "000300026367",
    ),
    "consumer key, member": (
        cr.ConsumerKey(cr.MEMBER_METADATA, "cg", "m-1"),
        cr.encode_key,
        cr.decode_consumer_key,
        "00050002636700036d2d31",
    ),
    "consumer key, regex": (
        cr.ConsumerKey(cr.REGULAR_EXPRESSION, "cg", "t.*"),
        cr.encode_key,
        cr.decode_consumer_key,
        "0010000263670003742e2a",
    ),
    "consumer group epoch": (
        cr.GroupEpochValue(7),
        cr.encode_group_epoch,
        cr.decode_group_epoch,
        "00000000000700",
    ),
    "consumer group epoch with hash": (
        cr.GroupEpochValue(7, -1234567890123),
        cr.encode_group_epoch,
        cr.decode_group_epoch,
        "000000000007010008fffffee08e04fb35",
    ),
    "consumer member": (
        cr.MemberMetadataValue("i", None, "c", "/h", ("a", "bb"), "x.*", 30000, "range"),
        cr.encode_member_metadata,
        cr.decode_member_metadata,
        "00000269000263032f6803026103626204782e2a000075300672616e676500",
    ),
    "consumer member, classic": (
        cr.MemberMetadataValue(
            None,
            "r",
            "c",
            "/h",
            (),
            None,
            -1,
            None,
            cr.ClassicMemberMetadata(45000, (("range", b"\x01\x02"), ("rr", b""))),
        ),
        cr.encode_member_metadata,
        cr.decode_member_metadata,
        "00000002720263032f680100ffffffff00010016010000afc8030672616e676503010200037272010000",
    ),
    "consumer regular expression": (
        cr.RegularExpressionValue(("t1", "t2"), 3, 1700000000000),
        cr.encode_regular_expression,
        cr.decode_regular_expression,
        "00000303743103743200000000000000030000018bcfe5680000",
    ),
    "consumer target epoch": (4, cr.encode_target_epoch, cr.decode_target_epoch, "00000000000400"),
    "consumer target member": (
        {T: frozenset({2, 0}), U: frozenset()},
        cr.encode_target_member,
        cr.decode_target_member,
        "0000030000000000000000000000000000000701000102030405060708090a0b0c0d0e0f10030000000000"
        "0000020000",
    ),
    "consumer current assignment": (
        cr.CurrentAssignmentValue(3, 2, 1, {T: frozenset({0, 1})}, {U: frozenset({5})}),
        cr.encode_current_assignment,
        cr.decode_current_assignment,
        "0000000000030000000201020102030405060708090a0b0c0d0e0f1003000000000000000100020000000000"
        "000000000000000000000702000000050000",
    ),
    "share key, group": (
        sr.ShareKey(sr.GROUP_METADATA, "sg"),
        sr.encode_key,
        sr.decode_share_key,
        "000b00027367",
    ),
    "share key, member": (
        sr.ShareKey(sr.CURRENT_ASSIGNMENT, "sg", "m-1"),
        sr.encode_key,
        sr.decode_share_key,
        "000e0002736700036d2d31",
    ),
    "share member": (
        sr.MemberMetadataValue("r", "c", "/h", ("a", "bb")),
        sr.encode_member_metadata,
        sr.decode_member_metadata,
        "000002720263032f6803026103626200",
    ),
    "share member, no rack": (
        sr.MemberMetadataValue(None, "", "", ()),
        sr.encode_member_metadata,
        sr.decode_member_metadata,
        "00000001010100",
    ),
    "share group epoch": (
        sr.GroupEpochValue(7, -2),
        sr.encode_group_epoch,
        sr.decode_group_epoch,
        "000000000007fffffffffffffffe00",
    ),
    "share target metadata": (
        sr.TargetMetadataValue(3),
        sr.encode_target_metadata,
        sr.decode_target_metadata,
        "00000000000300",
    ),
    "share target metadata with timestamp": (
        sr.TargetMetadataValue(3, 1234),
        sr.encode_target_metadata,
        sr.decode_target_metadata,
        "00000000000301000800000000000004d2",
    ),
    "share target member": (
        {T: frozenset({2, 0}), U: frozenset({1})},
        sr.encode_target_member,
        sr.decode_target_member,
        "000003000000000000000000000000000000070200000001000102030405060708090a0b0c0d0e0f100300"
        "000000000000020000",
    ),
    "share current assignment": (
        sr.CurrentAssignmentValue(4, 3, 0, {T: frozenset({0, 1})}),
        sr.encode_current_assignment,
        sr.decode_current_assignment,
        "0000000000040000000300020102030405060708090a0b0c0d0e0f100300000000000000010000",
    ),
    "share state partition metadata": (
        sr.StatePartitionMetadataValue(
            initializing=(sr.TopicPartitionsInfo(U, "u", frozenset({1})),),
            initialized=(
                sr.TopicPartitionsInfo(T, "t", frozenset({0, 3})),
                sr.TopicPartitionsInfo(uuid.UUID(int=3), "w", frozenset()),
            ),
            deleting=((uuid.UUID(int=9), "gone"),),
        ),
        sr.encode_state_partition_metadata,
        sr.decode_state_partition_metadata,
        "000002000000000000000000000000000000070275020000000100030000000000000000000000000000000302"
        "7701000102030405060708090a0b0c0d0e0f10027403000000000000000300020000000000000000000000000000"
        "000905676f6e650000",
    ),
    "share state partition metadata, empty": (
        sr.StatePartitionMetadataValue(),
        sr.encode_state_partition_metadata,
        sr.decode_state_partition_metadata,
        "000001010100",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_golden_bytes(name: str) -> None:
    value, encode, decode, golden = CASES[name]
    data = encode(value)
    assert data.hex() == golden
    assert encode(decode(data)) == data
