"""Test kit for the pure group coordinator: a fake clock, answered-request bookkeeping and
request helpers with defaults (one group "g", consumer protocol "range").

The helpers decode like the handlers (version -> the core's flags) and turn the core's typed
results into each version's response with the handlers' builders, so tests read dicts."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Hashable, Sequence
from typing import Any

from protocol.errors import ErrorCode
from wirebroker.group import (
    CommitPartition,
    CommitRequest,
    CommitTopic,
    GroupConfig,
    GroupCoordinatorCore,
    HeartbeatRequest,
    JoinRequest,
    JoinResult,
    LeaveMember,
    Record,
    Result,
    SyncRequest,
    SyncResult,
    TopicPartitions,
)
from wirebroker.handlers.describe_groups import describe_groups_response
from wirebroker.handlers.join_group import join_response
from wirebroker.handlers.leave_group import leave_response
from wirebroker.handlers.list_groups import list_groups_response
from wirebroker.handlers.offset_commit import commit_errors
from wirebroker.handlers.offset_fetch import fetch_group_response
from wirebroker.handlers.sync_group import missing_protocol, sync_response

SESSION = 10_000
REBALANCE = 30_000


def subscription(*topics: str, version: int = 0) -> bytes:
    """A `consumer` protocol subscription: int16 version, [string] topics, null user data."""
    out = struct.pack(">hi", version, len(topics))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out + struct.pack(">i", -1)


class Kit:
    def __init__(self, config: GroupConfig | None = None, *, load: bool = True) -> None:
        counter = itertools.count(1)
        self.core = GroupCoordinatorCore(config, member_id_suffix=lambda: f"u{next(counter)}")
        self.now = 0
        self.records: list[Record] = []
        self.answers: dict[Hashable, dict[str, Any]] = {}
        self._keys = itertools.count(1)
        self._join_versions: dict[Hashable, int] = {}
        if load:
            self.core.begin_loading()
            self.absorb(self.core.complete_loading(self.now))

    # -- bookkeeping -----------------------------------------------------------------------
    def absorb(self, result: Result[Any]) -> Result[Any]:
        self.records.extend(result.records)
        for c in result.completions:
            assert c.key not in self.answers, f"request {c.key!r} answered twice"
            if isinstance(c.result, JoinResult):
                self.answers[c.key] = join_response(self._join_versions[c.key], c.result)
            else:
                assert isinstance(c.result, SyncResult)
                self.answers[c.key] = sync_response(c.result)
        return result

    def answer(self, key: Hashable) -> dict[str, Any] | None:
        return self.answers.get(key)

    def error(self, key: Hashable) -> ErrorCode | None:
        a = self.answers.get(key)
        return None if a is None else ErrorCode(a["error_code"])

    def new_key(self) -> str:
        return f"req{next(self._keys)}"

    def tick(self) -> Result[Any]:
        return self.absorb(self.core.tick(self.now))

    def advance(self, ms: int) -> Result[Any]:
        """Move the clock, firing every timer on the way in deadline order."""
        target = self.now + ms
        merged: Result[Any] = Result()
        while True:
            deadline = self.core.next_deadline()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            r = self.tick()
            merged.completions += r.completions
            merged.records += r.records
        self.now = target
        r = self.tick()
        merged.completions += r.completions
        merged.records += r.records
        return merged

    # -- requests --------------------------------------------------------------------------
    def join(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        version: int = 7,
        protocols: Sequence[tuple[str, bytes]] = (("range", b"r"),),
        instance: str | None = None,
        session: int = SESSION,
        rebalance: int = REBALANCE,
        client_id: str = "c",
        protocol_type: str = "consumer",
        key: str | None = None,
    ) -> str:
        key = key or self.new_key()
        self._join_versions[key] = version
        self.absorb(
            self.core.join_group(
                key,
                self.now,
                JoinRequest(
                    group_id=group,
                    member_id=member_id,
                    protocol_type=protocol_type,
                    protocols=protocols,
                    session_timeout_ms=session,
                    rebalance_timeout_ms=rebalance if version >= 1 else -1,
                    group_instance_id=instance,
                    client_id=client_id,
                    client_host="/127.0.0.1",
                    require_known_member_id=version >= 4,
                    supports_skip_assignment=version >= 9,
                ),
            )
        )
        return key

    def sync(
        self,
        member_id: str,
        generation: int,
        *,
        group: str = "g",
        version: int = 3,
        assignments: Sequence[tuple[str, bytes]] = (),
        instance: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        key: str | None = None,
    ) -> str:
        key = key or self.new_key()
        if missing_protocol(version, protocol_type, protocol_name):  # the handler's check
            self.answers[key] = sync_response(SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return key
        self.absorb(
            self.core.sync_group(
                key,
                self.now,
                SyncRequest(
                    group_id=group,
                    generation_id=generation,
                    member_id=member_id,
                    group_instance_id=instance,
                    protocol_type=protocol_type,
                    protocol_name=protocol_name,
                    assignments=assignments,
                ),
            )
        )
        return key

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = "g", instance: str | None = None
    ) -> ErrorCode:
        r = self.absorb(
            self.core.heartbeat(
                self.now,
                HeartbeatRequest(
                    group_id=group,
                    generation_id=generation,
                    member_id=member_id,
                    group_instance_id=instance,
                ),
            )
        )
        assert r.response is not None
        return r.response

    def leave(
        self,
        member_id: str = "",
        *,
        group: str = "g",
        version: int = 3,
        members: Sequence[LeaveMember] | None = None,
    ) -> dict[str, Any]:
        if version < 3 or members is None:
            members = [LeaveMember(member_id)]
        r = self.absorb(self.core.leave_group(self.now, group_id=group, members=members))
        assert r.response is not None
        return leave_response(version, r.response)

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        group: str = "g",
        generation: int = -1,
        member_id: str = "",
        instance: str | None = None,
        version: int = 8,
        metadata: str | None = "",
        leader_epoch: int = -1,
        retention_time_ms: int = -1,
    ) -> dict[tuple[str, int], ErrorCode]:
        by_topic: dict[str, list[CommitPartition]] = {}
        for (topic, part), off in offsets.items():
            by_topic.setdefault(topic, []).append(
                CommitPartition(part, off, leader_epoch, metadata)
            )
        r = self.absorb(
            self.core.commit_offsets(
                self.now,
                CommitRequest(
                    group_id=group,
                    topics=[CommitTopic(t, ps) for t, ps in by_topic.items()],
                    generation_id=generation,
                    member_id=member_id,
                    group_instance_id=instance,
                    retention_time_ms=retention_time_ms,
                ),
            )
        )
        assert r.response is not None
        return {k: ErrorCode(e) for k, e in commit_errors(version, r.response).items()}

    def fetch(
        self, partitions: dict[str, Sequence[int]] | None = None, *, group: str = "g"
    ) -> dict[str, Any]:
        topics = (
            None
            if partitions is None
            else [TopicPartitions(t, list(ps)) for t, ps in partitions.items()]
        )
        return fetch_group_response(self.core.fetch_offsets(group_id=group, topics=topics))

    def list_groups(self, **filters: Sequence[str]) -> dict[str, Any]:
        return list_groups_response(self.core.list_groups(**filters))

    def describe_groups(self, *, api_version: int, group_ids: Sequence[str]) -> dict[str, Any]:
        return describe_groups_response(api_version, self.core.describe_groups(group_ids=group_ids))

    def fetched(self, group: str = "g") -> dict[tuple[str, int], int]:
        resp = self.fetch(None, group=group)
        return {
            (t["name"], p["partition_index"]): p["committed_offset"]
            for t in resp["topics"]
            for p in t["partitions"]
        }

    # -- scenario helpers ------------------------------------------------------------------
    def join_dynamic(self, client_id: str = "c", **kw: Any) -> tuple[str, str]:
        """The v4+ handshake: JoinGroup with no id -> MEMBER_ID_REQUIRED, then rejoin with the
        id. Returns (member_id, key of the parked second JoinGroup)."""
        k1 = self.join(client_id=client_id, **kw)
        a1 = self.answer(k1)
        assert a1 is not None and a1["error_code"] == ErrorCode.MEMBER_ID_REQUIRED, a1
        member_id = a1["member_id"]
        k2 = self.join(member_id, client_id=client_id, **kw)
        return member_id, k2

    def stable_group(self, n: int = 1, group: str = "g", **kw: Any) -> list[str]:
        """Join `n` dynamic members, complete the rebalance and sync; returns member ids
        (leader first)."""
        members: list[str] = []
        keys: list[str] = []
        for i in range(n):
            mid, key = self.join_dynamic(client_id=f"c{i}", group=group, **kw)
            members.append(mid)
            keys.append(key)
        self.tick()  # initial rebalance delay 0
        answers = [self.answer(k) for k in keys]
        assert all(a is not None and a["error_code"] == 0 for a in answers), answers
        first = answers[0]
        assert first is not None
        leader = first["leader"]
        generation = first["generation_id"]
        others = [m for m in members if m != leader]
        self.sync(
            leader,
            generation,
            group=group,
            assignments=[(m, f"assign-{m}".encode()) for m in members],
        )
        for m in others:
            self.sync(m, generation, group=group)
        g = self.core.group(group)
        assert g is not None and str(g.state) == "Stable"
        return [leader, *others]
