"""The `__consumer_offsets` records the coordinator core writes (codecs in
`protocol.group_records`): group metadata, group tombstones, offset commits and their
tombstones. Each is a `Record` in the partition the caller names (the group's)."""

from __future__ import annotations

from protocol.group_records import (
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from wirebroker.group.classic import ClassicGroup
from wirebroker.group.effects import Record
from wirebroker.group.messages import TxnCommitRequest


def group_metadata_record(
    partition: int, group: ClassicGroup, assignment: dict[str, bytes]
) -> Record:
    """The group with its members, each with `assignment[member_id]`."""
    members = tuple(
        MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name),
            assignment=assignment[m.member_id],
        )
        for m in group.members.values()
    )
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        members=members,
        current_state_timestamp=group.state_timestamp_or_default(),
    )
    return _group_record(partition, group.group_id, value)


def empty_group_metadata_record(partition: int, group: ClassicGroup) -> Record:
    """A new group with no members yet (so it survives a restart)."""
    value = GroupMetadataValue(
        protocol_type="",
        generation=0,
        protocol=None,
        leader=None,
        current_state_timestamp=group.state_timestamp_or_default(),
    )
    return _group_record(partition, group.group_id, value)


def _group_record(partition: int, group_id: str, value: GroupMetadataValue) -> Record:
    return Record(
        partition, encode_group_metadata_key(group_id), encode_group_metadata_value(value)
    )


def group_tombstone(partition: int, group_id: str) -> Record:
    return Record(partition, encode_group_metadata_key(group_id), None)


def offset_commit_record(
    partition: int, group_id: str, topic: str, partition_index: int, value: OffsetCommitValue
) -> Record:
    return Record(
        partition,
        encode_offset_commit_key(group_id, topic, partition_index),
        encode_offset_commit_value(value),
    )


def offset_tombstone(partition: int, group_id: str, topic: str, partition_index: int) -> Record:
    return Record(partition, encode_offset_commit_key(group_id, topic, partition_index), None)


def txn_offset_commit_record(
    partition: int,
    group_id: str,
    topic: str,
    partition_index: int,
    value: OffsetCommitValue,
    req: TxnCommitRequest,
) -> Record:
    """An offset commit of a transaction (TxnOffsetCommit): the same key and value, in a
    transactional batch of the request's producer."""
    return Record(
        partition,
        encode_offset_commit_key(group_id, topic, partition_index),
        encode_offset_commit_value(value),
        req.producer_id,
        req.producer_epoch,
    )
