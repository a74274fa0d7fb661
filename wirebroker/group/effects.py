"""What the pure coordinator core hands back to its runtime: responses, completions, records.

Every core call returns a `Result`:
    response     the caller's own response (APIs that never wait), a dict with the
                 snake_case field names of Kafka's JSON message definitions;
    completions  `Completion(key, response)` for parked JoinGroup / SyncGroup requests that
                 this call (or timer tick) answered -- the caller's own one too when it was
                 answered at once;
    records      `Record(partition, key, value)` to append to `__consumer_offsets`.

Contract for the runtime: append `records` (in order; those of one partition as one batch)
BEFORE sending `response` or any completion -- an offset commit or a new assignment is
acknowledged only once it is in the log. If the append fails, do not send the responses:
answer every waiting request with `append_error_to_response_error(error)`, then call the
core's `unload(partitions)` and reload those partitions from the log (the core applied the
change optimistically, as Kafka does before it reverts to its last committed snapshot).

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
from typing import Any

from protocol.errors import ErrorCode

Response = dict[str, Any]


@dataclass(frozen=True)
class Completion:
    key: Hashable
    response: Response


@dataclass(frozen=True)
class Record:
    """A `__consumer_offsets` record: `value` None is a tombstone."""

    partition: int
    key: bytes
    value: bytes | None


@dataclass
class Result:
    response: Response | None = None
    completions: list[Completion] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)

    def partitions(self) -> set[int]:
        """The `__consumer_offsets` partitions this result writes to."""
        return {r.partition for r in self.records}


@dataclass(frozen=True)
class Parked:
    """A JoinGroup / SyncGroup request waiting for the group: runtime key + API version."""

    key: Hashable
    api_version: int


def join_response(
    api_version: int,
    *,
    error: ErrorCode = ErrorCode.NONE,
    member_id: str = "",
    generation_id: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str = "",
    skip_assignment: bool = False,
    members: list[dict[str, Any]] | None = None,
) -> Response:
    """A JoinGroup response body. Like Kafka's `JoinGroupResponse`: below v7 a null protocol
    name is sent as "", from v7 an empty one as null."""
    if api_version < 7 and protocol_name is None:
        protocol_name = ""
    elif api_version >= 7 and protocol_name == "":
        protocol_name = None
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "generation_id": generation_id,
        "protocol_type": protocol_type,
        "protocol_name": protocol_name,
        "leader": leader,
        "skip_assignment": skip_assignment,
        "member_id": member_id,
        "members": members if members is not None else [],
    }


def sync_response(
    *,
    error: ErrorCode = ErrorCode.NONE,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    assignment: bytes = b"",
) -> Response:
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "protocol_type": protocol_type,
        "protocol_name": protocol_name,
        "assignment": assignment,
    }


def append_error_to_response_error(error: ErrorCode) -> ErrorCode:
    """Map a failed `__consumer_offsets` append to the error a group client understands
    (Kafka's `appendGroupMetadataErrorToResponseError`)."""
    if error in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
    ):
        return ErrorCode.UNKNOWN
    return error
