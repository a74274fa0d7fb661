"""Synchronous partition storage: segments, indexes, recovery, retention (Kafka's log layer).

Modules (one concept each, as in Kafka):

- `config.LogConfig`           typed topic configs the log obeys
- `errors`                     `LogError` subclasses, each with its Kafka `ErrorCode`
- `fs`                         the `FileSystem` seam (`OsFileSystem`; tests inject faults)
- `index`                      `OffsetIndex` (.index) and `TimeIndex` (.timeindex)
- `segment.Segment`            one .log + its indexes: append, read, recover, truncate
- `leader_epoch`               epoch -> start offset cache (KIP-101/279)
- `producer_state`             idempotent producer sequences and epochs, snapshots
- `checkpoint`                 Kafka's checkpoint text formats, written atomically
- `segments.LogSegments`       the ordered segment set; crash-safe swap of cleaned segments
- `validator.LogValidator`     checks of a client append, offset assignment
- `loader.LogLoader`           recovery at open -> `LoadedLog`
- `cleaner.LogCleaner`         compaction (cleanup.policy=compact)
- `partition_log.PartitionLog` one partition directory: append/read/roll/retention/truncate
- `log_manager.LogManager`     log directories, loading, checkpoints, clean shutdown

Rules: no trio, no awaits, no clock reads (callers pass `now_ms`); bytes are handed to the
kernel with `os.write` before an append returns; every OSError surfaces as `StorageError`.
"""

from __future__ import annotations

from wirebroker.log.config import LogConfig
from wirebroker.log.errors import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTimestampError,
    LogError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
    StorageError,
)
from wirebroker.log.fs import FileSystem, OsFileSystem
from wirebroker.log.log_manager import LogManager
from wirebroker.log.partition_log import AppendResult, PartitionLog

__all__ = [
    "AppendResult",
    "CorruptRecordError",
    "FileSystem",
    "InvalidProducerEpochError",
    "InvalidRecordError",
    "InvalidTimestampError",
    "LogConfig",
    "LogError",
    "LogManager",
    "OffsetOutOfRangeError",
    "OsFileSystem",
    "OutOfOrderSequenceError",
    "PartitionLog",
    "RecordTooLargeError",
    "StorageError",
]
