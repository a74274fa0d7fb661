"""The one map from a failed internal-topic append to the error a coordinator answers (pure).

A coordinator appends its records to its internal topic with acks=-1 and answers only once
they are replicated; when the append or the replication wait fails, the client gets a
coordinator error it knows how to retry on, not the produce error (Kafka's
`appendGroupMetadataErrorToResponseError`, `GroupMetadataManager.storeOffsets`,
`TransactionStateManager.appendTransactionToLog`; coordinator-common's
`CoordinatorRuntime` does the same in the new group coordinator):

    raw error                                          answered
    UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS,   COORDINATOR_NOT_AVAILABLE (the client
    NOT_ENOUGH_REPLICAS_AFTER_APPEND                   looks the coordinator up again)
    REQUEST_TIMED_OUT                                  `timed_out` (COORDINATOR_NOT_AVAILABLE;
                                                       OffsetCommit keeps REQUEST_TIMED_OUT)
    NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR        NOT_COORDINATOR
    `too_large_errors` (MESSAGE_TOO_LARGE,             `too_large` (UNKNOWN; OffsetCommit
    RECORD_LIST_TOO_LARGE; groups: INVALID_FETCH_SIZE) INVALID_COMMIT_OFFSET_SIZE)
    anything else                                      itself

NOT_ENOUGH_REPLICAS_AFTER_APPEND is mapped like NOT_ENOUGH_REPLICAS (Kafka's ZooKeeper-mode
coordinators do) so the client retries. The three variants Kafka has are the instances below.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.errors import ErrorCode

__all__ = ["COMMIT_APPEND_ERRORS", "GROUP_APPEND_ERRORS", "TXN_APPEND_ERRORS", "AppendErrors"]

_TOO_LARGE = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


@dataclass(frozen=True)
class AppendErrors:
    """The table of the module docstring, with its variable cells."""

    timed_out: ErrorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE
    too_large: ErrorCode = ErrorCode.UNKNOWN
    too_large_errors: frozenset[ErrorCode] = _TOO_LARGE

    def __call__(self, error: ErrorCode) -> ErrorCode:
        if error in (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode.NOT_ENOUGH_REPLICAS,
            ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if error is ErrorCode.REQUEST_TIMED_OUT:
            return self.timed_out
        if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
            return ErrorCode.NOT_COORDINATOR
        if error in self.too_large_errors:
            return self.too_large
        return error


#: Group APIs (JoinGroup, SyncGroup, LeaveGroup, OffsetDelete, DeleteGroups).
GROUP_APPEND_ERRORS = AppendErrors(too_large_errors=_TOO_LARGE | {ErrorCode.INVALID_FETCH_SIZE})
#: OffsetCommit / TxnOffsetCommit: a timed-out replication wait stays REQUEST_TIMED_OUT
#: (retriable for every client).
COMMIT_APPEND_ERRORS = AppendErrors(
    timed_out=ErrorCode.REQUEST_TIMED_OUT,
    too_large=ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    too_large_errors=_TOO_LARGE | {ErrorCode.INVALID_FETCH_SIZE},
)
#: The transaction APIs (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn).
TXN_APPEND_ERRORS = AppendErrors()
