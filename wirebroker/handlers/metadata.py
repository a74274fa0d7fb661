"""Metadata (API key 3): serves v0-13.

Brokers, controller_id and every partition's leader, leader epoch, replicas, ISR and offline
replicas come from `services.cluster` (`wirebroker.cluster.view`): a single broker lists itself
and is the controller; in a cluster the view mirrors ZooKeeper, a partition without a live
leader answers LEADER_NOT_AVAILABLE with leader -1, and only live brokers are listed.

Which topics:
    v0: [] means every topic; v1+: null means every topic, [] none.
    v10+ entries with a non-zero topic_id are looked up by id (when any entry has one, names are
    ignored, as in Kafka); an unknown id answers UNKNOWN_TOPIC_ID with a null name (v12+; "" for
    v10-11, whose name is not nullable) and no partitions.
    Duplicate names are answered once, in request order; "all topics" is sorted by name.

A requested name that does not exist:
    illegal name (see cluster.names)            INVALID_TOPIC_EXCEPTION
    internal topic (__consumer_offsets ...)     UNKNOWN_TOPIC_OR_PARTITION: never auto-created
                                                here (the group coordinator creates it)
    auto.create.topics.enable and (v4+)         created now with num.partitions and
      allow_auto_topic_creation                 default.replication.factor, and answered with
                                                error NONE and its partitions. Kafka creates it
                                                through the controller and may first answer
                                                LEADER_NOT_AVAILABLE; clients retry on that, so
                                                answering with the ready topic is only faster.
                                                A creation error answers its code (e.g.
                                                INVALID_TOPIC_EXCEPTION when the name collides
                                                with an existing one once '.' and '_' are
                                                unified); a creation already under way (another
                                                request's) is waited for like ours. Not ready
                                                within 2 s: LEADER_NOT_AVAILABLE
    otherwise                                   UNKNOWN_TOPIC_OR_PARTITION

Topic fields: error_code, name, topic_id (v10+), is_internal, partitions (error NONE,
partition_index, leader_id, leader_epoch (v7+), replica_nodes, isr_nodes, offline_replicas).
Authorized operations (v8+): there are no ACLs, so everything is allowed. When asked for
(include_topic_authorized_operations / include_cluster_authorized_operations v8-10) the answer
is the bit set of every operation Kafka defines for the resource (bit n = AclOperation code n):
topic READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS; cluster
CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE
(Kafka 4.4's answer without an authorizer: not CREATE_TOKENS / DESCRIBE_TOKENS). Otherwise
-2147483648 ("not provided"), as Kafka.
v13 top-level error_code: always NONE.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.cluster.errors import ClusterError, TopicExistsError
from wirebroker.cluster.names import is_internal, validate_topic_name
from wirebroker.cluster.topic_admin import NewTopic
from wirebroker.cluster.topic_store import TopicInfo
from wirebroker.handlers._topics import NIL_UUID, resolve_topic
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.metadata import (
        MetadataRequest,
        MetadataResponse,
        MetadataResponsePartition,
        MetadataResponseTopic,
    )
    from wirebroker.cluster.topic_store import TopicInfo
    from wirebroker.handlers.context import RequestContext

__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CLUSTER_ALL_OPERATIONS",
    "TOPIC_ALL_OPERATIONS",
    "handle",
]

log = logging.getLogger(__name__)

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


_AUTO_CREATE_WAIT_S = 2.0


def _bits(*codes: int) -> int:
    out = 0
    for code in codes:
        out |= 1 << code
    return out


# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8,
# CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12,
# CREATE_TOKENS 13, DESCRIBE_TOKENS 14.
TOPIC_ALL_OPERATIONS = _bits(3, 4, 5, 6, 7, 8, 10, 11)
CLUSTER_ALL_OPERATIONS = _bits(5, 7, 8, 9, 10, 11, 12)  # 8096, as Kafka 4.4 (and DescribeCluster)


def _topic_entry(ctx: RequestContext, info: TopicInfo, ops: int) -> MetadataResponseTopic:
    # One comprehension, and the partitions' own replica/ISR lists (the response is encoded
    # before anything can change them): a 1,000-partition topic is answered often.
    partitions: list[MetadataResponsePartition] = [
        {
            "error_code": part.error_code,
            "partition_index": part.index,
            "leader_id": part.leader,
            "leader_epoch": part.leader_epoch,
            "replica_nodes": part.replicas,
            "isr_nodes": part.isr,
            "offline_replicas": part.offline,
        }
        for part in ctx.services.cluster.partitions(info.name)
    ]
    return {
        "error_code": 0,
        "name": info.name,
        "topic_id": info.topic_id,
        "is_internal": info.is_internal,
        "partitions": partitions,
        "topic_authorized_operations": ops,
    }


def _missing(
    name: str | None, code: ErrorCode, *, topic_id: uuid.UUID = NIL_UUID, internal: bool = False
) -> MetadataResponseTopic:
    return {
        "error_code": int(code),
        "name": name,
        "topic_id": topic_id,
        "is_internal": internal,
        "partitions": [],
        "topic_authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
    }


async def _unknown_name(
    ctx: RequestContext, name: str, *, allow_create: bool, ops: int
) -> MetadataResponseTopic:
    try:
        validate_topic_name(name)
    except ClusterError as exc:
        return _missing(name, exc.error_code)
    if is_internal(name):
        return _missing(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, internal=True)
    if not allow_create:
        return _missing(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    try:
        [created] = ctx.services.admin.create_topics([NewTopic(name)], now_ms=ctx.now_ms())
    except Exception:
        log.exception("auto-creating topic %r failed", name)
        return _missing(name, ErrorCode.UNKNOWN)
    if isinstance(created, TopicExistsError):
        pass  # another request is creating it: answer as for ours, once it is there
    elif isinstance(created, ClusterError):
        return _missing(name, created.error_code)
    elif not isinstance(created, TopicInfo):
        log.error("auto-creating topic %r failed: %s", name, created)
        return _missing(name, ErrorCode.UNKNOWN)
    else:
        log.info("auto-created topic %s with %d partition(s)", name, created.partitions)
    # Answer once the partitions have leaders (or LEADER_NOT_AVAILABLE after a short wait:
    # clients retry on it, as with Kafka).
    await ctx.services.admin.wait_settled([name], _AUTO_CREATE_WAIT_S)
    info = ctx.services.topics.get(name)
    if info is None:
        return _missing(name, ErrorCode.LEADER_NOT_AVAILABLE)
    return _topic_entry(ctx, info, ops)


@handler(ApiKey.METADATA)
async def handle(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse | None:
    version = ctx.api_version
    services = ctx.services
    store = services.topics
    config = services.config
    topic_ops = (
        TOPIC_ALL_OPERATIONS
        if req.get("include_topic_authorized_operations")
        else AUTHORIZED_OPERATIONS_OMITTED
    )
    cluster_ops = (
        CLUSTER_ALL_OPERATIONS
        if req.get("include_cluster_authorized_operations")
        else AUTHORIZED_OPERATIONS_OMITTED
    )
    allow_create = config.auto_create_topics and (
        version < 4 or bool(req.get("allow_auto_topic_creation", True))
    )

    requested = req.get("topics")
    topics_out: list[MetadataResponseTopic] = []
    if requested is None or (version == 0 and not requested):
        topics_out = [_topic_entry(ctx, info, topic_ops) for info in store.all()]
    else:
        ids = [tid for t in requested if (tid := t.get("topic_id")) is not None and tid != NIL_UUID]
        if ids:
            for topic_id in dict.fromkeys(ids):
                info, missing = resolve_topic(store, by_id=True, topic_id=topic_id)
                if info is None:
                    topics_out.append(
                        _missing(None if version >= 12 else "", missing, topic_id=topic_id)
                    )
                else:
                    topics_out.append(_topic_entry(ctx, info, topic_ops))
        else:
            names = [name for t in requested if (name := t.get("name")) is not None]
            for name in dict.fromkeys(names):
                info, _missing_code = resolve_topic(store, by_id=False, name=name)
                if info is not None:
                    topics_out.append(_topic_entry(ctx, info, topic_ops))
                else:
                    topics_out.append(
                        await _unknown_name(ctx, name, allow_create=allow_create, ops=topic_ops)
                    )

    return {
        "throttle_time_ms": 0,
        "brokers": [
            {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
            for b in services.cluster.live_brokers()
        ],
        "cluster_id": services.cluster_id,
        "controller_id": services.cluster.controller_id(),
        "topics": topics_out,
        "cluster_authorized_operations": cluster_ops,
        "error_code": 0,
    }
