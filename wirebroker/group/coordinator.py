"""The group coordinator's pure core: classic groups and committed offsets.

Sans-I/O (no trio, never awaits, takes `now_ms`), following Kafka's `GroupMetadataManager`
(classic-group parts), `OffsetMetadataManager`, `GroupCoordinatorShard` and the checks of
`GroupCoordinatorService`. The group states and what each request does in them are tabled in
`wirebroker.group.classic`; the effect contract (responses, parked requests, records to append
before answering) in `wirebroker.group.effects`.

Driving it (the trio runtime's job):
- JoinGroup / SyncGroup take a runtime-chosen `key`; their answer arrives as a
  `Completion(key, response)` -- in the same call's `Result.completions` or in a later one's.
- Every other API returns `Result.response` at once (read-only APIs return the dict).
- After every call, `next_deadline()` is the time to call `tick(now_ms)`, which runs due
  timers: session expiry (pending and real members), join phase completion (rebalance
  timeout, group.initial.rebalance.delay.ms), sync expiry, offset expiry.
- Loading: `begin_loading(partitions)`, `replay(key, value)` for every record of those
  `__consumer_offsets` partitions in log order, `complete_loading(now_ms, partitions)`.
  Until the first `complete_loading` every group request gets COORDINATOR_NOT_AVAILABLE;
  afterwards a partition being (re)loaded answers COORDINATOR_LOAD_IN_PROGRESS and a
  partition this core does not own NOT_COORDINATOR (Kafka's runtime errors).

Where the core is not Kafka (on purpose):
- Group state changes are applied when the call returns; the records are appended by the
  runtime before any response goes out (Kafka waits for the append, then applies). See
  `effects` for what to do when an append fails.
- TxnOffsetCommit / transactional offsets, the new consumer protocol (KIP-848), share and
  streams groups are not implemented; their records are skipped on replay.
- Topic existence (UNKNOWN_TOPIC_OR_PARTITION in OffsetCommit) and authorization are the
  handlers' business; OffsetCommit/OffsetFetch v10 topic ids are mapped to names there too.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from protocol.errors import ErrorCode
from protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupRecordError,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from wirebroker.group.classic import (
    ClassicGroup,
    ClassicGroupMember,
    GroupState,
    JoinAnswer,
    Protocols,
    protocol_names,
    protocols_tuple,
)
from wirebroker.group.config import GroupConfig
from wirebroker.group.effects import (
    Completion,
    Parked,
    Record,
    Response,
    Result,
    join_response,
    sync_response,
)
from wirebroker.group.offsets import OffsetAndMetadata, OffsetStore, java_string_length
from wirebroker.group.partitioning import partition_for
from wirebroker.group.timers import Timers

AUTHORIZED_OPERATIONS_OMITTED = -2147483648
GROUP_TYPE_CLASSIC = "classic"
_KNOWN_GROUP_TYPES = {"classic", "consumer", "share", "streams"}


# -- request inputs (decoded request fields the handlers pass in) ---------------------------


class LeaveMember(NamedTuple):
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


class CommitPartition(NamedTuple):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


class CommitTopic(NamedTuple):
    name: str
    partitions: Sequence[CommitPartition]


class TopicPartitions(NamedTuple):
    name: str
    partition_indexes: Sequence[int]


class PartitionStatus(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"


@dataclass(frozen=True)
class _JoinRequest:
    parked: Parked
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str

    @property
    def api_version(self) -> int:
        return self.parked.api_version


class _Fx:
    """Effects collected during one core call."""

    __slots__ = ("completions", "records")

    def __init__(self) -> None:
        self.completions: list[Completion] = []
        self.records: list[Record] = []

    def result(self, response: Response | None = None) -> Result:
        return Result(response=response, completions=self.completions, records=self.records)


TimerAction = Callable[[int, _Fx], None]


def _hb_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("hb", group_id, member_id)


def _join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def _sync_key(group_id: str) -> tuple[str, str]:
    return ("sync", group_id)


_EXPIRE_KEY = ("expire",)


class GroupCoordinatorCore:
    def __init__(
        self,
        config: GroupConfig | None = None,
        *,
        member_id_suffix: Callable[[], str] | None = None,
    ) -> None:
        self.config = config or GroupConfig()
        self._groups: dict[str, ClassicGroup] = {}
        self._offsets = OffsetStore()
        self._timers: Timers[TimerAction] = Timers()
        self._partitions: dict[int, PartitionStatus] = {}
        self._active = False
        self._suffix = member_id_suffix or (lambda: str(uuid.uuid4()))

    # == introspection =====================================================================
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    def group(self, group_id: str) -> ClassicGroup | None:
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        return list(self._groups)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetAndMetadata]:
        return {(t, p): v for t, p, v in self._offsets.entries(group_id)}

    def next_deadline(self) -> int | None:
        """When the runtime should call `tick` next (None: no timer pending)."""
        return self._timers.next_deadline()

    def coordinator_error(self, group_id: str) -> ErrorCode:
        """NONE when this core serves `group_id` now, else the error to answer with."""
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        status = self._partitions.get(self.partition_for(group_id))
        if status is None:
            return ErrorCode.NOT_COORDINATOR
        if status is PartitionStatus.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def request_error(self, group_id: str) -> ErrorCode:
        """The checks every group request starts with, in Kafka's order: an inactive
        coordinator, an empty group id, then `coordinator_error`."""
        if not self._active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group_id == "":
            return ErrorCode.INVALID_GROUP_ID
        return self.coordinator_error(group_id)

    # == loading ===========================================================================
    def _all_partitions(self, partitions: Iterable[int] | None) -> list[int]:
        if partitions is None:
            return list(range(self.config.num_partitions))
        return list(partitions)

    def begin_loading(self, partitions: Iterable[int] | None = None) -> Result:
        """Start (re)loading `partitions` (all when None): their state is dropped (requests
        still parked there are answered NOT_COORDINATOR) and rebuilt by `replay`; requests
        for their groups get COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
        fx = _Fx()
        parts = self._all_partitions(partitions)
        self._drop_state(set(parts), fx)
        for p in parts:
            self._partitions[p] = PartitionStatus.LOADING
        return fx.result()

    def complete_loading(self, now_ms: int, partitions: Iterable[int] | None = None) -> Result:
        """Finish loading: start the session timers of every loaded member (Kafka's
        `onLoaded`) and serve the partitions."""
        fx = _Fx()
        parts = set(self._all_partitions(partitions))
        for p in parts:
            self._partitions[p] = PartitionStatus.ACTIVE
        self._active = True
        for group in list(self._groups.values()):
            if self.partition_for(group.group_id) not in parts:
                continue
            for m in group.members.values():
                self._schedule_heartbeat(group.group_id, m.member_id, now_ms + m.session_timeout_ms)
            if len(group.members) > self.config.max_group_size:
                self._prepare_rebalance(group, fx, now_ms)
        if _EXPIRE_KEY not in self._timers:
            self._schedule_expiration(now_ms)
        return fx.result()

    def unload(self, partitions: Iterable[int] | None = None) -> Result:
        """Stop serving `partitions` (all when None): parked requests of their groups are
        answered with NOT_COORDINATOR and their state is dropped."""
        fx = _Fx()
        parts = set(self._all_partitions(partitions))
        self._drop_state(parts, fx)
        for p in parts:
            self._partitions.pop(p, None)
        return fx.result()

    def shutdown(self) -> Result:
        """Unload everything; later requests get COORDINATOR_NOT_AVAILABLE."""
        result = self.unload(list(self._partitions) or None)
        self._active = False
        self._timers.cancel(_EXPIRE_KEY)
        return result

    def _drop_state(self, parts: set[int], fx: _Fx) -> None:
        for group_id in list(self._groups):
            if self.partition_for(group_id) in parts:
                group = self._groups.pop(group_id)
                group.complete_all_parked(ErrorCode.NOT_COORDINATOR, fx.completions)
                self._cancel_group_timers(group_id)
        for group_id in self._offsets.groups():
            if self.partition_for(group_id) in parts:
                self._offsets.remove_group(group_id)

    # == replay ============================================================================
    def replay(self, key: bytes, value: bytes | None) -> bool:
        """Apply one `__consumer_offsets` record (False: a record type this core ignores).

        Only for partitions being loaded (`begin_loading`): records the core emitted itself
        are already applied. Raises `GroupRecordError` on bytes that do not decode."""
        k = decode_key(key)
        if isinstance(k, OffsetCommitKey | GroupMetadataKey) and (
            self._partitions.get(self.partition_for(k.group)) is not PartitionStatus.LOADING
        ):
            raise RuntimeError(f"replay for group {k.group!r} outside begin_loading")
        if isinstance(k, OffsetCommitKey):
            if value is None:
                self._offsets.remove(k.group, k.topic, k.partition)
            else:
                self._apply_offset(k.group, k.topic, k.partition, decode_offset_commit_value(value))
            return True
        if isinstance(k, GroupMetadataKey):
            if value is None:
                self._remove_group(k.group)
            else:
                self._load_group(k.group, decode_group_metadata_value(value))
            return True
        return False

    def _apply_offset(
        self, group_id: str, topic: str, partition: int, v: OffsetCommitValue
    ) -> None:
        if group_id not in self._groups:
            # Offsets committed without membership: a "simple" group holds them.
            self._groups[group_id] = ClassicGroup(group_id)
        self._offsets.put(
            group_id,
            topic,
            partition,
            OffsetAndMetadata(
                committed_offset=v.offset,
                leader_epoch=v.leader_epoch,
                metadata=v.metadata,
                commit_timestamp_ms=v.commit_timestamp,
                expire_timestamp_ms=None if v.expire_timestamp == -1 else v.expire_timestamp,
            ),
        )

    def _load_group(self, group_id: str, v: GroupMetadataValue) -> None:
        group = ClassicGroup(
            group_id,
            state=GroupState.STABLE if v.members else GroupState.EMPTY,
            previous_state=GroupState.DEAD,
            current_state_timestamp=(
                None if v.current_state_timestamp == -1 else v.current_state_timestamp
            ),
            protocol_type=v.protocol_type or None,
            protocol_name=v.protocol,
            generation_id=v.generation,
            leader_id=v.leader,
        )
        try:
            for m in v.members:
                group.add(
                    ClassicGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        rebalance_timeout_ms=(
                            m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout
                        ),
                        session_timeout_ms=m.session_timeout,
                        protocol_type=v.protocol_type,
                        protocols=((v.protocol or "", m.subscription),),
                        assignment=m.assignment,
                    )
                )
        except ValueError as exc:
            raise GroupRecordError(f"inconsistent group metadata for {group_id}: {exc}") from None
        group.subscribed_topics = group.compute_subscribed_topics()
        old = self._groups.get(group_id)
        if old is not None:
            self._cancel_group_timers(group_id)
        self._groups[group_id] = group

    def _remove_group(self, group_id: str) -> None:
        group = self._groups.pop(group_id, None)
        if group is not None and group.state is not GroupState.DEAD:
            group.transition_to(GroupState.DEAD, group.state_timestamp_or_default())
        self._cancel_group_timers(group_id)

    # == timers ============================================================================
    def tick(self, now_ms: int) -> Result:
        """Run every timer due at `now_ms`."""
        fx = _Fx()
        while (due := self._timers.pop_due(now_ms)) is not None:
            _, action = due
            action(now_ms, fx)
        return fx.result()

    def _cancel_group_timers(self, group_id: str) -> None:
        self._timers.cancel_where(
            lambda k: isinstance(k, tuple) and len(k) >= 2 and k[1] == group_id
        )

    def _schedule_heartbeat(self, group_id: str, member_id: str, deadline_ms: int) -> None:
        def expire(now_ms: int, fx: _Fx) -> None:
            self._expire_heartbeat(group_id, member_id, fx, now_ms)

        self._timers.schedule(_hb_key(group_id, member_id), deadline_ms, expire)

    def _schedule_expiration(self, now_ms: int) -> None:
        self._timers.schedule(
            _EXPIRE_KEY, now_ms + self.config.offsets_retention_check_interval_ms, self._cleanup
        )

    # == records ===========================================================================
    def _record(self, group_id: str, key: bytes, value: bytes | None) -> Record:
        return Record(self.partition_for(group_id), key, value)

    def _group_metadata_record(self, group: ClassicGroup, assignment: dict[str, bytes]) -> Record:
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
        return self._record(
            group.group_id,
            encode_group_metadata_key(group.group_id),
            encode_group_metadata_value(value),
        )

    def _empty_group_metadata_record(self, group: ClassicGroup) -> Record:
        value = GroupMetadataValue(
            protocol_type="",
            generation=0,
            protocol=None,
            leader=None,
            current_state_timestamp=group.state_timestamp_or_default(),
        )
        return self._record(
            group.group_id,
            encode_group_metadata_key(group.group_id),
            encode_group_metadata_value(value),
        )

    def _offset_tombstone(self, group_id: str, topic: str, partition: int, fx: _Fx) -> None:
        fx.records.append(
            self._record(group_id, encode_offset_commit_key(group_id, topic, partition), None)
        )
        self._offsets.remove(group_id, topic, partition)

    def _delete_group(self, group: ClassicGroup, fx: _Fx, now_ms: int) -> None:
        gid = group.group_id
        for topic, partition, _ in self._offsets.entries(gid):
            self._offset_tombstone(gid, topic, partition, fx)
        fx.records.append(self._record(gid, encode_group_metadata_key(gid), None))
        group.transition_to(GroupState.DEAD, now_ms)
        del self._groups[gid]
        self._cancel_group_timers(gid)

    # == JoinGroup =========================================================================
    def join_group(
        self,
        key: Hashable,
        now_ms: int,
        *,
        api_version: int,
        group_id: str,
        member_id: str,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int = -1,
        group_instance_id: str | None = None,
        client_id: str = "",
        client_host: str = "",
        reason: str | None = None,
    ) -> Result:
        """JoinGroup v0-9. The answer comes as `Completion(key, ...)`, possibly later."""
        del reason  # only logged by Kafka
        fx = _Fx()
        parked = Parked(key, api_version)

        def fail(error: ErrorCode, mid: str = member_id) -> Result:
            fx.completions.append(
                Completion(key, join_response(api_version, error=error, member_id=mid))
            )
            return fx.result()

        # Kafka's order: coordinator inactive, group id, session timeout, then the
        # partition's state (not ours / loading).
        if not self._active:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group_id == "":
            return fail(ErrorCode.INVALID_GROUP_ID)
        cfg = self.config
        if not cfg.min_session_timeout_ms <= session_timeout_ms <= cfg.max_session_timeout_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        err = self.coordinator_error(group_id)
        if err is not ErrorCode.NONE:
            return fail(err)
        if api_version == 0 or rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms  # v0 has no rebalance timeout
        req = _JoinRequest(
            parked=parked,
            member_id=member_id,
            group_instance_id=group_instance_id,
            protocol_type=protocol_type,
            protocols=protocols_tuple(protocols),
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            client_id=client_id,
            client_host=client_host,
        )
        is_unknown = member_id == ""
        group = self._groups.get(group_id)
        is_new_group = group is None
        if group is None:
            if not is_unknown:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            group = ClassicGroup(group_id, current_state_timestamp=now_ms)
            self._groups[group_id] = group

        if not self._accept_joining_member(group, member_id):
            self._remove_member(group, member_id, fx)
            fail(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        elif is_unknown:
            self._join_new_member(group, req, fx, now_ms)
        else:
            self._join_existing_member(group, req, fx, now_ms)

        if is_new_group and not fx.records:
            # Persist the new group so it survives a restart (Kafka does the same).
            fx.records.append(self._empty_group_metadata_record(group))
        return fx.result()

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.max_group_size
        if group.is_in(GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.is_in(GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join is not None) or (
                group.num_awaiting_join < max_size
            )
        return member_id in group.members or len(group.members) < max_size

    def _join_new_member(
        self, group: ClassicGroup, req: _JoinRequest, fx: _Fx, now_ms: int
    ) -> None:
        if group.is_in(GroupState.DEAD):
            self._answer_join(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, "", fx)
            return
        if not group.supports_protocols(req.protocol_type, protocol_names(req.protocols)):
            self._answer_join(req, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "", fx)
            return
        new_member_id = f"{req.group_instance_id or req.client_id}-{self._suffix()}"
        if req.group_instance_id is not None:
            existing = group.static_members.get(req.group_instance_id)
            if existing is not None:
                self._update_static_member(group, req, existing, new_member_id, fx, now_ms)
            else:
                self._add_member_then_rebalance(group, req, new_member_id, fx, now_ms)
        elif req.api_version >= 4:
            # v4+: hand out the member id first; the member joins with it in a second request.
            group.pending_join_members.add(new_member_id)
            self._schedule_heartbeat(group.group_id, new_member_id, now_ms + req.session_timeout_ms)
            self._answer_join(req, ErrorCode.MEMBER_ID_REQUIRED, new_member_id, fx)
        else:
            self._add_member_then_rebalance(group, req, new_member_id, fx, now_ms)

    def _join_existing_member(
        self, group: ClassicGroup, req: _JoinRequest, fx: _Fx, now_ms: int
    ) -> None:
        mid = req.member_id
        if group.is_in(GroupState.DEAD):
            self._answer_join(req, ErrorCode.COORDINATOR_NOT_AVAILABLE, mid, fx)
            return
        if not group.supports_protocols(req.protocol_type, protocol_names(req.protocols)):
            self._answer_join(req, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, mid, fx)
            return
        if group.is_pending_member(mid):
            if req.group_instance_id is not None:
                # Kafka fails this with an internal error: pending members are dynamic.
                self._answer_join(req, ErrorCode.UNKNOWN, mid, fx)
                return
            self._add_member_then_rebalance(group, req, mid, fx, now_ms)
            return
        err = group.validate_member(mid, req.group_instance_id)
        if err is not ErrorCode.NONE:
            self._answer_join(req, err, mid, fx)
            return
        member = group.members[mid]
        if group.is_in(GroupState.PREPARING_REBALANCE):
            self._update_member_then_rebalance(group, member, req, fx, now_ms)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # Same metadata (the member probably missed the answer): current generation.
                self._answer_join_current(group, req, mid, group.is_leader(mid), fx)
            else:
                self._update_member_then_rebalance(group, member, req, fx, now_ms)
        elif group.is_in(GroupState.STABLE):
            if group.is_leader(mid) or not member.matches(req.protocols):
                # The leader's JoinGroup forces a rebalance (e.g. topic metadata changed).
                self._update_member_then_rebalance(group, member, req, fx, now_ms)
            else:
                self._answer_join_current(group, req, mid, False, fx)
        else:
            self._answer_join(req, ErrorCode.UNKNOWN_MEMBER_ID, mid, fx)

    def _answer_join(self, req: _JoinRequest, error: ErrorCode, member_id: str, fx: _Fx) -> None:
        fx.completions.append(
            Completion(
                req.parked.key, join_response(req.api_version, error=error, member_id=member_id)
            )
        )

    def _answer_join_current(
        self, group: ClassicGroup, req: _JoinRequest, member_id: str, with_members: bool, fx: _Fx
    ) -> None:
        fx.completions.append(
            Completion(
                req.parked.key,
                join_response(
                    req.api_version,
                    member_id=member_id,
                    generation_id=group.generation_id,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    leader=group.leader_id or "",
                    members=group.join_members_list() if with_members else [],
                ),
            )
        )

    def _update_member_then_rebalance(
        self,
        group: ClassicGroup,
        member: ClassicGroupMember,
        req: _JoinRequest,
        fx: _Fx,
        now_ms: int,
    ) -> None:
        group.update_member(
            member,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.parked,
            fx.completions,
        )
        self._maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)

    def _add_member_then_rebalance(
        self, group: ClassicGroup, req: _JoinRequest, member_id: str, fx: _Fx, now_ms: int
    ) -> None:
        member = ClassicGroupMember(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=req.protocols,
            is_new=True,
        )
        if group.is_in(GroupState.PREPARING_REBALANCE) and (
            group.previous_state is GroupState.EMPTY
        ):
            group.new_member_added = True  # lets the initial rebalance wait a bit longer
        group.add(member, req.parked)
        # A new member cannot heartbeat while its JoinGroup is parked; if its client gave up
        # it would linger, so the join itself expires after new_member_join_timeout_ms.
        self._schedule_heartbeat(
            group.group_id, member_id, now_ms + self.config.new_member_join_timeout_ms
        )
        self._maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)

    def _update_static_member(
        self,
        group: ClassicGroup,
        req: _JoinRequest,
        old_member_id: str,
        new_member_id: str,
        fx: _Fx,
        now_ms: int,
    ) -> None:
        assert req.group_instance_id is not None
        current_leader = group.leader_id
        member = group.replace_static_member(
            req.group_instance_id, old_member_id, new_member_id, fx.completions
        )
        self._timers.cancel(_hb_key(group.group_id, old_member_id))
        self._schedule_heartbeat(group.group_id, new_member_id, now_ms + member.session_timeout_ms)
        group.update_member(
            member,
            req.protocols,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.parked,
            fx.completions,
        )
        if group.is_in(GroupState.STABLE):
            if group.protocol_name == group.select_protocol():
                # Restarted static member, same protocol: no rebalance, just persist the new
                # member id (the runtime appends the record before answering).
                fx.records.append(self._group_metadata_record(group, group.assignments()))
                if req.api_version >= 9:
                    is_leader = group.is_leader(new_member_id)

                    def answer(v: int) -> Response:
                        return join_response(
                            v,
                            member_id=new_member_id,
                            generation_id=group.generation_id,
                            protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name,
                            leader=group.leader_id or "",
                            skip_assignment=is_leader,
                            members=group.join_members_list() if is_leader else [],
                        )
                else:
                    # Before v9 the old leader id is returned, so a restarted leader acts as
                    # a follower and does not recompute the assignment.
                    def answer(v: int) -> Response:
                        return join_response(
                            v,
                            member_id=new_member_id,
                            generation_id=group.generation_id,
                            protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name,
                            leader=current_leader or "",
                        )

                group.complete_join(member, answer, fx.completions)
            else:
                self._maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)
        elif group.is_in(GroupState.COMPLETING_REBALANCE):
            # The leader may already hold the old member id in its assignment: rebalance.
            self._prepare_rebalance(group, fx, now_ms)
        else:
            self._maybe_complete_join_phase(group, fx, now_ms)

    # -- join phase -------------------------------------------------------------------------
    def _maybe_prepare_rebalance_or_complete_join(
        self, group: ClassicGroup, fx: _Fx, now_ms: int
    ) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, fx, now_ms)
        else:
            self._maybe_complete_join_phase(group, fx, now_ms)

    def _prepare_rebalance(self, group: ClassicGroup, fx: _Fx, now_ms: int) -> None:
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            for m in group.members.values():
                m.assignment = b""
            self._propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS, fx, now_ms)
        group.pending_sync_members.clear()
        self._timers.cancel(_sync_key(group.group_id))
        initial = group.is_in(GroupState.EMPTY)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_rebalance(group.group_id, now_ms, delay, remaining)
        group.transition_to(GroupState.PREPARING_REBALANCE, now_ms)
        if not initial:
            self._maybe_complete_join_else_schedule(group, fx, now_ms)

    def _schedule_initial_rebalance(
        self, group_id: str, now_ms: int, delay: int, remaining: int
    ) -> None:
        def fire(t: int, fx: _Fx) -> None:
            group = self._groups.get(group_id)
            if group is None:
                return
            if group.new_member_added and remaining != 0:
                # More members arrived during the delay: wait again, within the budget.
                group.new_member_added = False
                new_delay = min(self.config.initial_rebalance_delay_ms, remaining)
                self._schedule_initial_rebalance(group_id, t, new_delay, max(remaining - delay, 0))
            else:
                self._complete_join(group, fx, t)

        self._timers.schedule(_join_key(group_id), now_ms + delay, fire)

    def _schedule_join_completion(self, group: ClassicGroup, now_ms: int) -> None:
        group_id = group.group_id

        def fire(t: int, fx: _Fx) -> None:
            g = self._groups.get(group_id)
            if g is not None:
                self._complete_join(g, fx, t)

        self._timers.schedule(_join_key(group_id), now_ms + group.rebalance_timeout_ms(), fire)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup, fx: _Fx, now_ms: int) -> None:
        if group.has_all_members_joined():
            self._complete_join(group, fx, now_ms)
        else:
            self._schedule_join_completion(group, now_ms)

    def _maybe_complete_join_phase(self, group: ClassicGroup, fx: _Fx, now_ms: int) -> None:
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        if group.previous_state is GroupState.EMPTY:
            return  # the initial rebalance completes only on its timer
        if group.has_all_members_joined():
            self._complete_join(group, fx, now_ms)

    def _complete_join(self, group: ClassicGroup, fx: _Fx, now_ms: int) -> None:
        self._timers.cancel(_join_key(group.group_id))
        if not group.is_in(GroupState.PREPARING_REBALANCE):
            return
        for m in group.not_yet_rejoined_members():
            if not m.is_static:
                self._remove_member(group, m.member_id, fx)
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout (sessions will expire).
            self._schedule_join_completion(group, now_ms)
            return
        group.init_next_generation(now_ms)
        if group.is_in(GroupState.EMPTY):
            fx.records.append(self._group_metadata_record(group, {}))
            return
        members_list = group.join_members_list()
        for m in list(group.members.values()):
            answer = self._generation_answer(group, m.member_id, members_list)
            group.complete_join(m, answer, fx.completions)
            self._schedule_heartbeat(group.group_id, m.member_id, now_ms + m.session_timeout_ms)
            m.is_new = False
            group.pending_sync_members.add(m.member_id)
        self._schedule_sync_expiration(group, now_ms)

    def _generation_answer(
        self, group: ClassicGroup, member_id: str, members_list: list[dict[str, object]]
    ) -> JoinAnswer:
        generation = group.generation_id
        protocol_type = group.protocol_type
        protocol_name = group.protocol_name
        leader = group.leader_id or ""
        members = members_list if leader == member_id else []

        def answer(v: int) -> Response:
            return join_response(
                v,
                member_id=member_id,
                generation_id=generation,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                leader=leader,
                members=members,
            )

        return answer

    def _schedule_sync_expiration(self, group: ClassicGroup, now_ms: int) -> None:
        group_id = group.group_id
        generation = group.generation_id

        def fire(t: int, fx: _Fx) -> None:
            g = self._groups.get(group_id)
            if g is None or g.generation_id != generation:
                return
            if g.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and (
                g.pending_sync_members
            ):
                for mid in list(g.pending_sync_members):
                    self._remove_member(g, mid, fx)
                self._prepare_rebalance(g, fx, t)

        self._timers.schedule(_sync_key(group_id), now_ms + group.rebalance_timeout_ms(), fire)

    # -- members leaving --------------------------------------------------------------------
    def _remove_member(self, group: ClassicGroup, member_id: str, fx: _Fx) -> None:
        """Drop a member (or pending member); anything it still has parked is answered with
        UNKNOWN_MEMBER_ID so no request waits forever."""
        member = group.members.get(member_id)
        if member is not None:
            group.complete_join(member, _unknown_member_answer, fx.completions)
            group.complete_sync(
                member, sync_response(error=ErrorCode.UNKNOWN_MEMBER_ID), fx.completions
            )
        group.remove(member_id)
        self._timers.cancel(_hb_key(group.group_id, member_id))

    def _expire_heartbeat(self, group_id: str, member_id: str, fx: _Fx, now_ms: int) -> None:
        group = self._groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return
        if group.is_pending_member(member_id):
            group.remove(member_id)
            if group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
                self._complete_join(group, fx, now_ms)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        self._remove_member(group, member_id, fx)
        if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)
        elif group.is_in(GroupState.PREPARING_REBALANCE) and group.has_all_members_joined():
            self._complete_join(group, fx, now_ms)

    # -- assignment propagation --------------------------------------------------------------
    def _propagate_assignment(
        self, group: ClassicGroup, error: ErrorCode, fx: _Fx, now_ms: int
    ) -> None:
        ok = error is ErrorCode.NONE
        for m in group.members.values():
            answered = group.complete_sync(
                m,
                sync_response(
                    error=error,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None,
                    assignment=m.assignment,
                ),
                fx.completions,
            )
            if answered:
                self._schedule_heartbeat(group.group_id, m.member_id, now_ms + m.session_timeout_ms)

    # == SyncGroup =========================================================================
    def sync_group(
        self,
        key: Hashable,
        now_ms: int,
        *,
        api_version: int,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        assignments: Sequence[tuple[str, bytes]] = (),
    ) -> Result:
        """SyncGroup v0-5. The answer comes as `Completion(key, ...)`, possibly later."""
        fx = _Fx()

        def fail(error: ErrorCode) -> Result:
            fx.completions.append(Completion(key, sync_response(error=error)))
            return fx.result()

        if api_version >= 5 and (protocol_type is None or protocol_name is None):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)  # checked first, in KafkaApis
        err = self.request_error(group_id)
        if err is not ErrorCode.NONE:
            return fail(err)
        group = self._groups.get(group_id)
        if group is None or group.is_in(GroupState.EMPTY):
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.DEAD):
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        err = group.validate_member(member_id, group_instance_id)
        if err is not ErrorCode.NONE:
            return fail(err)
        if generation_id != group.generation_id:
            return fail(ErrorCode.ILLEGAL_GENERATION)
        if _inconsistent(protocol_type, group.protocol_type) or _inconsistent(
            protocol_name, group.protocol_name
        ):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return fail(ErrorCode.REBALANCE_IN_PROGRESS)

        member = group.members[member_id]
        if group.is_in(GroupState.COMPLETING_REBALANCE):
            if member.awaiting_sync is not None:  # a retry: answer the superseded request
                group.complete_sync(
                    member, sync_response(error=ErrorCode.REBALANCE_IN_PROGRESS), fx.completions
                )
            member.awaiting_sync = Parked(key, api_version)
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                assignment = {mid: bytes(a) for mid, a in assignments}
                for m in group.members.values():
                    assignment.setdefault(m.member_id, b"")
                fx.records.append(self._group_metadata_record(group, assignment))
                for m in group.members.values():
                    m.assignment = assignment[m.member_id]
                self._propagate_assignment(group, ErrorCode.NONE, fx, now_ms)
                group.transition_to(GroupState.STABLE, now_ms)
            return fx.result()

        # Stable: hand out the current assignment.
        self._remove_pending_sync_member(group, member_id)
        fx.completions.append(
            Completion(
                key,
                sync_response(
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                ),
            )
        )
        return fx.result()

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or (
            not group.pending_sync_members
        ):
            self._timers.cancel(_sync_key(group.group_id))

    # == Heartbeat =========================================================================
    def heartbeat(
        self,
        now_ms: int,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
    ) -> Result:
        """Heartbeat v0-4."""

        def answer(error: ErrorCode) -> Result:
            return Result(response={"throttle_time_ms": 0, "error_code": int(error)})

        err = self.request_error(group_id)
        if err is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            return answer(ErrorCode.NONE)  # Kafka answers blindly while loading
        if err is not ErrorCode.NONE:
            return answer(err)
        group = self._groups.get(group_id)
        if group is None:
            return answer(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(GroupState.DEAD):
            return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        err = group.validate_member(member_id, group_instance_id)
        if err is not ErrorCode.NONE:
            return answer(err)
        if generation_id != group.generation_id:
            return answer(ErrorCode.ILLEGAL_GENERATION)
        if group.is_in(GroupState.EMPTY):
            return answer(ErrorCode.UNKNOWN_MEMBER_ID)
        member = group.members[member_id]
        self._schedule_heartbeat(group_id, member_id, now_ms + member.session_timeout_ms)
        if group.is_in(GroupState.PREPARING_REBALANCE):
            return answer(ErrorCode.REBALANCE_IN_PROGRESS)
        return answer(ErrorCode.NONE)

    # == LeaveGroup ========================================================================
    def leave_group(
        self,
        now_ms: int,
        *,
        api_version: int,
        group_id: str,
        member_id: str = "",
        members: Sequence[LeaveMember] | None = None,
    ) -> Result:
        """LeaveGroup v0-5: v0-2 name one `member_id`, v3+ a batch of `members` (member id
        and/or group.instance.id; an empty member id with an instance id removes that
        static member, as the admin client does)."""
        fx = _Fx()
        batch = api_version >= 3
        identities = list(members or []) if batch else [LeaveMember(member_id)]

        def top(error: ErrorCode) -> Result:
            body: Response = {"throttle_time_ms": 0, "error_code": int(error)}
            if batch:
                body["members"] = []
            return fx.result(body)

        err = self.request_error(group_id)
        if err is not ErrorCode.NONE:
            return top(err)
        group = self._groups.get(group_id)
        answers: list[tuple[LeaveMember, ErrorCode]] = []
        if group is None:
            answers = [(ident, ErrorCode.UNKNOWN_MEMBER_ID) for ident in identities]
        elif group.is_in(GroupState.DEAD):
            return top(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        else:
            for ident in identities:
                answers.append((ident, self._leave_one(group, ident, fx)))
            if any(e is ErrorCode.NONE for _, e in answers):
                if group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                    self._maybe_prepare_rebalance_or_complete_join(group, fx, now_ms)
                elif group.is_in(GroupState.PREPARING_REBALANCE):
                    self._maybe_complete_join_phase(group, fx, now_ms)
        if not batch:
            return top(answers[0][1])
        return fx.result(
            {
                "throttle_time_ms": 0,
                "error_code": 0,
                "members": [
                    {
                        "member_id": ident.member_id,
                        "group_instance_id": ident.group_instance_id,
                        "error_code": int(e),
                    }
                    for ident, e in answers
                ],
            }
        )

    def _leave_one(self, group: ClassicGroup, ident: LeaveMember, fx: _Fx) -> ErrorCode:
        if ident.member_id == "":
            iid = ident.group_instance_id
            if iid is not None and iid in group.static_members:
                self._remove_member(group, group.static_members[iid], fx)
                return ErrorCode.NONE
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_pending_member(ident.member_id):
            self._remove_member(group, ident.member_id, fx)
            return ErrorCode.NONE
        err = group.validate_member(ident.member_id, ident.group_instance_id)
        if err is ErrorCode.NONE:
            self._remove_member(group, ident.member_id, fx)
        return err

    # == OffsetCommit ======================================================================
    def commit_offsets(
        self,
        now_ms: int,
        *,
        api_version: int,
        group_id: str,
        topics: Sequence[CommitTopic],
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
        retention_time_ms: int = -1,
    ) -> Result:
        """OffsetCommit v2-10 (topics by name; v10 ids are resolved by the handler).

        `generation_id` -1 with no member id is a "simple" commit (admin client, consumers
        with manual assignment): accepted while the group is Empty, creating the group if
        needed. `retention_time_ms` (v2-4) other than -1 sets an explicit expire time."""
        fx = _Fx()

        def all_partitions(error: ErrorCode) -> Result:
            return fx.result(_commit_response(topics, lambda _p: error))

        err = self.coordinator_error(group_id)
        if err is not ErrorCode.NONE:
            return all_partitions(err)
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return all_partitions(
                    ErrorCode.GROUP_ID_NOT_FOUND
                    if api_version >= 9
                    else ErrorCode.ILLEGAL_GENERATION
                )
            group = ClassicGroup(group_id, current_state_timestamp=now_ms)
            self._groups[group_id] = group
        err = group.validate_offset_commit(member_id, group_instance_id, generation_id)
        if err is not ErrorCode.NONE:
            return all_partitions(err)
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            if member is not None:  # a commit counts as a heartbeat
                self._schedule_heartbeat(group_id, member_id, now_ms + member.session_timeout_ms)

        expire = None if retention_time_ms == -1 else now_ms + retention_time_ms
        max_meta = self.config.offset_metadata_max_bytes

        def commit_one(topic: str, p: CommitPartition) -> ErrorCode:
            metadata = p.committed_metadata
            if metadata is not None and java_string_length(metadata) > max_meta:
                return ErrorCode.OFFSET_METADATA_TOO_LARGE
            value = OffsetCommitValue(
                offset=p.committed_offset,
                metadata=metadata or "",
                commit_timestamp=now_ms,
                leader_epoch=p.committed_leader_epoch,
                expire_timestamp=-1 if expire is None else expire,
            )
            fx.records.append(
                self._record(
                    group_id,
                    encode_offset_commit_key(group_id, topic, p.partition_index),
                    encode_offset_commit_value(value),
                )
            )
            self._apply_offset(group_id, topic, p.partition_index, value)
            return ErrorCode.NONE

        out_topics = []
        for t in topics:
            parts = []
            for p in t.partitions:
                error = commit_one(t.name, p)
                parts.append({"partition_index": p.partition_index, "error_code": int(error)})
            out_topics.append({"name": t.name, "partitions": parts})
        return fx.result({"throttle_time_ms": 0, "topics": out_topics})

    # == OffsetFetch =======================================================================
    def fetch_offsets(
        self,
        *,
        group_id: str,
        topics: Sequence[TopicPartitions] | None,
        require_stable: bool = False,
    ) -> Response:
        """One group of an OffsetFetch (v8+ `Groups` entry shape: group_id, topics,
        error_code); `topics` None fetches every committed offset of the group. v1-7
        handlers lift `topics`/`error_code` to the top level. Partitions without a commit
        answer offset -1, leader epoch -1, metadata "". `require_stable` changes nothing
        (no transactional offsets)."""
        del require_stable
        err = self.coordinator_error(group_id)
        if err is not ErrorCode.NONE:
            return {"group_id": group_id, "topics": [], "error_code": int(err)}
        group = self._groups.get(group_id)
        known = group is not None and not group.is_in(GroupState.DEAD)
        out_topics: list[dict[str, Any]] = []
        if topics is None:
            if known:
                for topic, parts in self._offsets.topics(group_id).items():
                    out_topics.append(
                        {
                            "name": topic,
                            "partitions": [_fetched(p, v) for p, v in parts.items()],
                        }
                    )
        else:
            for t in topics:
                out_topics.append(
                    {
                        "name": t.name,
                        "partitions": [
                            _fetched(p, self._offsets.get(group_id, t.name, p) if known else None)
                            for p in t.partition_indexes
                        ],
                    }
                )
        return {"group_id": group_id, "topics": out_topics, "error_code": 0}

    # == OffsetDelete ======================================================================
    def delete_offsets(
        self, now_ms: int, *, group_id: str, topics: Sequence[TopicPartitions]
    ) -> Result:
        """OffsetDelete v0: only for Empty groups (or topics a `consumer` group does not
        subscribe to)."""
        del now_ms
        fx = _Fx()

        def top(error: ErrorCode) -> Result:
            return fx.result({"error_code": int(error), "throttle_time_ms": 0, "topics": []})

        err = self.request_error(group_id)
        if err is not ErrorCode.NONE:
            return top(err)
        group = self._groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return top(ErrorCode.GROUP_ID_NOT_FOUND)
        if not group.is_in(GroupState.EMPTY) and not group.uses_consumer_protocol():
            return top(ErrorCode.NON_EMPTY_GROUP)
        out_topics = []
        for t in topics:
            parts = []
            subscribed = group.is_subscribed_to_topic(t.name)
            for p in t.partition_indexes:
                if subscribed:
                    error = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                    parts.append({"partition_index": p, "error_code": int(error)})
                    continue
                if self._offsets.get(group_id, t.name, p) is not None:
                    self._offset_tombstone(group_id, t.name, p, fx)
                parts.append({"partition_index": p, "error_code": 0})
            out_topics.append({"name": t.name, "partitions": parts})
        return fx.result({"error_code": 0, "throttle_time_ms": 0, "topics": out_topics})

    # == DeleteGroups ======================================================================
    def delete_groups(self, now_ms: int, *, group_ids: Sequence[str]) -> Result:
        """DeleteGroups v0-2: Empty groups only (NON_EMPTY_GROUP otherwise); unknown ones
        GROUP_ID_NOT_FOUND. Writes offset tombstones then the group tombstone."""
        fx = _Fx()
        results = []
        for gid in group_ids:
            err = self.coordinator_error(gid)
            if err is ErrorCode.NONE:
                group = self._groups.get(gid)
                if group is None or group.is_in(GroupState.DEAD):
                    err = ErrorCode.GROUP_ID_NOT_FOUND
                elif not group.is_in(GroupState.EMPTY):
                    err = ErrorCode.NON_EMPTY_GROUP
                else:
                    self._delete_group(group, fx, now_ms)
            results.append({"group_id": gid, "error_code": int(err)})
        return fx.result({"throttle_time_ms": 0, "results": results})

    # == ListGroups / DescribeGroups =======================================================
    def list_groups(
        self,
        *,
        states_filter: Sequence[str] = (),
        types_filter: Sequence[str] = (),
    ) -> Response:
        """ListGroups v0-5: states compared case-insensitively; types likewise (every group
        here is "classic"; an unknown type matches nothing)."""
        if not self._active:
            return _list_error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if any(s is PartitionStatus.LOADING for s in self._partitions.values()):
            return _list_error(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        states = {s.strip().lower() for s in states_filter}
        types = {t.strip().lower() for t in types_filter}
        if types and GROUP_TYPE_CLASSIC not in types:
            return {"throttle_time_ms": 0, "error_code": 0, "groups": []}
        groups = [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type or "",
                "group_state": str(g.state),
                "group_type": GROUP_TYPE_CLASSIC,
            }
            for g in self._groups.values()
            if not states or str(g.state).lower() in states
        ]
        return {"throttle_time_ms": 0, "error_code": 0, "groups": groups}

    def describe_groups(self, *, api_version: int, group_ids: Sequence[str]) -> Response:
        """DescribeGroups v0-6. Unknown groups are Dead (v6+: GROUP_ID_NOT_FOUND too).
        Member metadata and the protocol name are given only for Stable groups.
        `authorized_operations` is left at its 'omitted' value for the handler to fill."""
        described = []
        for gid in group_ids:
            err = self.coordinator_error(gid)
            if err is not ErrorCode.NONE:
                described.append(_described(gid, error=err, state=""))
                continue
            group = self._groups.get(gid)
            if group is None or group.is_in(GroupState.DEAD):
                if api_version >= 6:
                    described.append(
                        _described(
                            gid,
                            error=ErrorCode.GROUP_ID_NOT_FOUND,
                            state=str(GroupState.DEAD),
                            message=f"Group {gid} not found.",
                        )
                    )
                else:
                    described.append(_described(gid, state=str(GroupState.DEAD)))
                continue
            stable = group.is_in(GroupState.STABLE)
            described.append(
                _described(
                    gid,
                    state=str(group.state),
                    protocol_type=group.protocol_type or "",
                    protocol_data=(group.protocol_name or "") if stable else "",
                    members=[
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.group_instance_id,
                            "client_id": m.client_id,
                            "client_host": m.client_host,
                            "member_metadata": m.metadata(group.protocol_name) if stable else b"",
                            "member_assignment": m.assignment,
                        }
                        for m in group.members.values()
                    ],
                )
            )
        return {"throttle_time_ms": 0, "groups": described}

    # == offset expiry =====================================================================
    def _cleanup(self, now_ms: int, fx: _Fx) -> None:
        """Kafka's `cleanupGroupMetadata`: expire offsets, then delete Empty groups that
        have none left."""
        for gid in list(self._groups):
            if self._partitions.get(self.partition_for(gid)) is not PartitionStatus.ACTIVE:
                continue
            group = self._groups[gid]
            if self._expire_offsets(group, now_ms, fx) and group.is_in(GroupState.EMPTY):
                fx.records.append(self._record(gid, encode_group_metadata_key(gid), None))
                group.transition_to(GroupState.DEAD, now_ms)
                del self._groups[gid]
                self._cancel_group_timers(gid)
        self._schedule_expiration(now_ms)

    def _expiration_base(self, group: ClassicGroup) -> Callable[[OffsetAndMetadata], int] | None:
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

    def _expire_offsets(self, group: ClassicGroup, now_ms: int, fx: _Fx) -> bool:
        """Tombstone expired offsets; True when the group has no offsets left."""
        gid = group.group_id
        if not self._offsets.has_offsets(gid):
            return True
        base = self._expiration_base(group)
        if base is None:
            return False
        retention = self.config.offsets_retention_ms
        all_expired = True
        for topic, parts in list(self._offsets.topics(gid).items()):
            if group.is_subscribed_to_topic(topic):
                all_expired = False
                continue
            for partition, value in list(parts.items()):
                if value.is_expired(now_ms, retention, base(value)):
                    self._offset_tombstone(gid, topic, partition, fx)
                else:
                    all_expired = False
        return all_expired


# -- helpers -------------------------------------------------------------------------------


def _unknown_member_answer(api_version: int) -> Response:
    return join_response(api_version, error=ErrorCode.UNKNOWN_MEMBER_ID, member_id="")


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


def _commit_response(
    topics: Sequence[CommitTopic], error_of: Callable[[CommitPartition], ErrorCode]
) -> Response:
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p.partition_index, "error_code": int(error_of(p))}
                    for p in t.partitions
                ],
            }
            for t in topics
        ],
    }


def _fetched(partition: int, value: OffsetAndMetadata | None) -> dict[str, Any]:
    if value is None:
        return {
            "partition_index": partition,
            "committed_offset": -1,
            "committed_leader_epoch": -1,
            "metadata": "",
            "error_code": 0,
        }
    return {
        "partition_index": partition,
        "committed_offset": value.committed_offset,
        "committed_leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "error_code": 0,
    }


def _list_error(error: ErrorCode) -> Response:
    return {"throttle_time_ms": 0, "error_code": int(error), "groups": []}


def _described(
    group_id: str,
    *,
    error: ErrorCode = ErrorCode.NONE,
    state: str,
    message: str | None = None,
    protocol_type: str = "",
    protocol_data: str = "",
    members: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "error_code": int(error),
        "error_message": message,
        "group_id": group_id,
        "group_state": state,
        "protocol_type": protocol_type,
        "protocol_data": protocol_data,
        "members": members or [],
        "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }
