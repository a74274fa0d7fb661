"""The KIP-848 records a consumer group writes to `__consumer_offsets` (codecs in
`protocol.consumer_group_records`) and their replay at load.

Written, as Kafka 4.4 writes them:
    a member's metadata changes (join, subscription, ...)   ConsumerGroupMemberMetadata
    the group epoch moves                                   ConsumerGroupMetadata (epoch, hash)
    a new target assignment                                 ConsumerGroupTargetAssignmentMember
                                                            of each member whose target changed,
                                                            then ConsumerGroupTargetAssignment-
                                                            Metadata (the assignment epoch)
    a member's epoch/assignment/state changes               ConsumerGroupCurrentMemberAssignment
    a member leaves or is fenced                            tombstones: current assignment,
                                                            target member, member metadata
    the group goes (deleted or becomes classic)             tombstones: target metadata, group
    a classic group is upgraded (migration.py)              member metadata (classic tag) of
                                                            each member, group epoch, target
                                                            members, target epoch, current
                                                            assignments
    a group is downgraded                                   tombstones: current assignments,
                                                            target members, target epoch,
                                                            member metadata, regexes, group
    a subscription regex matches other topics               ConsumerGroupRegularExpression
                                                            (its topics); a tombstone once no
                                                            member subscribes with it
The metadata hash is wirebroker's own (blake2b of the subscribed topics' names, ids and
partition counts), not Kafka's: a group moved between the two rebalances once.

`ConsumerGroupsFold` rebuilds groups from the latest record of each key, in any order (the
runtime's fold hands over the latest value per key): a group exists once its
ConsumerGroupMetadata does; members are those with member metadata; the regular
expression records give `ConsumerGroup.resolved` (matched again at the next heartbeat).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from protocol import consumer_group_records as cr
from protocol.group_records import encode_group_metadata_key
from wirebroker.group.consumer.model import (
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from wirebroker.group.effects import Effects, Record

V = TypeVar("V")

_STATE_CODES = {
    MemberState.STABLE: 0,
    MemberState.UNREVOKED_PARTITIONS: 1,
    MemberState.UNRELEASED_PARTITIONS: 2,
}
_STATES = {code: state for state, code in _STATE_CODES.items()}


def metadata_hash(metadata: Mapping[str, tuple[uuid.UUID, int]]) -> int:
    """A stable signed 64-bit hash of subscribed topic metadata (0 only for none)."""
    if not metadata:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(metadata):
        topic_id, partitions = metadata[name]
        h.update(f"{name}\x00{topic_id}\x00{partitions}\x00".encode())
    return int.from_bytes(h.digest(), "big", signed=True) or 1


def _key(record_type: int, group: str, member: str | None = None) -> bytes:
    return cr.encode_key(cr.ConsumerKey(record_type, group, member))


class ConsumerRecords:
    def __init__(self, partition_for: Callable[[str], int]) -> None:
        self.partition_for = partition_for

    def _put(self, fx: Effects, group: str, key: bytes, value: bytes | None) -> None:
        fx.records.append(Record(self.partition_for(group), key, value))

    def member(self, fx: Effects, group: ConsumerGroup, member: ConsumerMember) -> None:
        value = cr.MemberMetadataValue(
            instance_id=member.instance_id,
            rack_id=member.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=member.subscribed_topic_names,
            subscribed_topic_regex=member.subscribed_topic_regex,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            server_assignor=member.server_assignor,
            classic=member.classic,
        )
        key = _key(cr.MEMBER_METADATA, group.group_id, member.member_id)
        self._put(fx, group.group_id, key, cr.encode_member_metadata(value))

    def current(self, fx: Effects, group: ConsumerGroup, member: ConsumerMember) -> None:
        value = cr.CurrentAssignmentValue(
            member.member_epoch,
            member.previous_member_epoch,
            _STATE_CODES[member.state],
            member.assigned,
            member.pending_revocation,
        )
        key = _key(cr.CURRENT_ASSIGNMENT, group.group_id, member.member_id)
        self._put(fx, group.group_id, key, cr.encode_current_assignment(value))

    def member_removed(self, fx: Effects, group: ConsumerGroup, member_id: str) -> None:
        gid = group.group_id
        for record_type in (cr.CURRENT_ASSIGNMENT, cr.TARGET_MEMBER, cr.MEMBER_METADATA):
            self._put(fx, gid, _key(record_type, gid, member_id), None)

    def group_epoch(self, fx: Effects, group: ConsumerGroup) -> None:
        value = cr.GroupEpochValue(group.group_epoch, group.metadata_hash)
        key = _key(cr.GROUP_METADATA, group.group_id)
        self._put(fx, group.group_id, key, cr.encode_group_epoch(value))

    def target(
        self, fx: Effects, group: ConsumerGroup, changed: Iterable[str] | None = None
    ) -> None:
        """The target of each member in `changed` (all when None), then its epoch."""
        for mid in group.target if changed is None else changed:
            self.target_member(fx, group, mid)
        key = _key(cr.TARGET_METADATA, group.group_id)
        self._put(fx, group.group_id, key, cr.encode_target_epoch(group.assignment_epoch))

    def target_member(self, fx: Effects, group: ConsumerGroup, member_id: str) -> None:
        key = _key(cr.TARGET_MEMBER, group.group_id, member_id)
        value = cr.encode_target_member(group.target.get(member_id, {}))
        self._put(fx, group.group_id, key, value)

    def classic_group_removed(self, fx: Effects, group_id: str) -> None:
        self._put(fx, group_id, encode_group_metadata_key(group_id), None)

    def regex(self, fx: Effects, group: ConsumerGroup, pattern: str) -> None:
        """The topics `pattern` matches now (a tombstone when no member uses it)."""
        key = _key(cr.REGULAR_EXPRESSION, group.group_id, pattern)
        topics = group.resolved.get(pattern)
        value = None
        if topics is not None:
            value = cr.encode_regular_expression(cr.RegularExpressionValue(tuple(sorted(topics))))
        self._put(fx, group.group_id, key, value)

    def created(self, fx: Effects, group: ConsumerGroup) -> None:
        """Every record of a group that replaces a classic one (Kafka's order)."""
        for m in group.members.values():
            self.member(fx, group, m)
        self.group_epoch(fx, group)
        self.target(fx, group)
        for m in group.members.values():
            self.current(fx, group, m)

    def removed(self, fx: Effects, group: ConsumerGroup) -> None:
        """Tombstones of every record of the group (it becomes a classic group)."""
        gid = group.group_id
        for record_type in (cr.CURRENT_ASSIGNMENT, cr.TARGET_MEMBER):
            for mid in group.members:
                self._put(fx, gid, _key(record_type, gid, mid), None)
        self._put(fx, gid, _key(cr.TARGET_METADATA, gid), None)
        for mid in group.members:
            self._put(fx, gid, _key(cr.MEMBER_METADATA, gid, mid), None)
        for pattern in sorted(group.resolved):
            self._put(fx, gid, _key(cr.REGULAR_EXPRESSION, gid, pattern), None)
        self._put(fx, gid, _key(cr.GROUP_METADATA, gid), None)


def consumer_group_tombstones(partition: int, group: ConsumerGroup) -> list[Record]:
    """Tombstones of an empty consumer group's records (it is deleted or becomes classic)."""
    gid = group.group_id
    return [
        Record(partition, _key(cr.TARGET_METADATA, gid), None),
        Record(partition, _key(cr.GROUP_METADATA, gid), None),
    ]


class ConsumerGroupsFold:
    """Consumer groups rebuilt from replayed records (see the module docstring)."""

    def __init__(self) -> None:
        self.epochs: dict[str, cr.GroupEpochValue] = {}
        self.target_epochs: dict[str, int] = {}
        self.members: dict[tuple[str, str], cr.MemberMetadataValue] = {}
        self.targets: dict[tuple[str, str], dict[uuid.UUID, frozenset[int]]] = {}
        self.current: dict[tuple[str, str], cr.CurrentAssignmentValue] = {}
        self.regexes: dict[tuple[str, str], cr.RegularExpressionValue] = {}

    def replay(self, key: cr.ConsumerKey, value: bytes | None) -> None:
        gid, mid = key.group, key.member or ""
        t = key.record_type
        tables: dict[int, tuple[dict, object, Callable[[bytes], object]]] = {
            cr.GROUP_METADATA: (self.epochs, gid, cr.decode_group_epoch),
            cr.TARGET_METADATA: (self.target_epochs, gid, cr.decode_target_epoch),
            cr.MEMBER_METADATA: (self.members, (gid, mid), cr.decode_member_metadata),
            cr.TARGET_MEMBER: (self.targets, (gid, mid), cr.decode_target_member),
            cr.CURRENT_ASSIGNMENT: (self.current, (gid, mid), cr.decode_current_assignment),
            cr.REGULAR_EXPRESSION: (self.regexes, (gid, mid), cr.decode_regular_expression),
        }
        table, k, decode = tables[t]
        if value is None:
            table.pop(k, None)
        else:
            table[k] = decode(value)

    def take(self, wanted: Callable[[str], bool]) -> dict[str, ConsumerGroup]:
        """Hand over (and forget) the groups `wanted` selects."""
        out: dict[str, ConsumerGroup] = {}
        for gid in [g for g in self.epochs if wanted(g)]:
            epoch = self.epochs.pop(gid)
            group = ConsumerGroup(
                gid,
                group_epoch=epoch.epoch,
                assignment_epoch=self.target_epochs.pop(gid, 0),
                metadata_hash=epoch.metadata_hash,
            )
            out[gid] = group
        for (gid, mid), meta in _take(self.members, wanted):
            if gid in out:
                out[gid].put_member(_member(mid, meta))
        for (gid, mid), target in _take(self.targets, wanted):
            if gid in out:
                out[gid].target[mid] = target
        for (gid, mid), current in _take(self.current, wanted):
            if gid in out:
                _apply_current(out[gid], mid, current)
        for (gid, pattern), regex in _take(self.regexes, wanted):
            if gid in out:
                out[gid].resolved[pattern] = frozenset(regex.topics)
        for gid in [g for g in self.target_epochs if wanted(g)]:
            del self.target_epochs[gid]
        for group in out.values():  # a target of a member that is gone is dropped
            for mid in [m for m in group.target if m not in group.members]:
                del group.target[mid]
        return out


def _take(
    table: dict[tuple[str, str], V], wanted: Callable[[str], bool]
) -> list[tuple[tuple[str, str], V]]:
    return [(k, table.pop(k)) for k in [k for k in table if wanted(k[0])]]


def _member(member_id: str, v: cr.MemberMetadataValue) -> ConsumerMember:
    return ConsumerMember(
        member_id,
        instance_id=v.instance_id,
        rack_id=v.rack_id,
        client_id=v.client_id,
        client_host=v.client_host,
        rebalance_timeout_ms=v.rebalance_timeout_ms,
        server_assignor=v.server_assignor,
        subscribed_topic_names=v.subscribed_topic_names,
        subscribed_topic_regex=v.subscribed_topic_regex,
        classic=v.classic,
    )


def _apply_current(group: ConsumerGroup, member_id: str, v: cr.CurrentAssignmentValue) -> None:
    member = group.members.get(member_id)
    if member is None:
        return
    group.put_member(
        member.with_(
            member_epoch=v.member_epoch,
            previous_member_epoch=v.previous_member_epoch,
            state=_STATES.get(v.state, MemberState.STABLE),
            assigned=dict(v.assigned),
            pending_revocation=dict(v.pending_revocation),
        )
    )
