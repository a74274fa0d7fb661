"""The share group records of `__consumer_offsets` byte for byte as Kafka 4.4 writes them:
tests/oracle/ShareRecordsProbe.java prints the keys and values Kafka's own generated classes
serialize for fixed values; protocol/share_group_records.py must give the same bytes (and
decode Kafka's). Needs java and Kafka's jars (compat/oracle), no broker."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from compat.oracle.javac import compile_java
from compat.oracle.kafka import classpath, java
from protocol import share_group_records as sr

T = uuid.UUID(int=0xA1)


def _ours() -> list[bytes]:
    key = sr.encode_key
    return [
        key(sr.ShareKey(sr.MEMBER_METADATA, "g", "m")),
        sr.encode_member_metadata(sr.MemberMetadataValue("r", "c", "/h", ("a", "b"))),
        sr.encode_member_metadata(sr.MemberMetadataValue(None, "c", "/h", ())),
        key(sr.ShareKey(sr.GROUP_METADATA, "g")),
        sr.encode_group_epoch(sr.GroupEpochValue(7, -2)),
        key(sr.ShareKey(sr.TARGET_METADATA, "g")),
        sr.encode_target_metadata(sr.TargetMetadataValue(3)),
        sr.encode_target_metadata(sr.TargetMetadataValue(3, 1234)),
        key(sr.ShareKey(sr.TARGET_MEMBER, "g", "m")),
        sr.encode_target_member({T: frozenset({0, 2})}),
        key(sr.ShareKey(sr.CURRENT_ASSIGNMENT, "g", "m")),
        sr.encode_current_assignment(sr.CurrentAssignmentValue(4, 3, 0, {T: frozenset({1})})),
        key(sr.ShareKey(sr.STATE_PARTITION_METADATA, "g")),
        sr.encode_state_partition_metadata(
            sr.StatePartitionMetadataValue(
                initializing=(sr.TopicPartitionsInfo(T, "t", frozenset({1})),),
                initialized=(sr.TopicPartitionsInfo(T, "t", frozenset({0, 3})),),
                deleting=((T, "t"),),
            )
        ),
    ]


@pytest.fixture(scope="module")
def kafkas_bytes() -> list[bytes]:
    classes = compile_java(
        "share-records-probe", [Path(__file__).with_name("ShareRecordsProbe.java")]
    )
    done = subprocess.run(
        [java(), "-Xmx128m", "-cp", f"{classes}:{classpath()}", "ShareRecordsProbe"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [bytes.fromhex(line) for line in done.stdout.split()]


def test_records_are_kafkas_bytes(kafkas_bytes: list[bytes]) -> None:
    assert [b.hex() for b in _ours()] == [b.hex() for b in kafkas_bytes]


def test_kafkas_values_decode(kafkas_bytes: list[bytes]) -> None:
    assert sr.decode_member_metadata(kafkas_bytes[1]).subscribed_topic_names == ("a", "b")
    assert sr.decode_group_epoch(kafkas_bytes[4]) == sr.GroupEpochValue(7, -2)
    assert sr.decode_target_metadata(kafkas_bytes[7]) == sr.TargetMetadataValue(3, 1234)
    state = sr.decode_state_partition_metadata(kafkas_bytes[13])
    assert state.initialized == (sr.TopicPartitionsInfo(T, "t", frozenset({0, 3})),)
