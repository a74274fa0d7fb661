"""What the pure coordinator core hands back to its runtime: results, completions, records.

Every core call returns a `Result`:
    response     the caller's own typed result (APIs that never wait; `wirebroker.group
                 .messages`), from which the handler builds its version's response;
    completions  `Completion(key, result)` for parked JoinGroup / SyncGroup requests that
                 this call (or timer tick) answered -- the caller's own one too when it was
                 answered at once; `result` is a `JoinResult` or `SyncResult`;
    records      `Record(partition, key, value)` to append to `__consumer_offsets`.

Contract for the runtime: append `records` (in order; those of one partition as one batch)
and wait until they are replicated (acks=-1: the partition's high watermark past them) BEFORE
sending `response` or any completion -- an offset commit or a new assignment is acknowledged
only once it is in the log of every in-sync replica. If the append fails, do not send the
results as they are: answer with their `failed(error)` (error mapped by
`append_error_to_commit_error` for OffsetCommit, `append_error_to_response_error` for the
rest), then call the core's `unload(partitions)` and reload those partitions from the log (the
core applied the change optimistically, as Kafka does before it reverts to its last committed
snapshot). If only the replication wait fails (timeout, ISR below min.insync.replicas,
leadership lost), answer `failed(error)` the same way and keep the state: it matches the
leader's log, which holds the records.

Parked requests are identified by an opaque hashable `key` chosen by the runtime (a
connection + correlation id, say). A parked request is always answered exactly once: by a
later call, by `tick`, by `unload` (NOT_COORDINATOR), or -- when the same member sends a
newer JoinGroup/SyncGroup while an older one is still parked (a client retry over another
connection) -- the older one is answered with an error (UNKNOWN_MEMBER_ID for a join,
REBALANCE_IN_PROGRESS for a sync). Kafka leaves the superseded future dangling instead.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from protocol.errors import ErrorCode
from wirebroker.coordinator.errors import COMMIT_APPEND_ERRORS, GROUP_APPEND_ERRORS
from wirebroker.group.messages import ParkedResult

R = TypeVar("R")


@dataclass(frozen=True)
class Completion:
    key: Hashable
    result: ParkedResult


@dataclass(frozen=True)
class Record:
    """A `__consumer_offsets` record: `value` None is a tombstone. `producer_id` >= 0: a
    transactional offset commit, appended in a transactional batch of that producer and
    epoch (TxnOffsetCommit)."""

    partition: int
    key: bytes
    value: bytes | None
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass
class Result(Generic[R]):
    response: R | None = None
    completions: list[Completion] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)

    def partitions(self) -> set[int]:
        """The `__consumer_offsets` partitions this result writes to."""
        return {r.partition for r in self.records}


@dataclass(frozen=True)
class Parked:
    """A JoinGroup / SyncGroup request waiting for the group (the runtime's key)."""

    key: Hashable


class Effects:
    """Completions and records collected during one core call."""

    __slots__ = ("completions", "records")

    def __init__(self) -> None:
        self.completions: list[Completion] = []
        self.records: list[Record] = []

    def result(self, response: R | None = None) -> Result[R]:
        return Result(response=response, completions=self.completions, records=self.records)

    def complete(self, key: Hashable, result: ParkedResult) -> None:
        self.completions.append(Completion(key, result))


def append_error_to_response_error(error: ErrorCode) -> ErrorCode:
    """A failed `__consumer_offsets` append (or replication wait) as a group client sees it
    (Kafka's `appendGroupMetadataErrorToResponseError`; JoinGroup, SyncGroup, LeaveGroup,
    OffsetDelete, DeleteGroups): `wirebroker.coordinator.errors`, its group row."""
    return GROUP_APPEND_ERRORS(error)


def append_error_to_commit_error(error: ErrorCode) -> ErrorCode:
    """The same for OffsetCommit (Kafka's `GroupMetadataManager.storeOffsets`): a replication
    wait that runs out of offsets.commit.timeout.ms stays REQUEST_TIMED_OUT, records too large
    are INVALID_COMMIT_OFFSET_SIZE (`wirebroker.coordinator.errors`)."""
    return COMMIT_APPEND_ERRORS(error)
