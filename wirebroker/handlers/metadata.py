"""Metadata (API key 3): serves v0-13.

Brokers, controller_id and every partition's leader, leader epoch, replicas, ISR and offline
replicas come from `services.cluster` (`wirebroker.metadata.view`): a single broker lists itself
and is the controller; in a cluster the view mirrors ZooKeeper, a partition without a live
leader answers LEADER_NOT_AVAILABLE with leader -1, and only live brokers are listed.

Which topics:
    v0: [] means every topic; v1+: null means every topic, [] none.
    v10+ entries with a non-zero topic_id are looked up by id (when any entry has one, names are
    ignored, as in Kafka); an unknown id answers UNKNOWN_TOPIC_ID with a null name (v12+; "" for
    v10-11, whose name is not nullable) and no partitions.
    Duplicate names are answered once, in request order; "all topics" is sorted by name.

A requested name that does not exist (as Apache Kafka 4.4 answers, checked against it by
tests/oracle/test_metadata_auto_create.py):
    illegal name (see cluster.names)            INVALID_TOPIC_EXCEPTION
    auto.create.topics.enable and (v4+)         creation starts (Kafka's AutoTopicCreationManager)
      allow_auto_topic_creation                 and the answer is UNKNOWN_TOPIC_OR_PARTITION, no
                                                partitions: the topic shows in the next Metadata
                                                once it exists (clients retry on this error).
                                                An ordinary name gets num.partitions and
                                                default.replication.factor; __consumer_offsets,
                                                __transaction_state and __share_group_state are
                                                made by their coordinators, with their own
                                                partition counts and configs. A creation
                                                refused (a name colliding
                                                once '.' and '_' are unified, a replication
                                                factor above the live brokers, a creation
                                                already under way) is only logged: the answer
                                                stays UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
                                                controller refuses it after the answer.
    otherwise                                   UNKNOWN_TOPIC_OR_PARTITION
    is_internal is Kafka's `Topic.isInternal` of the name in each of these answers.

Topic fields: error_code, name, topic_id (v10+), is_internal, partitions (error NONE,
partition_index, leader_id, leader_epoch (v7+), replica_nodes, isr_nodes, offline_replicas).
Authorization (with an authorizer, wirebroker.handlers._authz, as Kafka's KafkaApis): "all
topics" lists only those the principal may DESCRIBE; a named topic it may not describe is
answered TOPIC_AUTHORIZATION_FAILED whether it exists or not (no partitions, topic id zero,
is_internal false; asked by id: the id, a null name); a missing name the principal may
describe but not create (CREATE on the cluster or the topic) when auto-creation is on:
TOPIC_AUTHORIZATION_FAILED (is_internal of the name), nothing created. Authorized operations
are those of the resource's operations the principal may do; the cluster's (v8-10) 0 unless
it may DESCRIBE the cluster.
Authorized operations (v8+) without an authorizer: everything is allowed. When asked for
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
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.handlers import _authz
from wirebroker.handlers._topics import NIL_UUID, resolve_topic
from wirebroker.handlers.registry import handler
from wirebroker.metadata.errors import ClusterError, TopicExistsError
from wirebroker.metadata.names import is_internal, validate_topic_name
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.metadata.topic_store import TopicInfo
from wirebroker.security.acls import AclOperation, ResourceType
from wirebroker.security.authorizer import CLUSTER_NAME
from wirebroker.share_coordinator.config import SHARE_STATE_TOPIC
from wirebroker.txn.runtime import TXN_TOPIC

if TYPE_CHECKING:
    from protocol.messages.metadata import (
        MetadataRequest,
        MetadataResponse,
        MetadataResponsePartition,
        MetadataResponseTopic,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.metadata.topic_store import TopicInfo

__all__ = [
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CLUSTER_ALL_OPERATIONS",
    "TOPIC_ALL_OPERATIONS",
    "handle",
]

log = logging.getLogger(__name__)

AUTHORIZED_OPERATIONS_OMITTED = -2147483648


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


def _unknown_name(ctx: RequestContext, name: str, *, allow_create: bool) -> MetadataResponseTopic:
    """The answer for a name that is not a topic, creating it first when allowed."""
    try:
        validate_topic_name(name)
    except ClusterError as exc:
        return _missing(name, exc.error_code)
    if allow_create:
        _auto_create(ctx, name)
    return _missing(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, internal=is_internal(name))


def _auto_create(ctx: RequestContext, name: str) -> None:
    """Start creating `name` (Kafka's AutoTopicCreationManager): an internal topic through
    its coordinator, any other with the broker defaults. Refusals are logged, not answered."""
    services = ctx.services
    if name == OFFSETS_TOPIC:
        if services.group_coordinator is not None:
            services.group_coordinator.ensure_offsets_topic()
        return
    if name == TXN_TOPIC:
        if services.txn_coordinator is not None:
            services.txn_coordinator.ensure_topic()
        return
    if name == SHARE_STATE_TOPIC:
        if services.share_coordinator is not None:
            services.share_coordinator.ensure_topic()
        return
    if is_internal(name):
        return
    try:
        [created] = services.admin.create_topics([NewTopic(name)], now_ms=ctx.now_ms())
    except Exception:
        log.exception("auto-creating topic %r failed", name)
        return
    if isinstance(created, TopicInfo):
        log.info("auto-created topic %s with %d partition(s)", name, created.partitions)
    elif not isinstance(created, TopicExistsError):  # exists: another request's creation
        log.info("auto-creating topic %r refused: %s", name, created)


@handler(ApiKey.METADATA)
async def handle(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse | None:
    version = ctx.api_version
    services = ctx.services
    view = services.cluster
    config = services.config
    want_topic_ops = bool(req.get("include_topic_authorized_operations"))
    allow_create = config.auto_create_topics and (
        version < 4 or bool(req.get("allow_auto_topic_creation", True))
    )

    def entry(info: TopicInfo) -> MetadataResponseTopic:
        ops = AUTHORIZED_OPERATIONS_OMITTED
        if want_topic_ops:
            ops = _authz.operations_bits(ctx, _TOPIC, info.name, TOPIC_ALL_OPERATIONS)
        return _topic_entry(ctx, info, ops)

    requested = req.get("topics")
    topics_out: list[MetadataResponseTopic] = []
    if requested is None or (version == 0 and not requested):
        topics_out = [entry(info) for info in view.all_topics() if _describable(ctx, info.name)]
    else:
        ids = [tid for t in requested if (tid := t.get("topic_id")) is not None and tid != NIL_UUID]
        if ids:
            for topic_id in dict.fromkeys(ids):
                info, missing = resolve_topic(view, by_id=True, topic_id=topic_id)
                if info is None:
                    topics_out.append(
                        _missing(None if version >= 12 else "", missing, topic_id=topic_id)
                    )
                elif not _describable(ctx, info.name):
                    topics_out.append(
                        _missing(None if version >= 12 else "", _DENIED, topic_id=topic_id)
                    )
                else:
                    topics_out.append(entry(info))
        else:
            names = [name for t in requested if (name := t.get("name")) is not None]
            for name in dict.fromkeys(names):
                info, _missing_code = resolve_topic(view, by_id=False, name=name)
                if not _describable(ctx, name):
                    topics_out.append(_missing(name, _DENIED))
                elif info is not None:
                    topics_out.append(entry(info))
                elif allow_create and not _may_create(ctx, name):
                    topics_out.append(_missing(name, _DENIED, internal=is_internal(name)))
                else:
                    topics_out.append(_unknown_name(ctx, name, allow_create=allow_create))

    return {
        "throttle_time_ms": 0,
        "brokers": [
            {"node_id": b.node_id, "host": host, "port": port, "rack": b.rack}
            for b, host, port in ctx.brokers()
        ],
        "cluster_id": services.cluster_id,
        "controller_id": services.cluster.controller_id(),
        "topics": topics_out,
        "cluster_authorized_operations": _cluster_ops(ctx, req),
        "error_code": 0,
    }


_TOPIC = ResourceType.TOPIC
_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED


def _describable(ctx: RequestContext, name: str) -> bool:
    return _authz.allowed(ctx, _TOPIC, name, AclOperation.DESCRIBE)


def _may_create(ctx: RequestContext, name: str) -> bool:
    """Auto-creation needs CREATE on the cluster or on the topic."""
    return _authz.cluster(ctx, AclOperation.CREATE) or _authz.allowed(
        ctx, _TOPIC, name, AclOperation.CREATE
    )


def _cluster_ops(ctx: RequestContext, req: MetadataRequest) -> int:
    """v8-10's cluster authorized operations: 0 unless the principal may DESCRIBE it."""
    if not req.get("include_cluster_authorized_operations"):
        return AUTHORIZED_OPERATIONS_OMITTED
    if not _authz.cluster(ctx, AclOperation.DESCRIBE):
        return 0
    return _authz.operations_bits(ctx, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_ALL_OPERATIONS)
