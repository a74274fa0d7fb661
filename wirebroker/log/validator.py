"""`LogValidator`: the checks of a client append and its offset assignment (Kafka's
`LogValidator` / `analyzeAndValidateRecords`).

`validate(buf, now_ms, batches)` checks every v2 batch of a Produce append without
decompressing (except for compacted topics, whose keys are checked by the streamed
`check_records`): magic, lengths, base offset 0, max.message.bytes, CRC-32C, record count ==
last offset delta + 1, known codec, no control batches, idempotent batches carry a sequence,
no client LogAppendTime, CreateTime within message.timestamp.{before,after}.max.ms of now.
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

from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    InvalidBatch,
    NullKeyError,
    check_records,
    parse_header,
    stamp_batch,
    verify_crc,
)
from wirebroker.log.config import DECODE_CAP, LogConfig
from wirebroker.log.errors import (
    CorruptRecordError,
    InvalidRecordError,
    InvalidTimestampError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)

__all__ = ["Batches", "LogValidator"]

_MAGIC_POS = 16

Batches = list[tuple[int, BatchHeader]]


class LogValidator:
    """Validates client appends against one log's config (see the module doc)."""

    def __init__(self, config: LogConfig) -> None:
        self.config = config

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
        if h.timestamp_type == 1:
            raise InvalidTimestampError("producers may not set LogAppendTime")
        if not cfg.log_append_time:
            self._check_timestamps(h, now_ms)
        if cfg.compact:
            try:  # streamed: no record objects, about 1 MiB of decompressed bytes
                check_records(buf, pos, require_keys=True, max_decompressed_bytes=DECODE_CAP)
            except NullKeyError:
                raise InvalidRecordError(
                    "compacted topic cannot accept a record without key"
                ) from None
            except InvalidBatch as exc:
                raise InvalidRecordError(f"undecodable batch: {exc}") from None

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

    def _check_timestamps(self, h: BatchHeader, now_ms: int) -> None:
        cfg = self.config
        if h.max_timestamp >= 0 and h.max_timestamp > now_ms + cfg.message_timestamp_after_max_ms:
            raise InvalidTimestampError(
                f"timestamp {h.max_timestamp} is more than "
                f"{cfg.message_timestamp_after_max_ms} ms after now ({now_ms})"
            )
        if h.base_timestamp >= 0 and (
            h.base_timestamp < now_ms - cfg.message_timestamp_before_max_ms
        ):
            raise InvalidTimestampError(
                f"timestamp {h.base_timestamp} is more than "
                f"{cfg.message_timestamp_before_max_ms} ms before now ({now_ms})"
            )

    def assign_offsets(
        self,
        buf: bytearray | memoryview,
        batches: Batches,
        first_offset: int,
        leader_epoch: int,
        now_ms: int,
    ) -> Batches:
        """Stamp offsets from `first_offset`, the leader epoch and (LogAppendTime topics)
        `now_ms` into `buf`; -> the stamped (position, header) per batch."""
        log_append_time = now_ms if self.config.log_append_time else None
        stamped: Batches = []
        offset = first_offset
        for pos, h in batches:
            new = stamp_batch(
                buf,
                pos,
                base_offset=offset,
                partition_leader_epoch=leader_epoch,
                log_append_time=log_append_time,
                header=h,
            )
            stamped.append((pos, new))
            offset += h.last_offset_delta + 1
        return stamped
