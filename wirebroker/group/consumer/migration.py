"""Online migration between classic and consumer groups (KIP-848, Kafka 4.4's
`group.consumer.migration.policy`: disabled, downgrade, upgrade, bidirectional (default)).

Upgrade (`Migration.upgrade`, Kafka's convertToConsumerGroup): the first ConsumerGroupHeartbeat
(member epoch 0) for a non-empty classic group of protocol type "consumer", policy upgrade or
bidirectional, at most group.consumer.max.size members. Parked JoinGroup/SyncGroup requests
are answered REBALANCE_IN_PROGRESS, the classic group metadata gets a tombstone, and a
consumer group takes its place (`consumer_group_from_classic`, Kafka's
ConsumerGroup.fromClassicGroup): group epoch = assignment epoch = the classic generation; each
member keeps its id, instance id, client, timeouts and becomes a classic member (STABLE at that
epoch) whose subscription and rack are decoded from its JoinGroup metadata and whose current
and target assignment is its SyncGroup assignment (topics that no longer exist dropped). The
consumer group records are written (member metadata with the classic tag, group epoch, target
members, target epoch, current assignments) and each member's session timer starts with its
classic session timeout. The heartbeat that triggered it then joins as usual: its subscription
moves the group epoch and a new target is computed -- the rebalance; the classic members learn
it from REBALANCE_IN_PROGRESS heartbeats (`classic_members.py`). A subscription or assignment
that does not decode, an assignment with user data (a custom assignor's), another protocol
type, too many members or the policy: GROUP_ID_NOT_FOUND "Cannot upgrade classic group <id>
to consumer group because ..." (Kafka 4.4's texts), the group stays classic.

Downgrade (`Migration.downgrade`, Kafka's convertToClassicGroup): when the members fenced or
leaving are the last ones using the consumer protocol, others remain, the policy is downgrade
or bidirectional and the rest fit group.max.size. The consumer group's records get tombstones
(current assignments, target members, target epoch, member metadata, regular expressions,
group epoch) and a classic group takes its place (`classic_group_from_consumer`, Kafka's
ClassicGroup.fromConsumerGroup): Stable at generation = the group epoch, protocol type
"consumer", every remaining member with its JoinGroup protocols and session timeout, the
protocol every member supports, the first member as leader, each member's assignment its target
encoded in its subscription's version. Its group metadata record is written, the members'
sessions restart and a rebalance begins (PreparingRebalance): the members rejoin.

Downgrade at a join (`Migration.can_downgrade_replacing`, Kafka's
validateOnlineDowngradeWithReplacedMember, called by classic_members.py): a static classic
member joining without a member id in place of the last consumer-protocol member (policy
downgrade or bidirectional, at most group.max.size members). The join is served in the
consumer group first, then the group becomes a classic group as above with the joining member
in it; it rebalances only when the join moved the group epoch past the assignment (Kafka 4.4:
"... with stale assignment."), else it is Stable and the JoinGroup answer stands.
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from construct import ConstructError

from protocol.consumer_group_records import ClassicMemberMetadata
from protocol.errors import ErrorCode
from protocol.exceptions import MalformedRequest
from protocol.messages import consumer_protocol_assignment as wire_assignment
from protocol.messages import consumer_protocol_subscription as wire_subscription
from wirebroker.group.classic import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    ClassicGroupMember,
    GroupState,
)
from wirebroker.group.consumer.messages import HeartbeatError, TopicLookup
from wirebroker.group.consumer.model import (
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicKey,
    freeze,
)
from wirebroker.group.consumer.records import ConsumerRecords
from wirebroker.group.effects import Effects
from wirebroker.group.rebalance import Rebalancer
from wirebroker.group.records import group_metadata_record
from wirebroker.group.state import CoordinatorState

log = logging.getLogger("wirebroker.group")

#: topic id -> its name, or None when the topic is gone
TopicNameOf = Callable[[uuid.UUID], "str | None"]
_MAX_VERSION = 3


class MigrationPolicy(enum.StrEnum):
    DISABLED = "disabled"
    DOWNGRADE = "downgrade"
    UPGRADE = "upgrade"
    BIDIRECTIONAL = "bidirectional"

    @classmethod
    def parse(cls, value: str) -> MigrationPolicy:
        return cls(value.strip().lower())

    @property
    def upgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.UPGRADE, MigrationPolicy.BIDIRECTIONAL)

    @property
    def downgrade_enabled(self) -> bool:
        return self in (MigrationPolicy.DOWNGRADE, MigrationPolicy.BIDIRECTIONAL)


class MalformedProtocol(ValueError):
    """Embedded consumer protocol bytes that do not decode (Kafka's SchemaException)."""


class CustomAssignorData(ValueError):
    """An assignment carrying user data (a custom assignor's), which a consumer group would
    lose: Kafka 4.4 refuses the upgrade."""


# -- the embedded consumer protocol ---------------------------------------------------------


@dataclass(frozen=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    #: topic name -> partitions the member says it owns (v1+)
    owned: Mapping[str, frozenset[int]]
    rack_id: str | None


def _parse(schema_of: Callable[[int], Any], data: bytes, what: str) -> tuple[int, Any]:
    if len(data) < 2:
        raise MalformedProtocol(f"{what}: {len(data)} bytes")
    version = int.from_bytes(data[:2], "big", signed=True)
    if version < 0:
        raise MalformedProtocol(f"Unsupported {what} version: {version}")
    try:
        return version, schema_of(min(version, _MAX_VERSION)).parse(data[2:])
    except (ConstructError, MalformedRequest, UnicodeDecodeError) as e:
        raise MalformedProtocol(f"{what}: {e}") from None


def decode_subscription(metadata: bytes) -> Subscription:
    version, parsed = _parse(wire_subscription.schema, metadata, "subscription")
    owned: dict[str, frozenset[int]] = {}
    for tp in parsed.get("owned_partitions") or ():
        owned[str(tp.topic)] = owned.get(str(tp.topic), frozenset()) | frozenset(tp.partitions)
    return Subscription(
        version,
        tuple(str(t) for t in parsed.topics),
        owned,
        parsed.get("rack_id"),
    )


def subscription_version(metadata: bytes) -> int:
    """The version of a subscription (what its member's assignment is encoded in)."""
    if len(metadata) < 2:
        raise MalformedProtocol(f"subscription: {len(metadata)} bytes")
    version = int.from_bytes(metadata[:2], "big", signed=True)
    if version < 0:
        raise MalformedProtocol(f"Unsupported subscription version: {version}")
    return min(version, _MAX_VERSION)


def decode_assignment(data: bytes, *, strict: bool = False) -> dict[str, frozenset[int]]:
    """The partitions of a SyncGroup assignment by topic name (empty bytes: none);
    `strict`: raise CustomAssignorData when it carries user data."""
    if not data:
        return {}
    _, parsed = _parse(wire_assignment.schema, data, "assignment")
    if strict and parsed.user_data:
        raise CustomAssignorData("userData from a custom assignor would be lost")
    out: dict[str, frozenset[int]] = {}
    for tp in parsed.assigned_partitions:
        out[str(tp.topic)] = out.get(str(tp.topic), frozenset()) | frozenset(tp.partitions)
    return out


def encode_assignment(partitions: Mapping[str, Iterable[int]], version: int) -> bytes:
    version = max(0, min(version, _MAX_VERSION))
    body = wire_assignment.schema(version).build(
        {
            "assigned_partitions": [
                {"topic": t, "partitions": sorted(ps)} for t, ps in sorted(partitions.items())
            ],
            "user_data": None,
        }
    )
    return version.to_bytes(2, "big") + bytes(body)


def to_ids(partitions: Mapping[str, frozenset[int]], lookup: TopicLookup) -> Assignment:
    """By topic id; topics that do not exist are dropped (Kafka's topicPartitionMapFromList)."""
    out: dict[TopicKey, frozenset[int]] = {}
    for name, ps in partitions.items():
        found = lookup(name)
        if found is not None:
            out[found[0]] = out.get(found[0], frozenset()) | ps
    return freeze(out)


def to_names(assignment: Assignment, name_of: TopicNameOf) -> dict[str, frozenset[int]]:
    out: dict[str, frozenset[int]] = {}
    for tid, ps in assignment.items():
        name = name_of(tid)
        if name is not None and ps:
            out[name] = ps
    return out


# -- the conversions ------------------------------------------------------------------------


def consumer_group_from_classic(classic: ClassicGroup, lookup: TopicLookup) -> ConsumerGroup:
    """The consumer group a classic group becomes (raises `MalformedProtocol`)."""
    epoch = classic.generation_id
    group = ConsumerGroup(classic.group_id, group_epoch=epoch, assignment_epoch=epoch)
    for cm in classic.members.values():
        subscription = decode_subscription(cm.metadata(classic.protocol_name))
        assigned = to_ids(decode_assignment(cm.assignment, strict=True), lookup)
        member = ConsumerMember(
            cm.member_id,
            member_epoch=epoch,
            previous_member_epoch=epoch,
            state=MemberState.STABLE,
            instance_id=cm.group_instance_id,
            rack_id=subscription.rack_id,
            client_id=cm.client_id,
            client_host=cm.client_host,
            rebalance_timeout_ms=cm.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            assigned=assigned,
            classic=ClassicMemberMetadata(cm.session_timeout_ms, tuple(cm.protocols)),
        )
        group.target[cm.member_id] = assigned
        group.put_member(member)
    return group


def classic_group_from_consumer(
    group: ConsumerGroup, leaving: set[str], name_of: TopicNameOf, now_ms: int
) -> ClassicGroup:
    """The classic group a consumer group becomes without `leaving` (raises
    `MalformedProtocol`); Stable, its members' assignments their targets."""
    classic = ClassicGroup(
        group.group_id,
        state=GroupState.STABLE,
        previous_state=GroupState.COMPLETING_REBALANCE,
        current_state_timestamp=now_ms,
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        generation_id=group.group_epoch,
    )
    for mid, m in group.members.items():
        if mid in leaving or m.classic is None:
            continue
        classic.add(
            ClassicGroupMember(
                mid,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.classic.session_timeout_ms,
                CONSUMER_PROTOCOL_TYPE,
                tuple(m.classic.supported_protocols),
            )
        )
    classic.protocol_name = classic.select_protocol()
    classic.subscribed_topics = classic.compute_subscribed_topics()
    for cm in classic.members.values():
        version = subscription_version(cm.metadata(classic.protocol_name))
        target = to_names(group.target.get(cm.member_id, {}), name_of)
        cm.assignment = encode_assignment(target, version)
    return classic


class Migration:
    """The two conversions over the coordinator's state (see the module docstring)."""

    def __init__(
        self,
        state: CoordinatorState,
        records: ConsumerRecords,
        rebalancer: Rebalancer,
        start_session: Callable[[int, ConsumerGroup, ConsumerMember], None],
    ) -> None:
        self.state = state
        self.records = records
        self.rebalancer = rebalancer
        self.start_session = start_session

    @property
    def policy(self) -> MigrationPolicy:
        return MigrationPolicy.parse(self.state.config.consumer_migration_policy)

    def upgrade(
        self, classic: ClassicGroup, lookup: TopicLookup, fx: Effects, now_ms: int
    ) -> ConsumerGroup:
        """The consumer group `classic` becomes, or HeartbeatError(GROUP_ID_NOT_FOUND)."""
        gid = classic.group_id
        refusal = self._upgrade_refusal(classic)
        if refusal is None:
            try:
                group = consumer_group_from_classic(classic, lookup)
            except (MalformedProtocol, KeyError):
                refusal = "because the embedded consumer protocol is malformed."
            except CustomAssignorData:
                refusal = (
                    "because an unsupported custom assignor is in use. Please refer to the "
                    "documentation or switch to a default assignor before re-attempting the "
                    "upgrade."
                )
        if refusal is not None:
            raise HeartbeatError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {gid} to consumer group {refusal}",
            )
        classic.complete_all_parked(ErrorCode.REBALANCE_IN_PROGRESS, fx.completions)
        del self.state.groups[gid]
        self.state.cancel_group_timers(gid)
        self.records.classic_group_removed(fx, gid)
        self.state.consumer_groups[gid] = group
        self.records.created(fx, group)
        for member in group.members.values():
            self.start_session(now_ms, group, member)
        log.info("upgraded classic group %s to a consumer group (epoch %d)", gid, group.group_epoch)
        return group

    def _upgrade_refusal(self, classic: ClassicGroup) -> str | None:
        """Kafka 4.4's validateOnlineUpgrade, its reasons in its order."""
        if not self.policy.upgrade_enabled:
            return "because online upgrade is disabled."
        if not classic.uses_consumer_protocol():
            return "because the group does not use the consumer embedded protocol."
        if len(classic.members) > self.state.config.consumer_max_size:
            return "because the group size exceeds the consumer group maximum size."
        return None

    def can_downgrade(self, group: ConsumerGroup, leaving: set[str]) -> bool:
        """Kafka's validateOnlineDowngradeWithFencedMembers."""
        remaining = len(group.members) - len(leaving & set(group.members))
        return (
            group.all_classic_except(leaving)
            and remaining > 0
            and self.policy.downgrade_enabled
            and remaining <= self.state.config.max_group_size
        )

    def can_downgrade_replacing(self, group: ConsumerGroup, replaced: str) -> bool:
        """Kafka's validateOnlineDowngradeWithReplacedMember: a static classic member taking
        the place of `replaced`, the last member using the consumer protocol."""
        member = group.members.get(replaced)
        return (
            member is not None
            and not member.uses_classic
            and group.all_classic_except({replaced})
            and self.policy.downgrade_enabled
            and len(group.members) <= self.state.config.max_group_size
        )

    def downgrade(
        self,
        group: ConsumerGroup,
        leaving: set[str],
        fx: Effects,
        now_ms: int,
        *,
        rebalance: bool = True,
    ) -> bool:
        """Replace `group` by a classic group without `leaving` and, with `rebalance`, start
        its rebalance (False, nothing changed: a member's protocol does not decode)."""
        gid = group.group_id
        name_of = _names(group, self.state.topics.name_of)
        try:
            classic = classic_group_from_consumer(group, leaving, name_of, now_ms)
        except (MalformedProtocol, KeyError, ValueError) as e:
            log.warning("cannot downgrade consumer group %s: %s", gid, e)
            return False
        self.records.removed(fx, group)
        del self.state.consumer_groups[gid]
        self.state.cancel_group_timers(gid)
        self.state.groups[gid] = classic
        fx.records.append(
            group_metadata_record(self.state.partition_for(gid), classic, classic.assignments())
        )
        for member in classic.members.values():
            self.rebalancer.renew_session(gid, member, now_ms)
        if rebalance:
            self.rebalancer.prepare_rebalance(classic, fx, now_ms)
        log.info(
            "downgraded consumer group %s to a classic group (generation %d)",
            gid,
            classic.generation_id,
        )
        return True


def _names(group: ConsumerGroup, name_of: TopicNameOf) -> TopicNameOf:
    """`name_of`, with the group's own topic metadata first."""
    known = {tid: name for name, (tid, _) in group.metadata.items()}

    def lookup(topic_id: uuid.UUID) -> str | None:
        return known.get(topic_id) or name_of(topic_id)

    return lookup
