"""CreateTopics (key 19), versions 2-7.

Kafka 4.x semantics (KRaft: ControllerApis.createTopics + ReplicationControlManager). First,
for the request as a whole (every topic of it, duplicates included, answers the error):

    more than 10,000 partitions     POLICY_VIOLATION "Excessively large number of partitions per
      over all its topics (-1:      request."
      num.partitions; a manual
      assignment: its length)
    the topics it would create      POLICY_VIOLATION "Unable to perform excessively large batch
      take more than 10,000         operation." (Kafka's limit on the metadata records of one
      records (1 + partitions +     operation); checked with a validate-only pass first, so
      config overrides each)        nothing is created

Then, in this order for each topic; the first failure is the topic's result:

    duplicate name in the request   INVALID_REQUEST "Duplicate topic name." (one result per
                                    duplicated name, after the other results, as Kafka)
    __cluster_metadata              INVALID_REQUEST "Creation of internal topic ... prohibited."
    illegal name                    INVALID_TOPIC_EXCEPTION (message says why)
    exists                          TOPIC_ALREADY_EXISTS "Topic 'x' already exists."
    collides (a.b vs a_b)           INVALID_TOPIC_EXCEPTION "Topic 'a.b' collides with ..."
    null config value               INVALID_CONFIG "Null value not supported for topic configs: k"
    unknown config / bad value      INVALID_CONFIG "Unknown topic config name: k" /
                                    "Invalid value v for configuration k: <reason>"
    manual assignments              num_partitions and replication_factor must be -1, else
                                    INVALID_REQUEST; each replica list non-empty, brokers
                                    registered (only this node) and distinct, equal sizes,
                                    indexes 0..n-1 without repeats: INVALID_REPLICATION_ASSIGNMENT
    replication_factor 0 or < -1    INVALID_REPLICATION_FACTOR
    num_partitions 0 or < -1        INVALID_PARTITIONS
    replication factor > 1          INVALID_REPLICATION_FACTOR "Unable to replicate the
                                    partition 3 time(s): The target replication factor of 3
                                    cannot be reached because only 1 broker(s) are registered
                                    or some brokers have all their log directories cordoned."

`validate_only` runs every check and creates nothing (the result still carries a topic id,
as Kafka's does). -1 means the broker default (`num.partitions`, `default.replication.factor`).

Response: per topic `name`, `error_code`, `error_message` (null on success); v5+ on success
also `num_partitions`, `replication_factor`, `configs` (every topic config with value,
read_only, config_source, is_sensitive; sorted by name) and `topic_config_error_code` 0; v7
`topic_id`. Failed topics keep the defaults (-1, -1, [], zero uuid).

Last, the controller mutation quota (KIP-599; wirebroker.security.quota_manager): a topic
that passed every check takes its partitions from the `controller_mutation_rate` of (user,
client id); v6+ (strict): a topic met by an exhausted quota is THROTTLING_QUOTA_EXCEEDED (no
message) and not created; v2-5 (permissive): created; either way `throttle_time_ms` says how
long until the quota has room (the Dispatcher answers it and mutes the connection that
long). `validate_only` takes from the quota too, as Kafka 4.4's controller does. With a quota,
the request's topics are checked (validate_only) before they are counted and created.

Every check is `wirebroker.metadata.TopicAdmin`'s (one `create_topics` call for the request);
this handler only builds the request's `NewTopic`s and maps errors to codes.

Skipped: CreateTopicPolicy, `timeout_ms` (creation is synchronous).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.config import BrokerConfig
from wirebroker.handlers import _authz
from wirebroker.handlers._configs import describe_topic_configs
from wirebroker.handlers._topics import NIL_UUID
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler
from wirebroker.handlers.throttle import mutation_permit
from wirebroker.metadata.topic_admin import MAX_PARTITIONS_PER_REQUEST, CreateTopicResult, NewTopic
from wirebroker.metadata.topic_store import TopicInfo
from wirebroker.security.acls import AclOperation, ResourceType

if TYPE_CHECKING:
    from protocol.messages.create_topics import (
        CreatableTopic,
        CreatableTopicResult,
        CreateTopicsRequest,
        CreateTopicsResponse,
    )

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: Kafka's QuorumController: the most metadata records one operation may write
MAX_RECORDS_PER_OPERATION = 10_000
_TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
_TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


def _requested_partitions(topics: list[CreatableTopic], default: int) -> int:
    """Kafka's validateTotalNumberOfPartitions: the partitions the request asks for."""
    total = 0
    for t in topics:
        if t["assignments"]:
            total += len(t["assignments"])
        elif int(t["num_partitions"]) == -1:
            total += default
        elif int(t["num_partitions"]) > 0:
            total += int(t["num_partitions"])
    return total


def _records(outcomes: list[CreateTopicResult]) -> int:
    """The metadata records Kafka would write for the topics created: a TopicRecord, a
    PartitionRecord each, a ConfigRecord per override."""
    return sum(1 + o.partitions + len(o.configs) for o in outcomes if isinstance(o, TopicInfo))


def _whole_request_refused(ctx: RequestContext, topics: list[CreatableTopic]) -> str | None:
    """Why Kafka would refuse the request as a whole (module docstring), or None."""
    default = ctx.services.config.num_partitions
    if _requested_partitions(topics, default) > MAX_PARTITIONS_PER_REQUEST:
        return _TOO_MANY_PARTITIONS
    upper_bound = sum(
        1 + max(len(t["assignments"]), int(t["num_partitions"]), default) + len(t["configs"] or [])
        for t in topics
    )
    if upper_bound <= MAX_RECORDS_PER_OPERATION:
        return None
    counts = Counter(t["name"] for t in topics)
    wanted = [
        _new_topic(t)
        for t in topics
        if counts[t["name"]] == 1 and t["name"] != CLUSTER_METADATA_TOPIC
    ]
    checked = ctx.services.admin.create_topics(wanted, now_ms=ctx.now_ms(), validate_only=True)
    return _TOO_MANY_RECORDS if _records(checked) > MAX_RECORDS_PER_OPERATION else None


def _new_topic(topic: CreatableTopic) -> NewTopic:
    assignments = topic["assignments"]
    return NewTopic(
        name=topic["name"],
        num_partitions=int(topic["num_partitions"]),
        replication_factor=int(topic["replication_factor"]),
        configs={c["name"]: c["value"] for c in (topic["configs"] or [])},
        assignments=[
            (int(a["partition_index"]), [int(b) for b in a["broker_ids"]]) for a in assignments
        ]
        if assignments
        else None,
    )


def _created(config: BrokerConfig, info: TopicInfo, shown: bool = True) -> CreatableTopicResult:
    """A created topic's result; without `shown` (the principal may not DESCRIBE_CONFIGS it)
    Kafka 4.4's: TOPIC_AUTHORIZATION_FAILED as topic_config_error_code, counts -1, no configs."""
    if not shown:
        return {
            "name": info.name,
            "topic_id": info.topic_id,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "topic_config_error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": [],
        }
    return {
        "name": info.name,
        "topic_id": info.topic_id,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topic_config_error_code": ErrorCode.NONE,
        "num_partitions": info.partitions,
        "replication_factor": info.replication_factor,
        "configs": [e.creatable_dict() for e in describe_topic_configs(config, info.configs)],
    }


def _configs_shown(ctx: RequestContext, info: TopicInfo) -> bool:
    return _authz.allowed(ctx, ResourceType.TOPIC, info.name, AclOperation.DESCRIBE_CONFIGS)


def _failed(name: str, code: ErrorCode, message: str | None) -> CreatableTopicResult:
    return {
        "name": name,
        "topic_id": NIL_UUID,
        "error_code": code,
        "error_message": message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }


def _over_quota(ctx: RequestContext, asked: list[NewTopic]) -> set[str]:
    """Record the topics that pass every check against the controller mutation quota, in
    request order; the names it refuses (strict versions only)."""
    permit = mutation_permit(ctx)
    if permit.sensor is None or not asked:
        return set()
    now = ctx.now_ms()
    checked = ctx.services.admin.create_topics(asked, now_ms=now, validate_only=True)
    return {
        o.name for o in checked if isinstance(o, TopicInfo) and not permit.record(o.partitions, now)
    }


@handler(ApiKey.CREATE_TOPICS)
async def handle(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    topics = list(req["topics"] or [])
    refused = _whole_request_refused(ctx, topics)
    if refused is not None:
        failed = [_failed(t["name"], ErrorCode.POLICY_VIOLATION, refused) for t in topics]
        return {"throttle_time_ms": 0, "topics": failed}
    counts = Counter(t["name"] for t in topics)
    validate_only = bool(req.get("validate_only", False))
    wanted = [t for t in topics if counts[t["name"]] == 1]
    denied: set[str] = set()
    if _authz.enabled(ctx) and not _authz.cluster(ctx):  # CREATE on the cluster, or the topic
        denied = _authz.denied_names(ctx, ResourceType.TOPIC, (t["name"] for t in wanted))
    asked = [
        _new_topic(t)
        for t in wanted
        if t["name"] != CLUSTER_METADATA_TOPIC and t["name"] not in denied
    ]
    throttled = _over_quota(ctx, asked)
    created = ctx.services.admin.create_topics(
        [t for t in asked if t.name not in throttled],
        now_ms=ctx.now_ms(),
        validate_only=validate_only,
    )
    problems: dict[str, str] = {}
    if not validate_only:
        problems = await ctx.services.admin.wait_settled(
            [o.name for o in created if isinstance(o, TopicInfo)],
            max(int(req.get("timeout_ms", 60000)), 0) / 1000,
        )
    outcomes = iter(created)
    results: list[CreatableTopicResult] = []
    for topic in wanted:
        if topic["name"] in denied:
            results.append(
                _failed(
                    topic["name"], ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."
                )
            )
            continue
        if topic["name"] == CLUSTER_METADATA_TOPIC:
            message = f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited."
            results.append(_failed(topic["name"], ErrorCode.INVALID_REQUEST, message))
            continue
        if topic["name"] in throttled:
            results.append(_failed(topic["name"], ErrorCode.THROTTLING_QUOTA_EXCEEDED, None))
            continue
        outcome = next(outcomes)
        if isinstance(outcome, TopicInfo) and outcome.name in problems:
            results.append(
                _failed(outcome.name, ErrorCode.REQUEST_TIMED_OUT, problems[outcome.name])
            )
        elif isinstance(outcome, TopicInfo):
            results.append(_created(ctx.services.config, outcome, _configs_shown(ctx, outcome)))
        else:
            results.append(_failed(topic["name"], outcome.error_code, str(outcome) or None))
    for name, count in counts.items():
        if count > 1:
            results.append(_failed(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
    return {"throttle_time_ms": 0, "topics": results}
