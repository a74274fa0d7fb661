"""Log compaction (Kafka's `LogCleaner` / `LogCleanerManager` / `Cleaner`), cleanup.policy=compact.

Synchronous and bounded: `LogCleaner.run(logs, now_ms)` does at most `max_bytes_per_run`
bytes of segment reading, then returns; an unfinished round is resumed by the next call (the
broker calls `LogManager.run_cleaner` between requests). No trio, no clock reads. A round
picks the filthiest compacted log, builds a key -> last offset map over its dirty segments,
rewrites groups of segments below the first uncleanable offset keeping each key's latest
record (tombstones kept for delete.retention.ms, KIP-534 delete horizon), and swaps each
rewritten group in through the log's `replace_segments` (crash safe: `segments.swap_in`).
Batches are re-encoded with `protocol.records.rebuild_batch`.

Transactions (Kafka's rules, `TxnCleaning`): the cleanable range stops below the first offset
of the oldest open transaction; the records of aborted transactions are dropped (and never
enter the offset map); COMMIT/ABORT markers stay while data of their transaction remains in
the pass, then get a delete horizon and go after delete.retention.ms; the `.txnindex` entry
of a kept ABORT marker is copied into the cleaned segment's index.

Invariants: offsets and the log end never change (the active segment is never cleaned); the
last batch of a live idempotent producer and the batch ending at the round's bound survive
(possibly empty); a round abandoned between calls leaves no `.cleaned` files; an error marks
the partition uncleanable until restart. The cleaner sees a log only through `CleanableLog`.
Design notes (choosing a log, the round, the swap and its recovery): docs/log.md,
"Compaction".
"""

from __future__ import annotations

import hashlib
import logging
from bisect import bisect_right
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from protocol.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_MASK,
    DELETE_HORIZON_BIT,
    LOG_APPEND_TIME,
    BatchHeader,
    InvalidBatch,
    Record,
    decode_records,
    parse_header,
    rebuild_batch,
    verify_crc,
)
from wirebroker.log.config import DECODE_CAP, LogConfig
from wirebroker.log.control import ABORT, ControlError, parse_marker
from wirebroker.log.errors import LogError
from wirebroker.log.fs import FileSystem, pread_exact
from wirebroker.log.segment import INT32_MAX, CorruptSegment, Segment
from wirebroker.log.segments import CLEANED_SUFFIX, SWAP_SUFFIX
from wirebroker.log.txn_index import AbortedTxn, TxnIndex

__all__ = [
    "CLEANED_SUFFIX",
    "CLEANER_CHECKPOINT",
    "SWAP_SUFFIX",
    "CleanableLog",
    "LogCleaner",
    "LogToClean",
    "encode_batch",
    "filter_batch",
    "group_segments",
    "log_to_clean",
]

log = logging.getLogger(__name__)

Key = tuple[str, int]

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
READ_WINDOW = 1 << 20
WRITE_BUFFER = 1 << 20
DEFAULT_MAX_MAP_ENTRIES = 1_000_000
DEFAULT_MAX_BYTES_PER_RUN = 4 << 20


class CleanableLog(Protocol):
    """What the cleaner needs of a log (`PartitionLog` provides it)."""

    fs: FileSystem
    directory: Path

    @property
    def name(self) -> str: ...
    @property
    def config(self) -> LogConfig: ...
    @property
    def segments(self) -> list[Segment]: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def offline(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def first_unstable_offset(self) -> int | None: ...
    def producer_last_offsets(self) -> dict[int, int]: ...
    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]: ...
    def replace_segments(self, new: Segment, old: list[Segment]) -> None: ...


# -- batch filtering and encoding (pure) ------------------------------------------------------


def key_digest(key: bytes) -> bytes:
    """The offset map's key: a 16-byte BLAKE2b digest of the record key."""
    return hashlib.blake2b(key, digest_size=16).digest()


def encode_batch(h: BatchHeader, records: Sequence[Record], delete_horizon: int | None) -> bytes:
    """Re-encode the kept `records` (non-empty, offsets within the batch) of the batch `h`.

    Keeps base offset, lastOffsetDelta, leader epoch, producer id/epoch/base sequence,
    timestamp type, transactional/control bits and the codec. Base timestamp: the delete
    horizon (bit 6 set) when given, else the first record's timestamp; max timestamp: the
    largest record timestamp (the old one for LogAppendTime batches).
    """
    if not records:
        raise ValueError("encode_batch needs at least one record")
    base_ts = delete_horizon if delete_horizon is not None else records[0].timestamp
    if h.timestamp_type == LOG_APPEND_TIME:
        max_ts = h.max_timestamp
    else:
        max_ts = max(r.timestamp for r in records)
    attributes = h.attributes & ~DELETE_HORIZON_BIT
    if delete_horizon is not None:
        attributes |= DELETE_HORIZON_BIT
    return rebuild_batch(
        h, records, attributes=attributes, base_timestamp=base_ts, max_timestamp=max_ts
    )


def empty_batch(h: BatchHeader) -> bytes:
    """Kafka's `writeEmptyHeader`: the batch's header with no records, uncompressed, base and
    max timestamp = the old max timestamp, no delete horizon."""
    attributes = h.attributes & ~(COMPRESSION_MASK | DELETE_HORIZON_BIT)
    ts = h.max_timestamp
    return rebuild_batch(h, (), attributes=attributes, base_timestamp=ts, max_timestamp=ts)


def delete_horizon_of(h: BatchHeader) -> int | None:
    return h.base_timestamp if h.attributes & DELETE_HORIZON_BIT else None


def filter_batch(
    data: bytes,
    h: BatchHeader,
    offset_map: Mapping[bytes, int],
    now_ms: int,
    delete_retention_ms: int,
    *,
    retain_empty: bool,
) -> bytes | None:
    """The cleaned form of one stored batch (`data`, header `h`): the same bytes, a re-encoded
    batch, an empty batch (`retain_empty`), or None (dropped). See the module doc.

    Raises InvalidBatch when the batch does not decode (CRC checked by the caller).
    """
    if h.is_control:
        return data
    records = decode_records(data, 0, max_decompressed_bytes=DECODE_CAP)
    horizon = delete_horizon_of(h)
    kept: list[Record] = []
    tombstones = False
    for rec in records:
        if rec.key is None:
            continue
        if rec.offset < offset_map.get(key_digest(rec.key), -1):
            continue
        if rec.value is None:
            if horizon is not None and now_ms >= horizon:
                continue
            tombstones = True
        kept.append(rec)
    if kept:
        set_horizon = tombstones and horizon is None
        if len(kept) == len(records) and not set_horizon:
            return data
        return encode_batch(h, kept, now_ms + delete_retention_ms if set_horizon else horizon)
    if retain_empty:
        return empty_batch(h)
    return None


# -- choosing what to clean -------------------------------------------------------------------


@dataclass
class LogToClean:
    """What a round would clean in one log (Kafka's `LogToClean`)."""

    key: Key
    plog: CleanableLog
    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment base offset: the round's upper bound U
    segments: list[Segment]  # every segment below U (the round rewrites them)
    dirty_segments: list[Segment]  # the ones the offset map is built from
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    reset_checkpoint: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def cleanable(self) -> bool:
        return (
            self.need_compaction_now and self.cleanable_bytes > 0
        ) or self.cleanable_ratio > self.plog.config.min_cleanable_dirty_ratio


def log_to_clean(key: Key, plog: CleanableLog, checkpoint: int | None, now_ms: int) -> LogToClean:
    """The cleanable range of `plog` given its cleaner checkpoint (see the module doc)."""
    cfg = plog.config
    segs = plog.segments
    bases = [s.base_offset for s in segs]
    start, end = plog.log_start_offset, plog.log_end_offset
    first_dirty = start if checkpoint is None else checkpoint
    reset = False
    if first_dirty < start or first_dirty > end:
        if checkpoint is not None and not cfg.delete:
            log.warning(
                "%s: cleaner checkpoint %d outside [%d, %d]; cleaning from the log start",
                plog.name,
                checkpoint,
                start,
                end,
            )
        first_dirty = start
        reset = checkpoint is not None
    di = max(bisect_right(bases, first_dirty) - 1, 0)
    non_active_dirty = segs[di:-1]
    limit = min(plog.high_watermark, segs[-1].base_offset)
    unstable = plog.first_unstable_offset
    if unstable is not None:  # Kafka: never clean an open transaction's data
        limit = min(limit, unstable)
    if cfg.min_compaction_lag_ms > 0:
        for seg in non_active_dirty:
            if seg.largest_timestamp() > now_ms - cfg.min_compaction_lag_ms:
                limit = min(limit, seg.base_offset)
                break
    limit = max(limit, first_dirty)
    ui = max(bisect_right(bases, limit) - 1, di)
    max_lag = max(cfg.max_compaction_lag_ms, 0)
    first_ts = [
        s.first_batch_timestamp
        for s in non_active_dirty
        if s.first_batch_timestamp is not None and s.first_batch_timestamp > 0
    ]
    need_now = bool(first_ts) and min(first_ts) < now_ms - max_lag
    return LogToClean(
        key=key,
        plog=plog,
        first_dirty_offset=first_dirty,
        first_uncleanable_offset=bases[ui],
        segments=segs[:ui],
        dirty_segments=segs[di:ui],
        clean_bytes=sum(s.size for s in segs[:di]),
        cleanable_bytes=sum(s.size for s in segs[di:ui]),
        need_compaction_now=need_now,
        reset_checkpoint=reset,
    )


def group_segments(
    segments: Sequence[Segment], segment_bytes: int, index_bytes: int, upper: int
) -> list[list[Segment]]:
    """Kafka's `groupSegmentsBySize`: consecutive segments whose .log sizes sum to at most
    `segment_bytes`, whose offset / time index sizes each sum to at most `index_bytes`, and
    whose offsets (estimated by the next base offset, or `upper` for the last) stay within
    int32 of the group's base."""
    groups: list[list[Segment]] = []
    i = 0
    n = len(segments)
    while i < n:
        group = [segments[i]]
        log_size = segments[i].size
        index_size = len(segments[i].index) * 8
        time_size = len(segments[i].time_index) * 12
        i += 1
        while i < n:
            nxt = segments[i]
            last = (segments[i + 1].base_offset if i + 1 < n else upper) - 1
            if (
                log_size + nxt.size > segment_bytes
                or index_size + len(nxt.index) * 8 > index_bytes
                or time_size + len(nxt.time_index) * 12 > index_bytes
                or (nxt.size > 0 and last - group[0].base_offset > INT32_MAX)
            ):
                break
            group.append(nxt)
            log_size += nxt.size
            index_size += len(nxt.index) * 8
            time_size += len(nxt.time_index) * 12
            i += 1
        groups.append(group)
    return groups


# -- transactions (Kafka's CleanedTransactionMetadata) ------------------------------------------


class _AbortedState:
    __slots__ = ("last_observed", "txn")

    def __init__(self, txn: AbortedTxn) -> None:
        self.txn = txn
        self.last_observed: int | None = None


class TxnCleaning:
    """Which transactional batches and markers a pass may drop (Kafka's rules).

    `aborted`: the aborted transactions overlapping the pass (from the `.txnindex` files),
    entered as the pass reaches their first offset. A transactional data batch of a producer
    with an entered aborted transaction is dropped (its offset remembered); one of any other
    producer marks that producer's transaction as committed-with-data. A COMMIT marker may
    go once no data of its transaction was seen in this pass; an ABORT marker once no data
    of its aborted transaction was seen (else it is kept and, when `cleaned_index` is given,
    its entry is copied there). A marker that may go is first given a delete horizon
    (now + delete.retention.ms) and removed by a later pass after it (KIP-534)."""

    def __init__(self, aborted: Sequence[AbortedTxn], cleaned_index: TxnIndex | None) -> None:
        self._pending = sorted(aborted, key=lambda t: t.first_offset)
        self._next = 0
        self._aborted: dict[int, _AbortedState] = {}
        self._committed: set[int] = set()
        self._index = cleaned_index

    def _enter_up_to(self, offset: int) -> None:
        pending = self._pending
        while self._next < len(pending) and pending[self._next].first_offset <= offset:
            txn = pending[self._next]
            self._aborted.setdefault(txn.producer_id, _AbortedState(txn))
            self._next += 1

    def on_batch(self, h: BatchHeader) -> bool:
        """A data batch: True when it belongs to an aborted transaction (drop it)."""
        self._enter_up_to(h.last_offset)
        if not h.is_transactional:
            return False
        state = self._aborted.get(h.producer_id)
        if state is not None:
            state.last_observed = h.last_offset
            return True
        self._committed.add(h.producer_id)
        return False

    def on_control(self, h: BatchHeader, data: bytes) -> bool:
        """A control batch: True when the marker may be discarded."""
        self._enter_up_to(h.last_offset)
        if h.records_count == 0:
            return True  # already emptied by an earlier pass
        try:
            kind, _ = parse_marker(data)
        except ControlError:
            return False
        if kind == ABORT:
            state = self._aborted.pop(h.producer_id, None)
            if state is not None and state.last_observed is not None:
                if self._index is not None:
                    self._index.append(state.txn)
                return False
            return True
        if h.producer_id in self._committed:
            self._committed.discard(h.producer_id)
            return False
        return True


# -- a cleaning round -------------------------------------------------------------------------


def _batches(seg: Segment) -> Iterator[tuple[int, BatchHeader, bytes]]:
    """(position, header, bytes) of every batch of `seg`, read in READ_WINDOW chunks.

    Raises CorruptSegment on bytes that are not whole batches."""
    fs, fd, end = seg.fs, seg.fd, seg.size
    pos = 0
    while pos < end:
        window = pread_exact(fs, fd, min(READ_WINDOW, end - pos), pos)
        p = 0
        while len(window) - p >= BATCH_HEADER_SIZE:
            try:
                h = parse_header(window, p)
            except InvalidBatch as exc:
                raise CorruptSegment(f"{seg.log_path.name} at {pos + p}: {exc}") from exc
            if h.size > end - pos - p:
                raise CorruptSegment(f"{seg.log_path.name}: batch at {pos + p} runs past the end")
            if h.size > len(window) - p:
                if p:
                    break
                data = pread_exact(fs, fd, h.size, pos)
                if len(data) != h.size:
                    raise CorruptSegment(f"{seg.log_path.name}: short read at {pos}")
                yield pos, h, data
                p = h.size
                break
            yield pos + p, h, window[p : p + h.size]
            p += h.size
        if p == 0:
            raise CorruptSegment(f"{seg.log_path.name}: {end - pos} stray bytes at {pos}")
        pos += p


def _checked(seg: Segment, pos: int, h: BatchHeader, data: bytes) -> bytes:
    if not verify_crc(data, 0, h):
        raise CorruptSegment(f"{seg.log_path.name}: CRC mismatch in the batch at {pos}")
    return data


class _Round:
    """One cleaning round of one log, run in steps by `LogCleaner.run` (see the module doc).

    `steps` yields the bytes read by each step (one batch); `end_offset` is the checkpoint to
    record when it is exhausted; `reclaimed` counts bytes saved by the swaps done so far.
    """

    def __init__(self, ltc: LogToClean, now_ms: int, max_map_entries: int) -> None:
        self.key = ltc.key
        self.plog = ltc.plog
        self.now_ms = now_ms
        self.max_map_entries = max_map_entries
        self.segments = ltc.segments
        self.dirty_segments = ltc.dirty_segments
        self.end_offset = ltc.first_uncleanable_offset
        self.reclaimed = 0
        self.groups_cleaned = 0
        self._watch = {id(s): (s, s.size) for s in ltc.segments}
        self.steps = self._run()

    def still_valid(self, logs: Mapping[Key, CleanableLog]) -> bool:
        plog = self.plog
        if logs.get(self.key) is not plog or plog.offline or plog.closed or not plog.config.compact:
            return False
        live = {id(s) for s in plog.segments}
        return all(id(s) in live and s.size == size for s, size in self._watch.values())

    def abort(self) -> None:
        self.steps.close()

    def _run(self) -> Generator[int, None, None]:
        offset_map: dict[bytes, int] = {}
        end = self.end_offset
        txns = None
        if self.dirty_segments:
            first = self.dirty_segments[0].base_offset
            txns = TxnCleaning(self.plog.aborted_transactions(first, end), None)
        for i, seg in enumerate(self.dirty_segments):
            if i > 0 and len(offset_map) >= self.max_map_entries:
                end = seg.base_offset
                break
            for pos, h, data in _batches(seg):
                if h.is_control:
                    if txns is not None:
                        txns.on_control(h, data)
                elif txns is None or not txns.on_batch(h):
                    _checked(seg, pos, h, data)
                    for rec in decode_records(data, 0, max_decompressed_bytes=DECODE_CAP):
                        if rec.key is not None:
                            offset_map[key_digest(rec.key)] = rec.offset
                yield h.size
        self.end_offset = end
        cfg = self.plog.config
        todo = [s for s in self.segments if s.base_offset < end]
        for group in group_segments(todo, cfg.segment_bytes, cfg.segment_index_bytes, end):
            yield from self._clean_group(group, offset_map, end)

    def _clean_group(
        self, group: list[Segment], offset_map: Mapping[bytes, int], end: int
    ) -> Generator[int, None, None]:
        plog = self.plog
        cfg = plog.config
        now = self.now_ms
        cleaned = Segment(
            plog.fs,
            plog.directory,
            group[0].base_offset,
            cfg,
            now,
            create=True,
            suffix=CLEANED_SUFFIX,
        )
        swapped = False
        try:
            producers = plog.producer_last_offsets()
            txns = TxnCleaning(
                plog.aborted_transactions(group[0].base_offset, end), cleaned.txn_index
            )
            pending: list[bytes] = []
            pending_bytes = 0
            for seg in group:
                for pos, h, data in _batches(seg):
                    if not h.is_control:
                        _checked(seg, pos, h, data)
                    retain_empty = h.next_offset == end or (
                        h.producer_id >= 0 and producers.get(h.producer_id) == h.last_offset
                    )
                    if h.is_control:
                        out = _filter_control(
                            data, h, txns.on_control(h, data), now, cfg, retain_empty
                        )
                    elif txns.on_batch(h):
                        out = empty_batch(h) if retain_empty else None
                    else:
                        out = filter_batch(
                            data,
                            h,
                            offset_map,
                            now,
                            cfg.delete_retention_ms,
                            retain_empty=retain_empty,
                        )
                    if out is not None:
                        pending.append(out)
                        pending_bytes += len(out)
                        if pending_bytes >= WRITE_BUFFER:
                            _append(cleaned, pending, now)
                            pending, pending_bytes = [], 0
                    yield h.size
            _append(cleaned, pending, now)
            cleaned.on_become_inactive()
            cleaned.flush()
            cleaned.last_modified_ms = group[-1].last_modified_ms
            before = sum(s.size for s in group)
            plog.replace_segments(cleaned, group)
            swapped = True
            for seg in group:
                self._watch.pop(id(seg), None)
            self.reclaimed += before - cleaned.size
            self.groups_cleaned += 1
        finally:
            if not swapped:
                if cleaned.log_path.name.endswith(CLEANED_SUFFIX):
                    cleaned.delete_files()  # before the commit point: drop the attempt
                else:
                    cleaned.close()  # after it: the files stay for the next load


def _filter_control(
    data: bytes, h: BatchHeader, may_go: bool, now_ms: int, cfg: LogConfig, retain_empty: bool
) -> bytes | None:
    """A marker: kept as is, given its delete horizon, or (past it) dropped."""
    if not may_go:
        return data
    horizon = delete_horizon_of(h)
    if horizon is None:
        if h.records_count == 0:
            return data
        records = decode_records(data, 0, max_decompressed_bytes=DECODE_CAP)
        return encode_batch(h, records, now_ms + cfg.delete_retention_ms)
    if now_ms < horizon:
        return data
    return empty_batch(h) if retain_empty else None


def _append(seg: Segment, batches: list[bytes], now_ms: int) -> None:
    if not batches:
        return
    buf = b"".join(batches)
    headers = []
    pos = 0
    for b in batches:
        headers.append((pos, parse_header(b)))
        pos += len(b)
    seg.append(buf, headers, now_ms)


# -- the cleaner ------------------------------------------------------------------------------


class LogCleaner:
    """Chooses logs to compact and cleans them in bounded steps (see the module doc).

    `checkpoints`: (topic, partition) -> first dirty offset (Kafka's cleaner checkpoint);
    LogManager loads and persists them (`changed`: keys whose value is not yet written).
    `max_map_entries` bounds the offset map of a round, `max_bytes_per_run` the bytes one
    `run` call reads.
    """

    def __init__(
        self,
        *,
        max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES,
        max_bytes_per_run: int = DEFAULT_MAX_BYTES_PER_RUN,
    ) -> None:
        if max_map_entries < 1 or max_bytes_per_run < 1:
            raise ValueError("cleaner limits must be positive")
        self.max_map_entries = max_map_entries
        self.max_bytes_per_run = max_bytes_per_run
        self.checkpoints: dict[Key, int] = {}
        self.changed: set[Key] = set()
        self.uncleanable: set[Key] = set()
        self.rounds_completed = 0
        self._round: _Round | None = None
        self._idle = False

    @property
    def has_work(self) -> bool:
        """True while a round is in progress or the last `run` did not find the cleaner idle
        (call `run` again soon); False after a `run` that found nothing to clean."""
        return self._round is not None or not self._idle

    @property
    def in_progress(self) -> Key | None:
        return self._round.key if self._round is not None else None

    def run(
        self, logs: Mapping[Key, CleanableLog], now_ms: int, max_bytes: int | None = None
    ) -> int:
        """Clean for at most `max_bytes` (default max_bytes_per_run) bytes read; returns the
        bytes reclaimed by the swaps done in this call. Never raises for a single log's
        storage trouble: the partition is marked uncleanable and logged."""
        budget = self.max_bytes_per_run if max_bytes is None else max_bytes
        reclaimed = 0
        self._idle = False
        rnd = self._round
        if rnd is not None and not rnd.still_valid(logs):
            log.info("%s-%d: log changed under the cleaner; abandoning the round", *rnd.key)
            self.abort()
        while budget > 0:
            rnd = self._round
            if rnd is None:
                rnd = self._start_round(logs, now_ms)
                if rnd is None:
                    self._idle = True
                    break
                self._round = rnd
            before = rnd.reclaimed
            try:
                budget -= max(next(rnd.steps), 1)
            except StopIteration:
                self._round = None
                self.checkpoints[rnd.key] = rnd.end_offset
                self.changed.add(rnd.key)
                self.rounds_completed += 1
                log.info(
                    "%s-%d: cleaned below offset %d (%d group(s), %d bytes reclaimed)",
                    *rnd.key,
                    rnd.end_offset,
                    rnd.groups_cleaned,
                    rnd.reclaimed,
                )
            except (OSError, LogError, CorruptSegment, InvalidBatch) as exc:
                self._round = None
                self.uncleanable.add(rnd.key)
                log.error("%s-%d: cleaning failed, partition marked uncleanable: %s", *rnd.key, exc)
            except Exception:
                self._round = None
                self.uncleanable.add(rnd.key)
                log.exception("%s-%d: cleaning failed, partition marked uncleanable", *rnd.key)
            except BaseException:
                self._round = None  # the generator is finished: never resume it
                raise
            reclaimed += rnd.reclaimed - before
        return reclaimed

    def _start_round(self, logs: Mapping[Key, CleanableLog], now_ms: int) -> _Round | None:
        best: LogToClean | None = None
        for key, plog in logs.items():
            if not plog.config.compact or plog.offline or plog.closed or key in self.uncleanable:
                continue
            ltc = log_to_clean(key, plog, self.checkpoints.get(key), now_ms)
            if ltc.reset_checkpoint:
                self.checkpoints[key] = ltc.first_dirty_offset
                self.changed.add(key)
            if (
                ltc.total_bytes > 0
                and ltc.cleanable
                and (best is None or ltc.cleanable_ratio > best.cleanable_ratio)
            ):
                best = ltc
        if best is None:
            return None
        return _Round(best, now_ms, self.max_map_entries)

    def abort(self) -> None:
        """Abandon the round in progress (its .cleaned files are deleted)."""
        rnd, self._round = self._round, None
        if rnd is not None:
            rnd.abort()

    def forget(self, key: Key) -> bool:
        """A partition is being deleted: abandon its round, drop its state. True when it had
        a checkpoint (the caller rewrites the checkpoint file)."""
        if self._round is not None and self._round.key == key:
            self.abort()
        self.uncleanable.discard(key)
        self.changed.discard(key)
        return self.checkpoints.pop(key, None) is not None
