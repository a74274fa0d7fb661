"""Share sessions (KIP-932): Kafka's ShareSessionCache and the epoch rules of ShareFetch and
ShareAcknowledge (SharePartitionManager.newContext / acknowledgeSessionUpdate). Pure: every
call takes `now_ms`.

A session is keyed by (group id, member id) and holds the partitions the member fetches, in
the order first named; its `epoch` is the one the next request must carry.

ShareFetch, by share_session_epoch:
    0 (INITIAL)    acknowledgements present -> INVALID_REQUEST; otherwise the member's session,
                   if any, is dropped and a new one made of the named partitions (epoch 1);
                   the cache full (`max_sessions`) and no session idle for `eviction_ms` to
                   evict -> SHARE_SESSION_LIMIT_REACHED
    -1 (FINAL)     no session -> SHARE_SESSION_NOT_FOUND; else its acknowledgements are applied,
                   nothing is fetched and the session is closed (its records released)
    n > 0          no session -> SHARE_SESSION_NOT_FOUND; n != its epoch ->
                   INVALID_SHARE_SESSION_EPOCH; else the named partitions are added, the
                   forgotten removed, the epoch moves to n + 1 (after 2^31-1: 1) and every
                   partition of the session is fetched
ShareAcknowledge: 0 -> INVALID_SHARE_SESSION_EPOCH; -1 -> the session must exist (closed after
the acknowledgements); n > 0 as ShareFetch, without partition changes.
A session also closes when the connection that opened it closes (the runtime tells
`close_if(group, member, connection)`), as Kafka's ShareSessionCache does on disconnect.
When a group's last session closes with its connection the runtime forgets the group's share
partitions (`has_group`; Kafka's ShareGroupListener.onGroupEmpty).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from protocol.errors import ErrorCode

__all__ = ["FINAL_EPOCH", "INITIAL_EPOCH", "ShareSession", "ShareSessionError", "ShareSessions"]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT32_MAX = 2**31 - 1

#: (topic id, partition)
PartitionKey = tuple[uuid.UUID, int]


class ShareSessionError(Exception):
    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= _INT32_MAX else epoch + 1


@dataclass
class ShareSession:
    group_id: str
    member_id: str
    epoch: int
    last_used_ms: int
    #: the partitions fetched, in the order first named (a dict as an ordered set)
    partitions: dict[PartitionKey, None] = field(default_factory=dict)
    #: the connection that opened it (closed with it): any object, compared by identity
    connection: object = None


class ShareSessions:
    """The broker's share session cache (module docstring)."""

    def __init__(self, max_sessions: int = 2_000, eviction_ms: int = 120_000) -> None:
        self.max_sessions = max_sessions
        self.eviction_ms = eviction_ms
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def for_fetch(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        named: Iterable[PartitionKey],
        forgotten: Iterable[PartitionKey],
        *,
        acknowledges: bool,
        now_ms: int,
    ) -> ShareSession:
        """The session a ShareFetch works in (module docstring); raises ShareSessionError."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if acknowledges:
                raise ShareSessionError(ErrorCode.INVALID_REQUEST)
            self._sessions.pop(key, None)
            if len(self._sessions) >= self.max_sessions and not self._evict(now_ms):
                raise ShareSessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED)
            session = ShareSession(group_id, member_id, next_epoch(INITIAL_EPOCH), now_ms)
            session.partitions = dict.fromkeys(named)
            self._sessions[key] = session
            return session
        session = self._existing(key, epoch)
        if epoch != FINAL_EPOCH:
            for part in named:
                session.partitions.setdefault(part, None)
            for part in forgotten:
                session.partitions.pop(part, None)
            self._touch(session, now_ms)
        return session

    def for_acknowledge(
        self, group_id: str, member_id: str, epoch: int, *, now_ms: int
    ) -> ShareSession:
        """The session a ShareAcknowledge works in (module docstring)."""
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        session = self._existing((group_id, member_id), epoch)
        if epoch != FINAL_EPOCH:
            self._touch(session, now_ms)
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.pop((group_id, member_id), None)

    def has_group(self, group_id: str) -> bool:
        """Whether a session of the group is open (Kafka's count of members per group)."""
        return any(g == group_id for g, _m in self._sessions)

    def close_if(self, group_id: str, member_id: str, connection: object) -> ShareSession | None:
        """Close the member's session if `connection` opened it (not a newer one's)."""
        session = self._sessions.get((group_id, member_id))
        if session is None or session.connection is not connection:
            return None
        return self.close(group_id, member_id)

    def _existing(self, key: tuple[str, str], epoch: int) -> ShareSession:
        session = self._sessions.get(key)
        if session is None:
            raise ShareSessionError(ErrorCode.SHARE_SESSION_NOT_FOUND)
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            raise ShareSessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
        return session

    def _touch(self, session: ShareSession, now_ms: int) -> None:
        session.epoch = next_epoch(session.epoch)
        session.last_used_ms = now_ms

    def _evict(self, now_ms: int) -> bool:
        """Drop the least recently used session when idle for more than `eviction_ms`."""
        oldest = min(self._sessions.values(), key=lambda s: s.last_used_ms, default=None)
        if oldest is None or now_ms - oldest.last_used_ms <= self.eviction_ms:
            return False
        del self._sessions[(oldest.group_id, oldest.member_id)]
        return True
