"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups and expiry.

Kafka's `OffsetMetadataManager` (plus the offsets side of group deletion and
`cleanupGroupMetadata`). Every change is applied at once and returned as records to append
(offset commits, offset tombstones, then the group tombstone when a group goes). Expiry
(`offsets.retention.minutes`, checked every `offsets.retention.check.interval.ms` on the
("expire",) timer) follows the rules in `wirebroker.group.offsets`; an Empty group left
without offsets is deleted. Topic existence and OffsetCommit/OffsetFetch v10 topic ids are
the handlers' business.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from protocol.errors import ErrorCode
from protocol.group_records import OffsetCommitValue
from wirebroker.group.classic import ClassicGroup, GroupState
from wirebroker.group.consumer.offsets import consumer_commit_error, consumer_fetch_error
from wirebroker.group.consumer.records import consumer_group_tombstones
from wirebroker.group.effects import Effects, Result
from wirebroker.group.messages import (
    CommitPartition,
    CommitRequest,
    CommitResult,
    CommitTopic,
    DeletedGroup,
    DeleteGroupsResult,
    DeleteOffsetsResult,
    FetchedPartition,
    FetchedTopic,
    OffsetFetchResult,
    PartitionError,
    TopicErrors,
    TopicPartitions,
    TxnCommitRequest,
)
from wirebroker.group.offsets import OffsetAndMetadata, java_string_length
from wirebroker.group.rebalance import Rebalancer
from wirebroker.group.records import (
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
    txn_offset_commit_record,
)
from wirebroker.group.state import CoordinatorState, PartitionStatus

EXPIRE_KEY = ("expire",)


class OffsetsManager:
    def __init__(self, state: CoordinatorState, rebalancer: Rebalancer) -> None:
        self.state = state
        self.rebalancer = rebalancer
        #: DeleteGroups of a share group (the core sets `ShareGroupManager.delete_group`)
        self.share_delete: Callable[[str, Effects], ErrorCode] = lambda _g, _fx: (
            ErrorCode.GROUP_ID_NOT_FOUND
        )

    # == OffsetCommit ======================================================================
    def commit_offsets(self, now_ms: int, req: CommitRequest) -> Result[CommitResult]:
        """OffsetCommit (see `CommitRequest`): a simple commit is accepted while the group is
        Empty, creating the group if needed. An unknown group with a generation is
        GROUP_ID_NOT_FOUND (the handler answers ILLEGAL_GENERATION before v9)."""
        group_id, topics = req.group_id, req.topics
        fx = Effects()
        err = self._commit_error(now_ms, req)
        if err is not ErrorCode.NONE:
            return fx.result(_commit_result(topics, lambda _t, _p: err))
        expire = -1 if req.retention_time_ms == -1 else now_ms + req.retention_time_ms
        max_meta = self.state.config.offset_metadata_max_bytes
        partition = self.state.partition_for(group_id)

        def commit_one(topic: str, p: CommitPartition) -> ErrorCode:
            value = _commit_value(p, now_ms, max_meta, expire)
            if value is None:
                return ErrorCode.OFFSET_METADATA_TOO_LARGE
            fx.records.append(
                offset_commit_record(partition, group_id, topic, p.partition_index, value)
            )
            self.state.offsets.put(
                group_id,
                topic,
                p.partition_index,
                OffsetAndMetadata.from_value(value, self.state.take_record_seq()),
            )
            return ErrorCode.NONE

        return fx.result(_commit_result(topics, commit_one))

    # == TxnOffsetCommit (pending until the marker: txn_offsets.py) ======================
    def txn_commit_offsets(self, now_ms: int, req: TxnCommitRequest) -> Result[CommitResult]:
        """TxnOffsetCommit: the checks of OffsetCommit in their transactional form (an
        unknown group with a generation is GROUP_ID_NOT_FOUND; the handler answers
        ILLEGAL_GENERATION before v6, as Kafka); the offsets are written as transactional
        records and stay pending until `complete_txn`."""
        fx = Effects()
        err = self._commit_error(now_ms, req, transactional=True)
        if err is not ErrorCode.NONE:
            return fx.result(_commit_result(req.topics, lambda _t, _p: err))
        max_meta = self.state.config.offset_metadata_max_bytes
        partition = self.state.partition_for(req.group_id)

        def commit_one(topic: str, p: CommitPartition) -> ErrorCode:
            value = _commit_value(p, now_ms, max_meta)
            if value is None:
                return ErrorCode.OFFSET_METADATA_TOO_LARGE
            fx.records.append(
                txn_offset_commit_record(
                    partition, req.group_id, topic, p.partition_index, value, req
                )
            )
            self.state.txn_offsets.add(
                req.producer_id,
                req.group_id,
                topic,
                p.partition_index,
                OffsetAndMetadata.from_value(value, self.state.take_record_seq()),
            )
            return ErrorCode.NONE

        return fx.result(_commit_result(req.topics, commit_one))

    def complete_txn(self, producer_id: int, partition: int, *, commit: bool) -> Result[None]:
        """A COMMIT/ABORT marker of `producer_id` was written to `__consumer_offsets`
        partition `partition`: its pending offsets of that partition's groups become
        committed offsets (each over an older commit only: a plain commit written after the
        transaction's record stays, as in Kafka), or are dropped. Writes nothing (the marker
        is the record)."""
        for group, topic, p, value in self.state.txn_offsets.take(
            producer_id, lambda g: self.state.partition_for(g) == partition
        ):
            if commit:
                if not self._known(group):
                    self.state.groups[group] = ClassicGroup(group)
                if value.newer_than(self.state.offsets.get(group, topic, p)):
                    self.state.offsets.put(group, topic, p, value)
        return Result()

    def _known(self, group_id: str) -> bool:
        state = self.state
        return any(group_id in g for g in (state.groups, state.consumer_groups, state.share_groups))

    def has_pending_txn_offset(self, group_id: str, topic: str, partition: int) -> bool:
        return self.state.txn_offsets.has_pending(group_id, topic, partition)

    def _commit_error(
        self, now_ms: int, req: CommitRequest | TxnCommitRequest, *, transactional: bool = False
    ) -> ErrorCode:
        """The group-level checks of a commit (creating a simple group when accepted); a
        valid commit of a member counts as its heartbeat."""
        group_id, member_id = req.group_id, req.member_id
        err = self.state.coordinator_error(group_id)
        if err is not ErrorCode.NONE:
            return err
        if group_id in self.state.share_groups:  # Kafka: "Group g is not a consumer group."
            return ErrorCode.GROUP_ID_NOT_FOUND
        consumer_group = self.state.consumer_groups.get(group_id)
        if consumer_group is not None:
            return consumer_commit_error(consumer_group, req, transactional=transactional)
        group = self.state.groups.get(group_id)
        if group is None:
            if req.generation_id >= 0:
                return ErrorCode.GROUP_ID_NOT_FOUND
            group = ClassicGroup(group_id, current_state_timestamp=now_ms)
            self.state.groups[group_id] = group
        err = group.validate_offset_commit(
            member_id, req.group_instance_id, req.generation_id, transactional=transactional
        )
        if err is not ErrorCode.NONE:
            return err
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            if member is not None:  # a commit counts as a heartbeat
                self.rebalancer.renew_session(group_id, member, now_ms)
        return ErrorCode.NONE

    # == OffsetFetch =======================================================================
    def fetch_offsets(
        self,
        *,
        group_id: str,
        topics: Sequence[TopicPartitions] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> OffsetFetchResult:
        """One group's committed offsets; `topics` None fetches every committed offset of
        the group. Partitions without a commit answer offset -1, leader epoch -1,
        metadata ""."""
        err = self.state.coordinator_error(group_id)
        if err is ErrorCode.NONE:
            err = consumer_fetch_error(self.state, group_id, member_id, member_epoch)
        if err is not ErrorCode.NONE:
            return OffsetFetchResult(group_id, err)
        group = self.state.groups.get(group_id)
        known = (
            group is not None and not group.is_in(GroupState.DEAD)
        ) or group_id in self.state.consumer_groups
        offsets = self.state.offsets
        if topics is None:
            out = tuple(
                FetchedTopic(topic, tuple(_fetched(p, v) for p, v in parts.items()))
                for topic, parts in (offsets.topics(group_id).items() if known else ())
            )
        else:
            out = tuple(
                FetchedTopic(
                    t.name,
                    tuple(
                        _fetched(p, offsets.get(group_id, t.name, p) if known else None)
                        for p in t.partition_indexes
                    ),
                )
                for t in topics
            )
        return OffsetFetchResult(group_id, ErrorCode.NONE, out)

    # == OffsetDelete ======================================================================
    def delete_offsets(
        self, now_ms: int, *, group_id: str, topics: Sequence[TopicPartitions]
    ) -> Result[DeleteOffsetsResult]:
        """OffsetDelete: only for Empty groups (or topics a `consumer` group does not
        subscribe to; a KIP-848 consumer group: topics no member subscribes to)."""
        del now_ms
        fx = Effects()
        err = self.state.request_error(group_id)
        group = self.state.groups.get(group_id)
        consumer_group = self.state.consumer_groups.get(group_id)
        is_subscribed: Callable[[str], bool]
        if err is ErrorCode.NONE and group_id in self.state.share_groups:
            err = ErrorCode.GROUP_ID_NOT_FOUND  # Kafka: "Group g is not a consumer group."
        elif err is ErrorCode.NONE and consumer_group is not None:
            is_subscribed = consumer_group.subscribed_topic_names().__contains__
        elif err is ErrorCode.NONE and (group is None or group.is_in(GroupState.DEAD)):
            err = ErrorCode.GROUP_ID_NOT_FOUND
        elif err is ErrorCode.NONE and group is not None:
            if not group.is_in(GroupState.EMPTY) and not group.uses_consumer_protocol():
                err = ErrorCode.NON_EMPTY_GROUP
            is_subscribed = group.is_subscribed_to_topic
        if err is not ErrorCode.NONE:
            return fx.result(DeleteOffsetsResult(err))
        out_topics = []
        for t in topics:
            parts = []
            subscribed = is_subscribed(t.name)
            for p in t.partition_indexes:
                if subscribed:
                    parts.append(PartitionError(p, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
                    continue
                if self.state.offsets.get(group_id, t.name, p) is not None:
                    self._offset_tombstone(group_id, t.name, p, fx)
                parts.append(PartitionError(p, ErrorCode.NONE))
            out_topics.append(TopicErrors(t.name, tuple(parts)))
        return fx.result(DeleteOffsetsResult(ErrorCode.NONE, tuple(out_topics)))

    def _offset_tombstone(self, group_id: str, topic: str, partition: int, fx: Effects) -> None:
        fx.records.append(
            offset_tombstone(self.state.partition_for(group_id), group_id, topic, partition)
        )
        self.state.offsets.remove(group_id, topic, partition)

    # == DeleteGroups ======================================================================
    def delete_groups(self, now_ms: int, *, group_ids: Sequence[str]) -> Result[DeleteGroupsResult]:
        """DeleteGroups: Empty groups only (NON_EMPTY_GROUP otherwise); unknown ones
        GROUP_ID_NOT_FOUND. Writes offset tombstones then the group tombstone."""
        fx = Effects()
        results = []
        for gid in group_ids:
            err = self.state.coordinator_error(gid)
            if err is ErrorCode.NONE and gid in self.state.consumer_groups:
                err = self._delete_consumer_group(gid, fx)
            elif err is ErrorCode.NONE and gid in self.state.share_groups:
                err = self.share_delete(gid, fx)
            elif err is ErrorCode.NONE:
                group = self.state.groups.get(gid)
                if group is None or group.is_in(GroupState.DEAD):
                    err = ErrorCode.GROUP_ID_NOT_FOUND
                elif not group.is_in(GroupState.EMPTY):
                    err = ErrorCode.NON_EMPTY_GROUP
                else:
                    for topic, partition, _ in self.state.offsets.entries(gid):
                        self._offset_tombstone(gid, topic, partition, fx)
                    self._remove_group(group, fx, now_ms)
            results.append(DeletedGroup(gid, err))
        return fx.result(DeleteGroupsResult(tuple(results)))

    def _delete_consumer_group(self, gid: str, fx: Effects) -> ErrorCode:
        """A KIP-848 group: deleted when it has no members (its offsets, then its records)."""
        group = self.state.consumer_groups[gid]
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        for topic, partition, _ in self.state.offsets.entries(gid):
            self._offset_tombstone(gid, topic, partition, fx)
        fx.records.extend(consumer_group_tombstones(self.state.partition_for(gid), group))
        del self.state.consumer_groups[gid]
        self.state.cancel_group_timers(gid)
        return ErrorCode.NONE

    def _remove_group(self, group: ClassicGroup, fx: Effects, now_ms: int) -> None:
        gid = group.group_id
        fx.records.append(group_tombstone(self.state.partition_for(gid), gid))
        group.transition_to(GroupState.DEAD, now_ms)
        del self.state.groups[gid]
        self.state.cancel_group_timers(gid)

    # == offset expiry =====================================================================
    def schedule_expiration(self, now_ms: int) -> None:
        self.state.timers.schedule(
            EXPIRE_KEY,
            now_ms + self.state.config.offsets_retention_check_interval_ms,
            self._cleanup,
        )

    def _cleanup(self, now_ms: int, fx: Effects) -> None:
        """Kafka's `cleanupGroupMetadata`: expire offsets, then delete Empty groups that
        have none left."""
        for gid in list(self.state.groups):
            if self.state.status(gid) is not PartitionStatus.ACTIVE:
                continue
            group = self.state.groups[gid]
            if self._expire_offsets(group, now_ms, fx) and group.is_in(GroupState.EMPTY):
                self._remove_group(group, fx, now_ms)
        for gid in list(self.state.consumer_groups):
            if self.state.status(gid) is not PartitionStatus.ACTIVE:
                continue
            # KIP-848 groups (Kafka's ConsumerGroup): offsets of topics no member subscribes
            # to expire from their commit; an empty group without offsets is deleted
            consumer_group = self.state.consumer_groups[gid]
            subscribed = consumer_group.subscribed_topic_names()
            if (
                self._expire_group_offsets(
                    gid, subscribed.__contains__, lambda o: o.commit_timestamp_ms, now_ms, fx
                )
                and not consumer_group.members
            ):
                self._delete_consumer_group(gid, fx)
        self.schedule_expiration(now_ms)

    def _expire_offsets(self, group: ClassicGroup, now_ms: int, fx: Effects) -> bool:
        """Tombstone expired offsets; True when the group has no offsets left."""
        gid = group.group_id
        if not self.state.offsets.has_offsets(gid):
            return True
        base = _expiration_base(group)
        if base is None:
            return False
        return self._expire_group_offsets(gid, group.is_subscribed_to_topic, base, now_ms, fx)

    def _expire_group_offsets(
        self,
        gid: str,
        subscribed: Callable[[str], bool],
        base: Callable[[OffsetAndMetadata], int],
        now_ms: int,
        fx: Effects,
    ) -> bool:
        """Tombstone the expired offsets of topics not `subscribed`; True when none are
        left."""
        retention = self.state.config.offsets_retention_ms
        all_expired = True
        for topic, parts in list(self.state.offsets.topics(gid).items()):
            if subscribed(topic):
                all_expired = False
                continue
            for partition, value in list(parts.items()):
                if value.is_expired(now_ms, retention, base(value)):
                    self._offset_tombstone(gid, topic, partition, fx)
                else:
                    all_expired = False
        return all_expired


def _expiration_base(group: ClassicGroup) -> Callable[[OffsetAndMetadata], int] | None:
    """From when an offset's retention counts (None: nothing of the group expires)."""
    if group.protocol_type is None:
        return lambda o: o.commit_timestamp_ms  # simple group
    if group.is_in(GroupState.EMPTY):
        empty_since = group.current_state_timestamp
        if empty_since is not None:
            return lambda o: empty_since
        return lambda o: o.commit_timestamp_ms
    if (
        group.uses_consumer_protocol()
        and group.subscribed_topics is not None
        and group.is_in(GroupState.STABLE)
    ):
        return lambda o: o.commit_timestamp_ms
    return None


def _commit_value(
    p: CommitPartition, now_ms: int, max_metadata: int, expire_ms: int = -1
) -> OffsetCommitValue | None:
    """The stored value of a committed partition (OffsetCommit, TxnOffsetCommit), or None when
    its metadata is longer than offset.metadata.max.bytes (OFFSET_METADATA_TOO_LARGE)."""
    metadata = p.committed_metadata
    if metadata is not None and java_string_length(metadata) > max_metadata:
        return None
    return OffsetCommitValue(
        offset=p.committed_offset,
        metadata=metadata or "",
        commit_timestamp=now_ms,
        leader_epoch=p.committed_leader_epoch,
        expire_timestamp=expire_ms,
    )


def _commit_result(
    topics: Sequence[CommitTopic], error_of: Callable[[str, CommitPartition], ErrorCode]
) -> CommitResult:
    """Each partition's error, `error_of` called in request order."""
    return CommitResult(
        tuple(
            TopicErrors(
                t.name,
                tuple(PartitionError(p.partition_index, error_of(t.name, p)) for p in t.partitions),
            )
            for t in topics
        )
    )


def _fetched(partition: int, value: OffsetAndMetadata | None) -> FetchedPartition:
    if value is None:
        return FetchedPartition(partition)
    return FetchedPartition(partition, value.committed_offset, value.leader_epoch, value.metadata)
