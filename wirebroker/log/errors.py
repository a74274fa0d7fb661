"""Typed storage errors; each carries the Kafka `ErrorCode` a handler puts in its response.

Handlers map a caught `LogError` with `exc.error_code`, no tables of their own.
"""

from __future__ import annotations

from typing import ClassVar

from protocol.errors import ErrorCode

__all__ = [
    "CorruptRecordError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "LogError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "RecordTooLargeError",
    "StorageError",
]


class LogError(Exception):
    """Base class of every storage error."""

    error_code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN


class CorruptRecordError(LogError):
    """CRC mismatch, or a batch whose lengths do not add up (truncated, trailing bytes)."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(LogError):
    """A well-formed batch Kafka refuses: magic != 2, base offset != 0, bad record count,
    control batch from a client, bad compressed data, keyless record in a compacted topic."""

    error_code = ErrorCode.INVALID_RECORD


class RecordTooLargeError(LogError):
    """A batch larger than the topic's max.message.bytes."""

    error_code = ErrorCode.MESSAGE_TOO_LARGE


class InvalidTimestampError(LogError):
    """A CreateTime timestamp outside message.timestamp.{before,after}.max.ms of now, or a
    client batch that claims LogAppendTime."""

    error_code = ErrorCode.INVALID_TIMESTAMP


class OutOfOrderSequenceError(LogError):
    """Idempotent producer: a sequence gap, or a new epoch not starting at sequence 0."""

    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpochError(LogError):
    """Idempotent producer: a batch from an older epoch than the last one seen."""

    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class OffsetOutOfRangeError(LogError):
    """A read below the log start offset or above the log end offset; DeleteRecords above
    the high watermark."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class StorageError(LogError):
    """An OSError while reading or writing, or a log taken offline after one."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR
