"""`LogValidator`: the checks of a client append and its offset assignment (Kafka's
`LogValidator` / `analyzeAndValidateRecords`).

`validate(buf, now_ms, batches)` checks every v2 batch of a Produce append: magic, lengths,
base offset 0, max.message.bytes, CRC-32C, record count == last offset delta + 1, known
codec, no control batches, idempotent batches carry a sequence, an LZ4 frame Kafka's reader
takes (`protocol.lz4_frame`: its header and block layout, UNKNOWN_SERVER_ERROR as in Kafka)
(a refusal of the batch as a whole); then, record by record as Kafka's `validateRecord`
does, a key in a compacted topic and the timestamp: a CreateTime topic refuses a timestamp outside
[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms] (-1, "none", is
not checked), and a client batch that claims LogAppendTime is refused record by record in a
LogAppendTime topic or when it has no timestamp; in a CreateTime topic its timestamp (the
batch's maxTimestamp) is range-checked and the batch is stored as CreateTime (`assign_offsets`),
as Kafka does. A batch with refused records raises `InvalidRecordError` /
`InvalidTimestampError` (INVALID_TIMESTAMP when any refusal is a timestamp's) carrying Kafka's
`record_errors` and message texts (`LogError.record_errors`).

The records are only read when they may be refused (cost: none on the common path): a
compacted topic's keys by the streamed `check_records` (a null key found: then each record);
timestamps by the header (maxTimestamp past now + after.max.ms, a LogAppendTime batch), except
that a topic with a finite message.timestamp.before.max.ms has every record looked at (a record
may be older than the batch's first, baseTimestamp). Deviation: a client's maxTimestamp is
trusted for the after.max.ms check (Kafka recomputes it from the records).
It returns (position, header) per batch; headers parsed by the caller (`batches`, from
`iter_batches` over the same bytes) are reused, never parsed again.

`validate_replicated(buf)` checks batches a follower fetched from its leader, which keep their
offsets, epochs and timestamps: magic, lengths, CRC-32C, offsets increasing from batch to batch
(no size limit: the leader accepted them, as Kafka's appendAsFollower ignores max.message.bytes).

`assign_offsets` stamps base offsets, the leader epoch and LogAppendTime into the caller's
private copy and returns the stamped headers (built from the old ones, not re-parsed).
Pure: no I/O, no clock reads, no trio.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.lz4_frame import UnreadableFrame, check_lz4_frame
from protocol.records import (
    BATCH_HEADER_SIZE,
    LOG_APPEND_TIME,
    BatchHeader,
    InvalidBatch,
    NullKeyError,
    RecordSummary,
    check_records,
    iter_record_summaries,
    parse_header,
    stamp_batch,
    verify_crc,
)
from wirebroker.log.config import DECODE_CAP, LONG_MAX, LogConfig
from wirebroker.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
    UnreadableRecordsError,
)

__all__ = ["Batches", "LogValidator"]

_MAGIC_POS = 16
_NO_TIMESTAMP = -1
_LZ4 = 3

Batches = list[tuple[int, BatchHeader]]


def _java_long(value: int) -> int:
    """`value` as Kafka computes it in a Java long (wrapping around past 2**63 - 1)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _record_text(r: RecordSummary) -> str:
    """Kafka's DefaultRecord.toString (a null key or value counts 0 bytes)."""
    return (
        f"DefaultRecord(offset={r.offset}, timestamp={r.timestamp}, "
        f"key={max(r.key_size, 0)} bytes, value={max(r.value_size, 0)} bytes)"
    )


class LogValidator:
    """Validates client appends against one log's config (see the module doc); `partition`
    ("topic-N") names it in Kafka's record error messages."""

    def __init__(self, config: LogConfig, partition: str = "") -> None:
        self.config = config
        self.partition = partition

    def validate(
        self,
        buf: bytearray | memoryview,
        now_ms: int,
        batches: Sequence[tuple[int, BatchHeader]] | None = None,
    ) -> Batches:
        """Check every batch of `buf`; -> (position, header) per batch. `batches`: the
        headers of `buf` as `iter_batches` gave them (their chaining is checked)."""
        if not buf:
            raise InvalidRecordError("no record batch to append")
        if batches is not None:
            self._check_chain(buf, batches)
            for pos, h in batches:
                self._check_batch(buf, pos, h, now_ms)
            return list(batches)
        out = []
        pos = 0
        end = len(buf)
        while pos < end:
            h = self._header_at(buf, pos)
            self._check_batch(buf, pos, h, now_ms)
            out.append((pos, h))
            pos += h.size
        return out

    @staticmethod
    def _header_at(buf: bytes | bytearray | memoryview, pos: int) -> BatchHeader:
        end = len(buf)
        if end - pos < BATCH_HEADER_SIZE:
            raise CorruptRecordError(f"truncated batch header at {pos}")
        if buf[pos + _MAGIC_POS] != 2:
            raise InvalidRecordError(f"record batch magic {buf[pos + _MAGIC_POS]} != 2")
        try:
            h = parse_header(buf, pos)
        except InvalidBatch as exc:
            raise CorruptRecordError(str(exc)) from None
        if h.size > end - pos:
            raise CorruptRecordError(f"batch at {pos} runs past the end ({h.size} bytes)")
        return h

    @staticmethod
    def _check_chain(
        buf: bytearray | memoryview, batches: Sequence[tuple[int, BatchHeader]]
    ) -> None:
        expected = 0
        for pos, h in batches:
            if pos != expected:
                raise ValueError(f"batch headers do not match the records (batch at {pos})")
            expected = pos + h.size
        if expected != len(buf):
            raise ValueError("batch headers do not cover the records")

    def _check_batch(
        self, buf: bytearray | memoryview, pos: int, h: BatchHeader, now_ms: int
    ) -> None:
        cfg = self.config
        if h.base_offset != 0:
            raise InvalidRecordError(f"batch base offset must be 0, got {h.base_offset}")
        if h.size > cfg.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {h.size} bytes exceeds max.message.bytes {cfg.max_message_bytes}"
            )
        if not verify_crc(buf, pos, h):
            raise CorruptRecordError(f"batch at {pos}: CRC mismatch")
        if h.records_count <= 0 or h.last_offset_delta != h.records_count - 1:
            raise InvalidRecordError(
                f"inconsistent record count {h.records_count} / last offset delta "
                f"{h.last_offset_delta}"
            )
        if h.compression > 4:
            raise InvalidRecordError(f"unknown compression codec {h.compression}")
        if h.is_control:
            raise InvalidRecordError("clients may not write control batches")
        if h.producer_id >= 0 and h.base_sequence < 0:
            raise InvalidRecordError(f"producer {h.producer_id} batch without a sequence")
        if h.compression == _LZ4:  # the frame as Kafka's reader takes it, not decompressed
            try:
                payload = memoryview(buf)[pos + BATCH_HEADER_SIZE : pos + h.size]
                check_lz4_frame(payload, DECODE_CAP)
            except UnreadableFrame as exc:
                raise UnreadableRecordsError(f"batch at {pos}: {exc}") from None
        if self._records_may_be_refused(buf, pos, h, now_ms):
            self._check_each_record(buf, pos, h, now_ms)

    def _records_may_be_refused(
        self, buf: bytearray | memoryview, pos: int, h: BatchHeader, now_ms: int
    ) -> bool:
        """Whether a record of the batch may break a per-record rule (the module doc): only
        then are its records read one by one."""
        cfg = self.config
        if cfg.compact:
            try:  # streamed: no record objects, about 1 MiB of decompressed bytes
                check_records(buf, pos, require_keys=True, max_decompressed_bytes=DECODE_CAP)
            except NullKeyError:
                return True
            except InvalidBatch as exc:
                raise InvalidRecordError(f"undecodable batch: {exc}") from None
        log_append_batch = h.timestamp_type == LOG_APPEND_TIME
        if cfg.log_append_time:
            return log_append_batch
        if log_append_batch:  # every record's timestamp is the batch's maxTimestamp
            return h.max_timestamp == _NO_TIMESTAMP or not self._in_range(h.max_timestamp, now_ms)
        if cfg.message_timestamp_before_max_ms < LONG_MAX:
            return True
        return h.max_timestamp > now_ms + cfg.message_timestamp_after_max_ms

    def _in_range(self, timestamp: int, now_ms: int) -> bool:
        cfg = self.config
        return (
            now_ms - cfg.message_timestamp_before_max_ms
            <= timestamp
            <= now_ms + cfg.message_timestamp_after_max_ms
        )

    def _check_each_record(
        self, buf: bytearray | memoryview, pos: int, h: BatchHeader, now_ms: int
    ) -> None:
        """Kafka's validateRecord over every record: raise with the `record_errors` of the
        refused ones (the first rule each breaks), if any."""
        cfg = self.config
        range_checked = not cfg.log_append_time
        log_append_batch = h.timestamp_type == LOG_APPEND_TIME
        errors: list[tuple[int, str]] = []
        timestamps = False
        try:
            for r in iter_record_summaries(buf, pos, max_decompressed_bytes=DECODE_CAP):
                if cfg.compact and r.key_size < 0:
                    errors.append((r.index, self._keyless_text()))
                elif range_checked and r.timestamp != _NO_TIMESTAMP:
                    if not self._in_range(r.timestamp, now_ms):
                        errors.append((r.index, self._out_of_range_text(r, now_ms)))
                        timestamps = True
                elif log_append_batch:
                    errors.append(
                        (
                            r.index,
                            f"Invalid timestamp type in message {_record_text(r)}. Producer "
                            "should not set timestamp type to LogAppendTime.",
                        )
                    )
                    timestamps = True
        except InvalidBatch as exc:
            raise InvalidRecordError(f"undecodable batch: {exc}") from None
        if timestamps:
            raise InvalidTimestampError(
                "One or more records have been rejected due to invalid timestamp",
                record_errors=errors,
            )
        if errors:
            shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
            raise InvalidRecordError(
                f"One or more records have been rejected due to {len(errors)} record errors in "
                f"total, and only showing the first three errors at most: [{shown}]",
                record_errors=errors,
            )

    def _keyless_text(self) -> str:
        return (
            f"Compacted topic cannot accept message without key in topic partition {self.partition}"
        )

    def _out_of_range_text(self, r: RecordSummary, now_ms: int) -> str:
        cfg = self.config
        low = _java_long(now_ms - cfg.message_timestamp_before_max_ms)
        high = _java_long(now_ms + cfg.message_timestamp_after_max_ms)
        return (
            f"Timestamp {r.timestamp} of message with offset {r.offset} is out of range. The "
            f"timestamp should be within [{low}, {high}]"
        )

    def validate_replicated(self, buf: bytes | bytearray | memoryview) -> Batches:
        """Check every batch of a follower append; -> (position, header) per batch."""
        if not buf:
            raise InvalidRecordError("no record batch to append")
        out: Batches = []
        pos = 0
        end = len(buf)
        next_offset = -1
        while pos < end:
            h = self._header_at(buf, pos)
            if not verify_crc(buf, pos, h):
                raise CorruptRecordError(f"replicated batch at {pos}: CRC mismatch")
            if h.last_offset_delta < 0 or h.base_offset < next_offset:
                raise UnexpectedAppendOffsetError(
                    f"replicated batch at {pos} starts at {h.base_offset}, before {next_offset}"
                )
            next_offset = h.next_offset
            out.append((pos, h))
            pos += h.size
        return out

    def assign_offsets(
        self,
        buf: bytearray | memoryview,
        batches: Batches,
        first_offset: int,
        leader_epoch: int,
        now_ms: int,
    ) -> Batches:
        """Stamp offsets from `first_offset`, the leader epoch and (LogAppendTime topics)
        `now_ms` into `buf`; -> the stamped (position, header) per batch. In a CreateTime
        topic a client's LogAppendTime batch becomes CreateTime (the module doc)."""
        log_append_time = now_ms if self.config.log_append_time else None
        create_time = log_append_time is None
        stamped: Batches = []
        offset = first_offset
        for pos, h in batches:
            new = stamp_batch(
                buf,
                pos,
                base_offset=offset,
                partition_leader_epoch=leader_epoch,
                log_append_time=log_append_time,
                create_time=create_time,
                header=h,
            )
            stamped.append((pos, new))
            offset += h.last_offset_delta + 1
        return stamped
