"""Transaction markers: Kafka's control batches (KIP-98 `EndTransactionMarker`).

A marker is a v2 batch with attributes transactional (bit 4) | control (bit 5), the
producer id and epoch of the transaction, base sequence -1, and exactly one record::

    key   (4 bytes)  version int16 = 0, type int16 (0 ABORT, 1 COMMIT)
    value (6 bytes)  version int16 = 0, coordinator_epoch int32

The broker writes markers itself (`PartitionLog.append_marker`, the coordinator's
WriteTxnMarkers); clients may not (the validator rejects control batches in Produce).
Pure: no I/O.
"""

from __future__ import annotations

import struct

from protocol.records import InvalidBatch, build_batch, decode_records

__all__ = ["ABORT", "COMMIT", "ControlError", "marker_batch", "parse_marker"]

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlError(ValueError):
    """A control batch whose record is not a transaction marker we understand."""


def marker_batch(
    producer_id: int, producer_epoch: int, *, commit: bool, coordinator_epoch: int, now_ms: int
) -> bytes:
    """A COMMIT/ABORT control batch (base offset 0, to be stamped by the log)."""
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    value = _VALUE.pack(0, coordinator_epoch)
    return build_batch(
        [(key, value)],
        base_timestamp=now_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
    )


def parse_marker(batch: bytes | bytearray | memoryview) -> tuple[int, int]:
    """(type, coordinator epoch) of the control batch `batch` (one whole batch)."""
    try:
        records = decode_records(batch, 0)
    except InvalidBatch as exc:
        raise ControlError(f"undecodable control batch: {exc}") from None
    if not records or records[0].key is None or len(records[0].key) < 4:
        raise ControlError("control batch without a control record key")
    version, kind = _KEY.unpack_from(records[0].key)
    if version != 0 or kind not in (ABORT, COMMIT):
        raise ControlError(f"unknown control record (version {version}, type {kind})")
    value = records[0].value
    coordinator_epoch = -1
    if value is not None and len(value) >= 6:
        coordinator_epoch = _VALUE.unpack_from(value)[1]
    return kind, coordinator_epoch
