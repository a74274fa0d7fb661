"""CreateTopics (key 19), versions 2-7.

Kafka 4.x semantics (KRaft: ControllerApis.createTopics + ReplicationControlManager), checked
in this order for each topic; the first failure is the topic's result:

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
                                    cannot be reached because only 1 broker(s) are registered."

`validate_only` runs every check and creates nothing (the result still carries a topic id,
as Kafka's does). -1 means the broker default (`num.partitions`, `default.replication.factor`).

Response: per topic `name`, `error_code`, `error_message` (null on success); v5+ on success
also `num_partitions`, `replication_factor`, `configs` (every topic config with value,
read_only, config_source, is_sensitive; sorted by name) and `topic_config_error_code` 0; v7
`topic_id`. Failed topics keep the defaults (-1, -1, [], zero uuid).

Skipped: authorization (every principal may create), CreateTopicPolicy, controller mutation
quotas (throttle_time_ms is always 0), `timeout_ms` (creation is synchronous).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.cluster.names import collision_key, has_collision_chars, validate_topic_name
from wirebroker.handlers._configs import (
    ConfigRequestError,
    describe_topic_configs,
    error_of,
    validate_topic_configs,
)
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.create_topics import (
        CreatableReplicaAssignment,
        CreatableTopic,
        CreatableTopicResult,
        CreateTopicsRequest,
        CreateTopicsResponse,
    )

CLUSTER_METADATA_TOPIC = "__cluster_metadata"


def _fail(code: ErrorCode, message: str | None) -> ConfigRequestError:
    return ConfigRequestError(code, message)


def _check_assignments(
    assignments: list[CreatableReplicaAssignment], node_id: int
) -> dict[int, list[int]]:
    """Kafka's manual-assignment checks (ReplicationControlManager.createTopic)."""
    out: dict[int, list[int]] = {}
    rf: int | None = None
    for a in assignments:
        index = int(a["partition_index"])
        if index in out:
            raise _fail(
                ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                f"Found multiple manual partition assignments for partition {index}",
            )
        replicas = [int(b) for b in a["broker_ids"]]
        if not replicas:
            raise _fail(
                ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        previous: int | None = None
        for broker in sorted(replicas):
            if broker != node_id:
                raise _fail(
                    ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"The manual partition assignment includes broker {broker}, but "
                    "no such broker is registered.",
                )
            if broker == previous:
                raise _fail(
                    ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {broker} more than once.",
                )
            previous = broker
        if rf is not None and len(replicas) != rf:
            raise _fail(
                ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                f"The manual partition assignment includes a partition with "
                f"{len(replicas)} replica(s), but this is not consistent with previous "
                f"partitions, which have {rf} replica(s).",
            )
        rf = len(replicas)
        out[index] = replicas
    for i in range(len(out)):
        if i not in out:
            raise _fail(
                ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
                "partitions should be a consecutive 0-based integer sequence",
            )
    return out


def _create_one(
    ctx: RequestContext, topic: CreatableTopic, validate_only: bool
) -> CreatableTopicResult:
    services = ctx.services
    config = services.config
    name: str = topic["name"]
    try:
        validate_topic_name(name)
    except Exception as exc:
        found = error_of(exc)
        if found is None:
            raise
        raise _fail(*found) from exc
    if services.topics.get(name) is not None:
        raise _fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if has_collision_chars(name):
        key = collision_key(name)
        for other in services.topics.all():
            if other.name != name and collision_key(other.name) == key:
                raise _fail(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {other.name}",
                )
    requested = {c["name"]: c["value"] for c in (topic["configs"] or [])}
    overrides = validate_topic_configs(requested)

    num_partitions = int(topic["num_partitions"])
    replication_factor = int(topic["replication_factor"])
    assignments: dict[int, list[int]] | None = None
    if topic["assignments"]:
        if replication_factor != -1:
            raise _fail(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor "
                "was not set to -1.",
            )
        if num_partitions != -1:
            raise _fail(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        assignments = _check_assignments(list(topic["assignments"]), services.node_id)
    elif replication_factor < -1 or replication_factor == 0:
        raise _fail(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    elif num_partitions < -1 or num_partitions == 0:
        raise _fail(
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    else:
        if num_partitions == -1:
            num_partitions = config.num_partitions
        if replication_factor == -1:
            replication_factor = int(str(config.raw("default.replication.factor")))
        brokers = 1
        if replication_factor > brokers:
            raise _fail(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication_factor} time(s): The "
                f"target replication factor of {replication_factor} cannot be reached "
                f"because only {brokers} broker(s) are registered.",
            )
    try:
        if assignments is not None:
            info = services.replicas.create_topic(
                name,
                -1,
                -1,
                overrides,
                now_ms=ctx.now_ms(),
                validate_only=validate_only,
                assignments=assignments,
            )
        else:
            info = services.replicas.create_topic(
                name,
                num_partitions,
                replication_factor,
                overrides,
                now_ms=ctx.now_ms(),
                validate_only=validate_only,
            )
    except Exception as exc:
        found = error_of(exc)
        if found is None:
            raise
        raise _fail(*found) from exc
    return {
        "name": name,
        "topic_id": info.topic_id,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "topic_config_error_code": ErrorCode.NONE,
        "num_partitions": info.partitions,
        "replication_factor": info.replication_factor,
        "configs": [e.creatable_dict() for e in describe_topic_configs(config, info.configs)],
    }


def _failed(name: str, code: ErrorCode, message: str | None) -> CreatableTopicResult:
    return {
        "name": name,
        "topic_id": uuid.UUID(int=0),
        "error_code": code,
        "error_message": message,
        "num_partitions": -1,
        "replication_factor": -1,
        "configs": [],
    }


@handler(ApiKey.CREATE_TOPICS)
async def handle(ctx: RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse:
    topics = list(req["topics"] or [])
    counts = Counter(t["name"] for t in topics)
    validate_only = bool(req.get("validate_only", False))
    results: list[CreatableTopicResult] = []
    for topic in topics:
        if counts[topic["name"]] > 1:
            continue
        if topic["name"] == CLUSTER_METADATA_TOPIC:
            results.append(
                _failed(
                    topic["name"],
                    ErrorCode.INVALID_REQUEST,
                    f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.",
                )
            )
            continue
        try:
            results.append(_create_one(ctx, topic, validate_only))
        except ConfigRequestError as exc:
            results.append(_failed(topic["name"], exc.error_code, exc.message))
    for name, count in counts.items():
        if count > 1:
            results.append(_failed(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
    return {"throttle_time_ms": 0, "topics": results}
