"""Incremental fetch sessions (KIP-227) between brokers: the leader's cache (pure, no I/O).

Without a session every replica Fetch names every partition its follower replicates from this
leader and every answer carries all of them, idle or not: with `__consumer_offsets` (50
partitions) a follower's Fetch carries ~17 idle partitions beside a busy one, each decoded,
read, recorded and answered per round. With a session, as Kafka's followers do it
(`FetchSessionHandler` / `FetchManager`):

    request (session_id, session_epoch)    leader
    (0 or any, 0 = INITIAL)                a full fetch; a new session holds its partitions
                                           (one per follower: an older one of the same
                                           replica is dropped); the answer carries all of
                                           them and the new session_id
    (S, -1 = FINAL)                        session S closed; a full fetch, session_id 0
    (S, E > 0)                             incremental: S must exist and belong to this
                                           replica (else FETCH_SESSION_ID_NOT_FOUND) and E be
                                           the epoch it expects (else
                                           INVALID_FETCH_SESSION_EPOCH); the partitions named
                                           replace their cached fetch data (or join), the
                                           forgotten ones leave; every partition of the session
                                           is read (and the follower's position recorded for
                                           each) with its cached data, except quiet ones
                                           (`_Cached.is_quiet`, handlers/fetch.py); the
                                           answer carries only those with records, an
                                           error, a diverging epoch or a high watermark /
                                           log start / last stable offset that changed
                                           since the session last sent them; the expected
                                           epoch becomes E + 1 (INT32_MAX -> 1)

Only follower fetches get sessions here; a consumer's Fetch stays sessionless (session_id 0
in the answer: clients then keep sending full fetches, which KIP-227 allows). At most
`max_sessions` (Kafka's max.incremental.fetch.session.cache.slots, 1,000) sessions exist; a
new one beyond that evicts the least recently used. Topics are keyed as the session's requests
name them: by topic id (Fetch v13+) or by name (v7-12); a request naming them the other way
is FETCH_SESSION_TOPIC_ID_ERROR, as in Kafka.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "FetchSession",
    "FetchSessionError",
    "FetchSessions",
    "Key",
    "next_epoch",
]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT32_MAX = 2**31 - 1

#: (topic id or name, partition index)
Key = tuple[object, int]


def next_epoch(epoch: int) -> int:
    """The session epoch after `epoch` (KIP-227: INT32_MAX wraps to 1, 0 is only INITIAL)."""
    return 1 if epoch >= _INT32_MAX else epoch + 1


class FetchSessionError(Exception):
    """A request that no session can serve; `code` goes in the answer's error_code."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


@dataclass
class _Cached:
    """One partition of a session: the fetch data last named for it and what was last sent."""

    fetch: Any  # the request's FetchPartition (a mapping)
    high_watermark: int | None = None
    log_start_offset: int | None = None
    last_stable_offset: int | None = None
    #: (partition, its quiet stamp) from the last read that found the follower quiet there
    #: (`Partition.quiet_follower_stamp`), None when unknown. Set by the Fetch handler;
    #: cleared whenever the follower names the partition again.
    quiet: Any = None
    #: when the follower's fetch of this partition was last recorded (ms; -1: never)
    recorded_ms: int = -1

    def is_quiet(self, part: Any, stamp: tuple[int, int, int, int]) -> bool:
        """Whether the partition may be skipped: `part` and its current `stamp` (leader epoch,
        log end = high watermark, log start, last stable offset) are those of the last read
        that found it quiet, and the follower has been sent that high watermark, log start
        and last stable offset (an answer built from a long poll's first read is not always
        the one sent)."""
        quiet = self.quiet
        return (
            quiet is not None
            and quiet[0] is part
            and quiet[1] == stamp
            and self.high_watermark == stamp[1]
            and self.log_start_offset == stamp[2]
            and self.last_stable_offset == stamp[3]
        )


@dataclass
class FetchSession:
    session_id: int
    replica_id: int
    by_id: bool
    #: the epoch the next request must carry
    epoch: int
    partitions: dict[Key, _Cached] = field(default_factory=dict)
    last_used_ms: int = 0

    def must_answer(self, key: Key, answer: Any) -> bool:
        """Whether partition `key`'s `answer` (a PartitionData mapping) goes into an
        incremental answer; records what it carries as sent (Kafka's
        `CachedPartition.maybeUpdateResponseData`)."""
        cached = self.partitions.get(key)
        if cached is None:
            return True
        hw = answer.get("high_watermark")
        log_start = answer.get("log_start_offset")
        lso = answer.get("last_stable_offset")
        changed = (
            hw != cached.high_watermark
            or log_start != cached.log_start_offset
            or lso != cached.last_stable_offset
        )
        if changed:
            cached.high_watermark, cached.log_start_offset = hw, log_start
            cached.last_stable_offset = lso
        return (
            changed
            or int(answer.get("error_code", 0)) != ErrorCode.NONE
            or answer.get("diverging_epoch") is not None
            or len(answer.get("records") or b"") > 0
        )

    def request_topics(self, topic_field: str) -> list[dict[str, Any]]:
        """Every partition of the session as a request's `topics` (its cached fetch data)."""
        topics: dict[object, list[Any]] = {}
        for (topic, _index), cached in self.partitions.items():
            topics.setdefault(topic, []).append(cached.fetch)
        return [{topic_field: t, "partitions": ps} for t, ps in topics.items()]


class FetchSessions:
    """The leader's sessions, by id (see the module doc)."""

    def __init__(self, max_sessions: int = 1000, rng: random.Random | None = None) -> None:
        self.max_sessions = max_sessions
        self._rng = rng  # None: the `random` module's (a simulation seeds it)
        self._sessions: dict[int, FetchSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def create(
        self, replica_id: int, by_id: bool, named: list[tuple[Key, Any]], now_ms: int
    ) -> FetchSession:
        """A new session holding the partitions `named` ((key, fetch data) pairs)."""
        for sid in [s.session_id for s in self._sessions.values() if s.replica_id == replica_id]:
            del self._sessions[sid]
        if len(self._sessions) >= self.max_sessions:
            oldest = min(self._sessions.values(), key=lambda s: s.last_used_ms)
            del self._sessions[oldest.session_id]
        draw = (self._rng or random).randint
        session_id = 0
        while session_id == 0 or session_id in self._sessions:
            session_id = draw(1, _INT32_MAX)
        session = FetchSession(session_id, replica_id, by_id, next_epoch(INITIAL_EPOCH))
        session.partitions = {key: _Cached(fetch) for key, fetch in named}
        session.last_used_ms = now_ms
        self._sessions[session_id] = session
        return session

    def close(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def update(
        self,
        session_id: int,
        epoch: int,
        replica_id: int,
        by_id: bool,
        named: list[tuple[Key, Any]],
        forgotten: list[Key],
        now_ms: int,
    ) -> FetchSession:
        """Apply an incremental request to its session (raises FetchSessionError)."""
        session = self._sessions.get(session_id)
        if session is None or session.replica_id != replica_id:
            raise FetchSessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            raise FetchSessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if by_id != session.by_id:
            raise FetchSessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        for key, fetch in named:
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = _Cached(fetch)
            else:
                cached.fetch = fetch
                cached.quiet = None
        for key in forgotten:  # after the named ones, as Kafka: named and forgotten leaves
            session.partitions.pop(key, None)
        session.epoch = next_epoch(epoch)
        session.last_used_ms = now_ms
        return session
