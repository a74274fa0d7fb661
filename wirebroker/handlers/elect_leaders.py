"""ElectLeaders (key 43), versions 0-2.

In a cluster (`TopicAdmin.elect_leaders`, wirebroker.cluster.zk_topic_admin): a preferred
election asks the controller through /admin/preferred_replica_election and answers once the
preferred replica leads (NONE), PREFERRED_LEADER_NOT_AVAILABLE when it is dead or out of sync,
ELECTION_NOT_NEEDED when it already leads; REQUEST_TIMED_OUT after timeout_ms. An unclean
election (KIP-460) answers ELECTION_NOT_NEEDED for a led partition,
ELIGIBLE_LEADERS_NOT_AVAILABLE for one without a live replica, and otherwise asks the
controller through /wirebroker/unclean_leader_election, which elects the first live replica
even out of sync; NONE once it leads, REQUEST_TIMED_OUT after timeout_ms.

On a single broker every partition is always led by its preferred (and only) replica: there is
never an election to run. As Kafka's controller answers then:

    election_type   0 preferred, 1 unclean (v1+; v0 is always preferred); any other value
                    answers top-level INVALID_REQUEST (v1+) with no results
    topic_partitions listed     one result per listed partition, in request order (duplicates
                                answered once): ELECTION_NOT_NEEDED for an existing
                                partition, UNKNOWN_TOPIC_OR_PARTITION (with a message) for an
                                unknown topic or partition index
    topic_partitions null       "every partition": Kafka reports only the partitions whose
                                election ran or failed, so the result list is empty

Top-level error_code (v1+) is NONE otherwise. Skipped: authorization, timeout_ms (nothing to
wait for).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.elect_leaders import (
        ElectLeadersRequest,
        ElectLeadersResponse,
        PartitionResult,
        ReplicaElectionResult,
    )

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."

Outcome = tuple[int, "str | None"]


def _answers(
    req: ElectLeadersRequest, outcome: Callable[[str, int], Outcome]
) -> list[ReplicaElectionResult]:
    """The listed topic_partitions echoed, each partition with `outcome(topic, index)`."""
    results: list[ReplicaElectionResult] = []
    for entry in req["topic_partitions"] or []:
        partition_result: list[PartitionResult] = []
        for index in entry["partitions"]:
            code, message = outcome(entry["topic"], index)
            partition_result.append(
                {"partition_id": index, "error_code": code, "error_message": message}
            )
        results.append({"topic": entry["topic"], "partition_result": partition_result})
    return results


def _unknown_type(req: ElectLeadersRequest, election_type: int) -> ElectLeadersResponse:
    asked = req["topic_partitions"]
    message = f"Unknown election type {election_type}"
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE if asked == [] else ErrorCode.INVALID_REQUEST,
        "replica_election_results": _answers(
            req, lambda _topic, _index: (ErrorCode.INVALID_REQUEST, message)
        ),
    }


def _every_partition(elected: dict[tuple[str, int], Outcome]) -> list[ReplicaElectionResult]:
    """ "Every partition" (topic_partitions null): only the elections that ran or failed."""
    results: list[ReplicaElectionResult] = []
    by_topic: dict[str, list[PartitionResult]] = {}
    for (topic, index), (code, message) in elected.items():
        if code == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        if topic not in by_topic:
            by_topic[topic] = []
            results.append({"topic": topic, "partition_result": by_topic[topic]})
        by_topic[topic].append(
            {"partition_id": index, "error_code": code, "error_message": message}
        )
    return results


def _denied(req: ElectLeadersRequest) -> ElectLeadersResponse:
    """Without ALTER on the cluster: the error at the top and for every partition named."""
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    results = [
        {
            "topic": entry["topic"],
            "partition_result": [
                {"partition_id": int(i), "error_code": code, "error_message": None}
                for i in entry["partitions"]
            ],
        }
        for entry in req["topic_partitions"] or []
    ]
    return cast(
        "ElectLeadersResponse",
        {"throttle_time_ms": 0, "error_code": code, "replica_election_results": results},
    )


@handler(ApiKey.ELECT_LEADERS)
async def handle(ctx: RequestContext, req: ElectLeadersRequest) -> ElectLeadersResponse:
    election_type = int(req.get("election_type", PREFERRED)) if ctx.api_version >= 1 else 0
    if election_type not in (PREFERRED, UNCLEAN):
        return _unknown_type(req, election_type)
    if not _authz.cluster(ctx):  # ALTER
        return _denied(req)
    view = ctx.services.cluster
    asked = [
        (entry["topic"], int(index))
        for entry in req["topic_partitions"] or []
        for index in entry["partitions"]
    ]
    if req["topic_partitions"] is None:
        asked = [(info.name, i) for info in view.all_topics() for i in range(info.partitions)]
    elected = await ctx.services.admin.elect_leaders(
        list(dict.fromkeys(asked)),
        preferred=election_type == PREFERRED,
        timeout_s=max(int(req.get("timeout_ms", 60000)), 0) / 1000,
    )

    def outcome(topic: str, index: int) -> Outcome:
        info = view.topic(topic)
        if info is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
        if not 0 <= index < info.partitions:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{index}"
        if elected is not None and (topic, index) in elected:
            return elected[(topic, index)]
        return ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED_MESSAGE

    if req["topic_partitions"] is None:
        results = _every_partition(elected or {})
    else:
        results = _answers(req, outcome)
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "replica_election_results": results,
    }
