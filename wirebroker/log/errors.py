"""Typed storage errors; each carries the Kafka `ErrorCode` a handler puts in its response.

Handlers map a caught `LogError` with `exc.error_code`, no tables of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.errors import ErrorCode
from wirebroker.errors import KafkaError

__all__ = [
    "CorruptRecordError",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "InvalidTxnStateError",
    "LogError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "RecordTooLargeError",
    "StorageError",
    "TransactionCoordinatorFencedError",
    "UnexpectedAppendOffsetError",
    "UnreadableRecordsError",
]


class LogError(KafkaError):
    """Base class of every storage error.

    `record_errors`: when a batch is refused for some of its records (Kafka's
    RecordValidationException: INVALID_RECORD or INVALID_TIMESTAMP), the (batch index,
    message) of each such record, which Produce answers in `record_errors` with `str(exc)` as
    its `error_message`; empty for a refusal of the batch as a whole."""

    def __init__(self, *args: object, record_errors: Sequence[tuple[int, str]] = ()) -> None:
        super().__init__(*args)
        self.record_errors: tuple[tuple[int, str], ...] = tuple(record_errors)


class CorruptRecordError(LogError, code=ErrorCode.CORRUPT_MESSAGE):
    """CRC mismatch, or a batch whose lengths do not add up (truncated, trailing bytes)."""


class InvalidRecordError(LogError, code=ErrorCode.INVALID_RECORD):
    """A well-formed batch Kafka refuses: magic != 2, base offset != 0, bad record count,
    control batch from a client, bad compressed data; or keyless records in a compacted topic
    (with `record_errors`)."""


class UnreadableRecordsError(LogError, code=ErrorCode.UNKNOWN):
    """Compressed records Kafka's reader refuses with an exception it does not expect there (an
    LZ4 frame it does not support: `protocol.lz4_frame`); Kafka answers UNKNOWN_SERVER_ERROR."""


class RecordTooLargeError(LogError, code=ErrorCode.MESSAGE_TOO_LARGE):
    """A batch larger than the topic's max.message.bytes."""


class InvalidTimestampError(LogError, code=ErrorCode.INVALID_TIMESTAMP):
    """Records with a CreateTime timestamp outside message.timestamp.{before,after}.max.ms of
    now, or claiming LogAppendTime (with `record_errors`)."""


class OutOfOrderSequenceError(LogError, code=ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER):
    """Idempotent producer: a sequence gap, or a new epoch not starting at sequence 0."""


class InvalidProducerEpochError(LogError, code=ErrorCode.INVALID_PRODUCER_EPOCH):
    """Idempotent producer: a batch from an older epoch than the last one seen."""


class InvalidTxnStateError(LogError, code=ErrorCode.INVALID_TXN_STATE):
    """A non-transactional batch from a producer with an ongoing transaction."""


class TransactionCoordinatorFencedError(LogError, code=ErrorCode.TRANSACTION_COORDINATOR_FENCED):
    """A marker from a coordinator epoch older than the last one seen for the producer."""


class OffsetOutOfRangeError(LogError, code=ErrorCode.OFFSET_OUT_OF_RANGE):
    """A read below the log start offset or above the log end offset; DeleteRecords above
    the high watermark."""


class StorageError(LogError, code=ErrorCode.KAFKA_STORAGE_ERROR):
    """An OSError while reading or writing, or a log taken offline after one."""


class UnexpectedAppendOffsetError(LogError, code=ErrorCode.UNKNOWN):
    """A follower append whose first batch starts below the log end offset, or whose batches
    do not follow each other (Kafka's UnexpectedAppendOffsetException): the follower's log and
    its fetch position disagree; the fetcher backs off and retries from its log end."""
