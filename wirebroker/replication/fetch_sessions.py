"""Incremental fetch sessions (KIP-227): the broker's session cache (pure, no I/O; `now_ms`
is always passed in).

Without a session every Fetch names every partition its fetcher reads and every answer carries
all of them, idle or not. With a session, as Kafka 4.4's `FetchManager` / `FetchSessionCache`
serve them, to followers (privileged sessions) and to consumers (unprivileged) alike:

    request (session_id, session_epoch)    broker
    (S, 0 = INITIAL)                       S (if not 0) is closed; a full fetch; a new
                                           session holding every partition answered is made
                                           when the cache admits it (`maybe_create`): the
                                           answer carries its id, else 0 (a full fetch again
                                           next time, which KIP-227 allows)
    (S, -1 = FINAL)                        S (if not 0) is closed; a full fetch, session_id 0
    (S, E > 0)                             incremental: S must exist (else
                                           FETCH_SESSION_ID_NOT_FOUND), E be the epoch it
                                           expects (else INVALID_FETCH_SESSION_EPOCH) and the
                                           request name its topics as the session does (ids
                                           from v13, else FETCH_SESSION_TOPIC_ID_ERROR); the
                                           partitions named replace their cached fetch data
                                           (or join), then the forgotten ones leave; a session
                                           left empty is closed and the request served
                                           sessionless (session_id 0); else every partition
                                           of the session is read, the answer carries only
                                           those with records, an error, a diverging epoch or
                                           a high watermark / log start that changed since the
                                           session last sent them (`must_answer`), and those
                                           that had records move to the end of the session's
                                           order (the next read starts with the others); the
                                           expected epoch becomes E + 1 (INT32_MAX -> 1)

A partition named twice in one request (in one topic entry, in two entries of its topic, or in
the forgotten list) counts once, as Kafka 4.4 reads a Fetch into a map: it keeps the place of
its first naming and the fetch data of its last (`named_once`); no error is answered.

A session is found by its id alone: as in Kafka it is bound neither to a connection nor to the
fetcher that made it (a consumer reconnecting keeps its session). Topics are keyed as the
session's requests name them: by topic id (Fetch v13+) or by name (v7-12).

The cache, as Kafka's: `shards` shards (Kafka: 8), each holding at most
`max.incremental.fetch.session.cache.slots` // shards sessions (so fewer than 8 slots: no
session at all) and its own range of session ids; a new session goes to the next shard in
turn. A slot is a session, whatever its size; the partitions cached are counted for the
metrics only. When the shard is full a new session of `size` partitions is admitted only by
evicting one (`_Shard.try_evict`, Kafka's `FetchSessionCacheShard.tryEvict`):
  1. the least recently used session, if unused for more than `eviction_ms`
     (`min.incremental.fetch.session.eviction.ms`, Kafka's fixed 120,000) — whoever asks;
  2. else the least valuable evictable session, if not more valuable than the newcomer
     (value: privileged first, then more partitions, then the higher id). Evictable, as decided
     when the session was last used (`touch`): by a privileged newcomer, an unprivileged session
     or one created more than `eviction_ms` before; by an unprivileged newcomer, only one
     created more than `eviction_ms` before.
So a follower's session takes the place of a consumer's, a bigger session that of a smaller
one that is not new, and a session in use is safe for `eviction_ms` after its creation.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from protocol.errors import ErrorCode

__all__ = [
    "DEFAULT_EVICTION_MS",
    "DEFAULT_SHARDS",
    "DEFAULT_SLOTS",
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "FetchSession",
    "FetchSessionError",
    "FetchSessions",
    "Key",
    "group_topics",
    "named_once",
    "next_epoch",
]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_INT32_MAX = 2**31 - 1
DEFAULT_SLOTS = 1000
DEFAULT_EVICTION_MS = 120_000
DEFAULT_SHARDS = 8

#: (topic id or name, partition index)
Key = tuple[object, int]


def named_once(named: list[tuple[Key, Any]]) -> dict[Key, Any]:
    """A request's partitions ((key, fetch data) pairs, in request order), each once: a
    partition named twice (in one topic entry or in two entries of its topic) keeps the place
    of its first naming and the fetch data of its last, as Kafka 4.4 reads a Fetch (a map of
    topic-partitions, in full, incremental and sessionless fetches alike)."""
    return dict(named)


def group_topics(partitions: dict[Key, Any], topic_field: str) -> list[dict[str, Any]]:
    """Partitions (key -> fetch data, in order) as a request's `topics`: one entry per run of
    consecutive partitions of a topic (as Kafka groups them)."""
    topics: list[dict[str, Any]] = []
    last: object = object()
    for (topic, _index), fetch in partitions.items():
        if topic != last or not topics:
            topics.append({topic_field: topic, "partitions": []})
            last = topic
        topics[-1]["partitions"].append(fetch)
    return topics


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
    #: the last stable offset last read (not an answer trigger, as in Kafka: see must_answer)
    last_stable_offset: int | None = None
    #: (partition, its quiet stamp) from the last read that found the follower quiet there
    #: (`Partition.quiet_follower_stamp`), None when unknown. Set by the Fetch handler;
    #: cleared whenever the follower names the partition again. Follower sessions only.
    quiet: Any = None
    #: when the follower's fetch of this partition was last recorded (ms; -1: never)
    recorded_ms: int = -1

    def is_quiet(self, part: Any, stamp: tuple[int, int, int, int]) -> bool:
        """Whether the partition may be skipped: `part` and its current `stamp` (leader epoch,
        log end = high watermark, log start, last stable offset) are those of the last read
        that found it quiet, and the follower has been sent that high watermark and log start
        (an answer built from a long poll's first read is not always the one sent) and the
        last read saw that last stable offset."""
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
    #: a follower's (Kafka's privileged session)
    privileged: bool
    by_id: bool
    #: the epoch the next request must carry
    epoch: int
    creation_ms: int = 0
    last_used_ms: int = 0
    #: in session order: the order partitions are read and answered in
    partitions: dict[Key, _Cached] = field(default_factory=dict)
    #: the size when last touched (what the cache counts; -1: not in the cache)
    cached_size: int = -1
    #: whether a privileged / any newcomer may evict it, as decided when last touched
    evictable_by_privileged: bool = False
    evictable_by_all: bool = False

    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey: the least valuable session sorts first."""
        return (self.privileged, self.cached_size, self.session_id)

    def must_answer(self, key: Key, answer: Any) -> bool:
        """Whether partition `key`'s `answer` (a PartitionData mapping) goes into an
        incremental answer, recording what it carries as sent (Kafka's
        `CachedPartition.maybeUpdateResponseData`): records, a high watermark or log start
        other than the last sent, a preferred read replica, an error (the cached high
        watermark then becomes -1, so the partition is sent again once the error is gone) or a
        diverging epoch. A change of the last stable offset alone is not sent, as in Kafka."""
        cached = self.partitions.get(key)
        if cached is None:
            return False  # not in the session (forgotten meanwhile), as Kafka
        hw = answer.get("high_watermark")
        log_start = answer.get("log_start_offset")
        cached.last_stable_offset = answer.get("last_stable_offset")
        must = len(answer.get("records") or b"") > 0
        if hw != cached.high_watermark:
            cached.high_watermark, must = hw, True
        if log_start != cached.log_start_offset:
            cached.log_start_offset, must = log_start, True
        if int(answer.get("preferred_read_replica", -1)) >= 0:
            must = True
        if int(answer.get("error_code", 0)) != ErrorCode.NONE:
            cached.high_watermark, must = -1, True
        return must or answer.get("diverging_epoch") is not None

    def move_to_end(self, key: Key) -> None:
        """A partition that sent records goes last in the session's order (Kafka's round
        robin: the next fetch's byte budget goes to the others first)."""
        cached = self.partitions.pop(key, None)
        if cached is not None:
            self.partitions[key] = cached

    def request_topics(self, topic_field: str) -> list[dict[str, Any]]:
        """Every partition of the session as a request's `topics`, in session order
        (`group_topics`)."""
        return group_topics(
            {key: cached.fetch for key, cached in self.partitions.items()}, topic_field
        )


class _Shard:
    """One shard of the cache: its sessions, at most `max_entries`, with ids in [lo, hi)."""

    def __init__(self, max_entries: int, eviction_ms: int, lo: int, hi: int) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.lo, self.hi = lo, hi
        self.sessions: dict[int, FetchSession] = {}
        self.num_partitions = 0
        self.evictions = 0

    def new_id(self, rng: Any) -> int:
        while True:
            sid = int(rng.randrange(self.lo, self.hi))
            if sid != 0 and sid not in self.sessions:
                return sid

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """The session was used: its last use, cached size and evictability (Kafka's touch)."""
        session.last_used_ms = now_ms
        if session.cached_size >= 0:
            self.num_partitions -= session.cached_size
        session.cached_size = len(session.partitions)
        self.num_partitions += session.cached_size
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_privileged = old or not session.privileged
        session.evictable_by_all = old

    def remove(self, session_id: int) -> FetchSession | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            self.num_partitions -= session.cached_size
            session.cached_size = -1
        return session

    def try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        """Make room for a newcomer (see the module doc); whether a session was evicted."""
        if not self.sessions:
            return False
        lru = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.session_id))
        if now_ms - lru.last_used_ms > self.eviction_ms:
            victim: FetchSession | None = lru
        else:
            candidates = [
                s
                for s in self.sessions.values()
                if (s.evictable_by_privileged if privileged else s.evictable_by_all)
            ]
            victim = min(candidates, key=FetchSession.evictable_key) if candidates else None
            if victim is not None and (privileged, size, 0) < victim.evictable_key():
                victim = None
        if victim is None:
            return False
        self.remove(victim.session_id)
        self.evictions += 1
        return True


class FetchSessions:
    """The broker's sessions (see the module doc)."""

    def __init__(
        self,
        max_sessions: int = DEFAULT_SLOTS,
        eviction_ms: int = DEFAULT_EVICTION_MS,
        shards: int = DEFAULT_SHARDS,
        rng: random.Random | None = None,
    ) -> None:
        self.max_sessions = max_sessions
        self.eviction_ms = eviction_ms
        self._rng = rng  # None: the `random` module's (a simulation seeds it)
        span = _INT32_MAX // shards
        self._span = span
        self._shards = [
            _Shard(max_sessions // shards, eviction_ms, max(1, n * span), (n + 1) * span)
            for n in range(shards)
        ]
        self._next_shard = 0

    @classmethod
    def from_config(cls, config: Any) -> FetchSessions:
        """The cache a broker config asks for (a BrokerConfig: `get_int`)."""
        return cls(
            config.get_int("max.incremental.fetch.session.cache.slots"),
            config.get_int("min.incremental.fetch.session.eviction.ms"),
        )

    def __len__(self) -> int:
        return sum(len(s.sessions) for s in self._shards)

    @property
    def partitions_cached(self) -> int:
        """Kafka's NumIncrementalFetchPartitionsCached: the sessions' sizes when last used."""
        return sum(s.num_partitions for s in self._shards)

    @property
    def evictions(self) -> int:
        """Sessions evicted so far (Kafka's IncrementalFetchSessionEvictionsPerSec counts)."""
        return sum(s.evictions for s in self._shards)

    def _shard(self, session_id: int) -> _Shard | None:
        index = session_id // self._span
        return self._shards[index] if session_id > 0 and index < len(self._shards) else None

    def get(self, session_id: int) -> FetchSession | None:
        shard = self._shard(session_id)
        return shard.sessions.get(session_id) if shard is not None else None

    def close(self, session_id: int) -> None:
        shard = self._shard(session_id)
        if shard is not None:
            shard.remove(session_id)

    def clear(self) -> None:
        """Forget every session (as a restart does)."""
        for shard in self._shards:
            for session_id in list(shard.sessions):
                shard.remove(session_id)

    def maybe_create(
        self, privileged: bool, by_id: bool, named: list[tuple[Key, Any]], now_ms: int
    ) -> FetchSession | None:
        """A new session holding the partitions `named` ((key, fetch data) pairs, in order),
        or None when the next shard is full and evicts nothing for it."""
        shard = self._shards[self._next_shard]
        self._next_shard = (self._next_shard + 1) % len(self._shards)
        once = named_once(named)
        size = len(once)
        if len(shard.sessions) >= shard.max_entries and not shard.try_evict(
            privileged, size, now_ms
        ):
            return None
        session = FetchSession(
            shard.new_id(self._rng or random),
            privileged,
            by_id,
            next_epoch(INITIAL_EPOCH),
            creation_ms=now_ms,
        )
        session.partitions = {key: _Cached(fetch) for key, fetch in once.items()}
        shard.sessions[session.session_id] = session
        shard.touch(session, now_ms)
        return session

    def update(
        self,
        session_id: int,
        epoch: int,
        by_id: bool,
        named: list[tuple[Key, Any]],
        forgotten: list[Key],
        now_ms: int,
    ) -> FetchSession | None:
        """Apply an incremental request to its session (raises FetchSessionError); None when
        that left the session empty: it is closed and the request is served sessionless."""
        shard = self._shard(session_id)
        session = shard.sessions.get(session_id) if shard is not None else None
        if shard is None or session is None:
            raise FetchSessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != session.epoch:
            raise FetchSessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if by_id != session.by_id:
            raise FetchSessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        for key, fetch in named_once(named).items():
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = _Cached(fetch)
            else:
                cached.fetch = fetch
                cached.quiet = None
        for key in forgotten:  # after the named ones, as Kafka: named and forgotten leaves
            session.partitions.pop(key, None)
        if not session.partitions:
            shard.remove(session_id)
            return None
        shard.touch(session, now_ms)
        session.epoch = next_epoch(epoch)
        return session
