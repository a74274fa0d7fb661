"""Replays one `__transaction_state` partition into transaction metadata.

Records are applied in log order: the latest value of a key wins, a tombstone (null value)
removes the id, keys of another record type (key version other than 0) are skipped, as
Kafka's `TransactionStateManager.loadTransactionMetadata` does. An undecodable record is an
error (`TxnRecordError`): the partition is corrupt, and loading stops rather than guess.
What the coordinator does with what was loaded (`TxnCoordinatorCore.complete_loading`):
PrepareCommit/PrepareAbort transactions get their markers written again, then complete;
Ongoing transactions simply continue (their producer may still end them, or they time out).
"""

from __future__ import annotations

from collections.abc import Iterable

from protocol.txn_records import decode_key, decode_value
from wirebroker.txn.metadata import TxnMetadata


def replay(
    records: Iterable[tuple[bytes | memoryview, bytes | memoryview | None]],
) -> dict[str, TxnMetadata]:
    """(key, value) pairs of one partition, in offset order -> transactional id -> metadata."""
    values: dict[str, bytes | memoryview] = {}
    for key, value in records:
        tid = decode_key(key)
        if isinstance(tid, int):
            continue
        if value is None:
            values.pop(tid, None)
        else:
            values[tid] = value
    return {tid: TxnMetadata.from_value(tid, decode_value(v)) for tid, v in values.items()}
