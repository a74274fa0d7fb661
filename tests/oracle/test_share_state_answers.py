"""KIP-932 share state: the same requests to wirebroker and to Apache Kafka 4.4, the same
assertions. FindCoordinator key type 2 for a share-partition key, then ReadShareGroupState /
ReadShareGroupStateSummary of a key never initialised (an unknown topic id, and a real topic)
at that coordinator, and DescribeShareGroupOffsets of an unknown group."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from wirebroker.share_coordinator.keys import SharePartitionKey

_LOADING = (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR)


@pytest.fixture
def wire(single_broker: str) -> Iterator[Wire]:
    with Wire(single_broker) as w:
        yield w


def _coordinator(w: Wire, key: SharePartitionKey, timeout: float = 60.0) -> str:
    """The share coordinator's "host:port" for `key` (FindCoordinator v6, key type 2), once
    `__share_group_state` exists."""
    deadline = time.monotonic() + timeout
    while True:
        body = {"key_type": 2, "coordinator_keys": [key.coordinator_key]}
        [entry] = w.call(ApiKey.FIND_COORDINATOR, 6, body).coordinators
        if entry.error_code == 0:
            return f"{entry.host}:{entry.port}"
        assert entry.error_code == E.COORDINATOR_NOT_AVAILABLE, entry
        assert time.monotonic() < deadline, entry
        time.sleep(0.1)


def _state_call(w: Wire, api: ApiKey, version: int, key: SharePartitionKey, **fields: Any) -> Any:
    """One state RPC for `key` at its coordinator, retried while that is loading."""
    address = _coordinator(w, key)
    deadline = time.monotonic() + 60
    body = {
        "group_id": key.group_id,
        "topics": [
            {"topic_id": key.topic_id, "partitions": [{"partition": key.partition, **fields}]}
        ],
    }
    while True:
        [result] = w.call(api, version, body, address=address).results
        [partition] = result.partitions
        if partition.error_code not in _LOADING or time.monotonic() > deadline:
            assert result.topic_id == key.topic_id
            return partition
        time.sleep(0.1)


def test_read_state_of_an_unknown_key(wire: Wire, unique: Callable[[str], str]) -> None:
    key = SharePartitionKey(unique("sg"), uuid.uuid4(), 0)
    read = _state_call(wire, ApiKey.READ_SHARE_GROUP_STATE, 0, key, leader_epoch=0)
    assert (read.partition, read.error_code, read.error_message) == (
        0,
        E.INVALID_REQUEST,
        "Read operation on uninitialized share partition not allowed.",
    )
    assert (read.state_epoch, read.start_offset, list(read.state_batches)) == (0, 0, [])
    summary = _state_call(wire, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 1, key, leader_epoch=0)
    assert (summary.error_code, summary.error_message) == (
        E.UNKNOWN_TOPIC_OR_PARTITION,
        "This server does not host this topic-partition.",
    )


def test_summary_of_an_uninitialised_real_partition(
    wire: Wire, unique: Callable[[str], str]
) -> None:
    name = unique("shst")
    wire.create_topic(name, 1)
    meta = wire.call(
        ApiKey.METADATA, 12, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}]}
    )
    topic_id = meta.topics[0].topic_id
    key = SharePartitionKey(unique("sg"), topic_id, 0)
    summary = _state_call(wire, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 1, key, leader_epoch=0)
    assert (summary.error_code, summary.error_message) == (0, None)
    assert (summary.start_offset, summary.leader_epoch, summary.state_epoch) == (-1, 0, 0)
    assert summary.delivery_complete_count == -1


def test_describe_offsets_of_an_unknown_group(wire: Wire, unique: Callable[[str], str]) -> None:
    group = unique("sg")
    wire.call(ApiKey.FIND_COORDINATOR, 6, {"key_type": 0, "coordinator_keys": [group]})
    wire.ensure_offsets_topic()
    body = {
        "groups": [
            {"group_id": group, "topics": None},
            {"group_id": group, "topics": [{"topic_name": unique("none"), "partitions": [0]}]},
        ]
    }
    deadline = time.monotonic() + 60
    while True:
        answer = wire.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, body)
        everything, listed = answer.groups
        if everything.error_code not in _LOADING or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert (everything.group_id, everything.error_code, list(everything.topics)) == (group, 0, [])
    assert everything.error_message is None
    assert (listed.error_code, listed.error_message) == (0, None)
    [topic] = listed.topics
    assert topic.topic_id == uuid.UUID(int=0)
    [p] = topic.partitions
    assert (p.partition_index, p.start_offset, p.leader_epoch, p.lag, p.error_code) == (
        0,
        -1,
        0,
        -1,
        0,
    )


def test_metadata_creates_the_share_state_topic(wire: Wire) -> None:
    """Metadata with auto-creation makes `__share_group_state` through the share coordinator
    (Kafka's AutoTopicCreationManager): internal, 50 partitions."""
    body = {
        "topics": [{"name": "__share_group_state", "topic_id": uuid.UUID(int=0)}],
        "allow_auto_topic_creation": True,
        "include_topic_authorized_operations": False,
    }
    deadline = time.monotonic() + 60
    while True:
        [topic] = wire.call(ApiKey.METADATA, 12, body).topics
        assert topic.is_internal
        if topic.error_code == 0 and topic.partitions:
            break
        assert topic.error_code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.LEADER_NOT_AVAILABLE), topic
        assert time.monotonic() < deadline, topic
        time.sleep(0.1)
    assert len(topic.partitions) == 50
