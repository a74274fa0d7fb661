"""Every version of the topic and cluster administration APIs, one request per version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    DATA,
    NIL,
    batch,
    configs_resource,
    creatable,
    create,
    produce_now,
    settle,
    step,
    sweep_steps,
    sweep_steps_v,
    wait_gone,
    wait_topic,
)
from compat.conformance.script import Ctx, Item, Scenario


def metadata(versions: list[int]) -> Scenario:
    topic = "sw-metadata"
    items: list[Item] = [create(topic, 2)]
    items += sweep_steps(
        "Metadata",
        API.METADATA,
        versions,
        lambda ctx: {
            "topics": [{"name": ctx.name(topic), "topic_id": NIL}],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": True,
            "include_topic_authorized_operations": True,
        },
        "one topic of 2 partitions, authorized operations asked for (v8+)",
    )
    return Scenario("sweep Metadata", tuple(items))


def create_topics(versions: list[int]) -> Scenario:
    items: list[Item] = []
    for v in versions:
        items.append(
            step(
                f"CreateTopics.v{v}",
                API.CREATE_TOPICS,
                v,
                lambda ctx, v=v: {
                    "topics": [creatable(ctx, f"sw-create-v{v}", 2, {"retention.ms": "3600000"})],
                    "timeout_ms": 30000,
                    "validate_only": False,
                },
                "2 partitions, retention.ms=3600000 (v5+: the answer lists every config)",
            )
        )
        items.append(wait_topic(f"sw-create-v{v}", 2))
    return Scenario("sweep CreateTopics", tuple(items))


def delete_topics(versions: list[int]) -> Scenario:
    items: list[Item] = [create(f"sw-delete-v{v}", 1) for v in versions]
    items += sweep_steps_v(
        "DeleteTopics",
        API.DELETE_TOPICS,
        versions,
        lambda ctx, v: {
            "topics": [{"name": ctx.name(f"sw-delete-v{v}"), "topic_id": NIL}],
            "topic_names": [ctx.name(f"sw-delete-v{v}")],
            "timeout_ms": 30000,
        },
        "an existing topic, by name",
    )
    items.append(wait_gone([f"sw-delete-v{v}" for v in versions]))
    return Scenario("sweep DeleteTopics", tuple(items))


def describe_configs(versions: list[int]) -> Scenario:
    topic = "sw-describeconfigs"
    items: list[Item] = [
        create(topic, 1, {"cleanup.policy": "compact", "retention.ms": "86400000"})
    ]
    items += sweep_steps(
        "DescribeConfigs",
        API.DESCRIBE_CONFIGS,
        versions,
        lambda ctx: {
            "resources": [configs_resource(ctx, topic)],
            "include_synonyms": True,
            "include_documentation": True,
        },
        "every config of a topic with 2 set (synonyms; documentation v3+)",
    )
    return Scenario("sweep DescribeConfigs", tuple(items))


def alter_configs(versions: list[int]) -> Scenario:
    topic = "sw-alterconfigs"
    items: list[Item] = [create(topic, 1)]
    items += sweep_steps_v(
        "AlterConfigs",
        API.ALTER_CONFIGS,
        versions,
        lambda ctx, v: {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": ctx.name(topic),
                    "configs": [{"name": "retention.ms", "value": str(1000 * (v + 1))}],
                }
            ],
            "validate_only": False,
        },
        "set retention.ms of a topic",
    )
    items.append(
        settle(topic, {"retention.ms": str(1000 * (versions[-1] + 1)), "cleanup.policy": "delete"})
    )
    items.append(_describe_after("AlterConfigs", topic, ["retention.ms", "cleanup.policy"]))
    return Scenario("sweep AlterConfigs", tuple(items))


def _describe_after(prefix: str, topic: str, keys: list[str]) -> Any:
    return step(
        f"{prefix}.describe_after",
        API.DESCRIBE_CONFIGS,
        4,
        lambda ctx: {"resources": [configs_resource(ctx, topic, keys)], "include_synonyms": True},
        f"the topic's {', '.join(keys)} afterwards",
    )


def incremental_alter_configs(versions: list[int]) -> Scenario:
    topic = "sw-incrementalalter"
    items: list[Item] = [create(topic, 1)]
    items += sweep_steps_v(
        "IncrementalAlterConfigs",
        API.INCREMENTAL_ALTER_CONFIGS,
        versions,
        lambda ctx, v: {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": ctx.name(topic),
                    "configs": [
                        {"name": "retention.ms", "config_operation": 0, "value": str(5000 + v)},
                        {"name": "cleanup.policy", "config_operation": 2, "value": "compact"},
                    ],
                }
            ],
            "validate_only": False,
        },
        "SET retention.ms, APPEND compact to cleanup.policy",
    )
    items.append(
        settle(
            topic, {"retention.ms": str(5000 + versions[-1]), "cleanup.policy": "delete,compact"}
        )
    )
    items.append(
        _describe_after("IncrementalAlterConfigs", topic, ["retention.ms", "cleanup.policy"])
    )
    return Scenario("sweep IncrementalAlterConfigs", tuple(items))


def create_partitions(versions: list[int]) -> Scenario:
    topic = "sw-createpartitions"
    items: list[Item] = [create(topic, 1)]
    for v in versions:
        items.append(
            step(
                f"CreatePartitions.v{v}",
                API.CREATE_PARTITIONS,
                v,
                lambda ctx, v=v: {
                    "topics": [{"name": ctx.name(topic), "count": v + 2, "assignments": None}],
                    "timeout_ms": 30000,
                    "validate_only": False,
                },
                "grow the topic to (version + 2) partitions",
            )
        )
        items.append(wait_topic(topic, v + 2))
    return Scenario("sweep CreatePartitions", tuple(items))


def log_dirs(versions: list[int], alter_versions: list[int]) -> Scenario:
    topic = "sw-logdirs"
    items: list[Item] = [create(topic, 2, DATA), produce_now(topic, 0, batch(3))]
    items += sweep_steps(
        "DescribeLogDirs",
        API.DESCRIBE_LOG_DIRS,
        versions,
        lambda ctx: {"topics": [{"topic": ctx.name(topic), "partitions": [0, 1]}]},
        "a topic's 2 partitions (one holding a batch of 3 records)",
    )
    items += sweep_steps(
        "AlterReplicaLogDirs",
        API.ALTER_REPLICA_LOG_DIRS,
        alter_versions,
        lambda ctx: {
            "dirs": [
                {
                    "path": "/nonexistent/conformance",
                    "topics": [{"name": ctx.name(topic), "partitions": [0]}],
                }
            ]
        },
        "move a partition to a directory that is not a log dir",
    )
    return Scenario("sweep log dirs", tuple(items))


def elect_leaders(versions: list[int]) -> Scenario:
    topic = "sw-elect"
    items: list[Item] = [create(topic, 1)]
    items += sweep_steps(
        "ElectLeaders",
        API.ELECT_LEADERS,
        versions,
        lambda ctx: {
            "election_type": 0,
            "topic_partitions": [{"topic": ctx.name(topic), "partitions": [0]}],
            "timeout_ms": 10000,
        },
        "preferred election where the preferred leader leads already",
    )
    return Scenario("sweep ElectLeaders", tuple(items))


def reassignments(alter: list[int], listing: list[int]) -> Scenario:
    topic = "sw-reassign"
    items: list[Item] = [create(topic, 1)]
    items += sweep_steps(
        "AlterPartitionReassignments",
        API.ALTER_PARTITION_REASSIGNMENTS,
        alter,
        lambda ctx: {
            "timeout_ms": 10000,
            "allow_replication_factor_change": True,
            "topics": [
                {
                    "name": ctx.name(topic),
                    "partitions": [{"partition_index": 0, "replicas": [ctx.side.node_id]}],
                }
            ],
        },
        "reassign a partition to the replicas it has (a no-op)",
    )
    items += sweep_steps(
        "ListPartitionReassignments",
        API.LIST_PARTITION_REASSIGNMENTS,
        listing,
        lambda ctx: {
            "timeout_ms": 10000,
            "topics": [{"name": ctx.name(topic), "partition_indexes": [0]}],
        },
        "the partition just reassigned (nothing ongoing)",
    )
    return Scenario("sweep reassignments", tuple(items))


def describe_cluster(versions: list[int]) -> Scenario:
    items = sweep_steps(
        "DescribeCluster",
        API.DESCRIBE_CLUSTER,
        versions,
        {
            "include_cluster_authorized_operations": True,
            "endpoint_type": 1,
            "include_fenced_brokers": True,
        },
        "brokers, with authorized operations (and fenced brokers, v2)",
    )
    return Scenario("sweep DescribeCluster", tuple(items))


def describe_topic_partitions(versions: list[int]) -> Scenario:
    topic = "sw-dtp"
    items: list[Item] = [create(topic, 3)]

    def body(ctx: Ctx) -> dict[str, Any]:
        return {
            "topics": [{"name": ctx.name(topic)}, {"name": ctx.name("sw-dtp-missing")}],
            "response_partition_limit": 2000,
            "cursor": None,
        }

    items += sweep_steps(
        "DescribeTopicPartitions",
        API.DESCRIBE_TOPIC_PARTITIONS,
        versions,
        body,
        "a topic of 3 partitions and a missing one",
    )
    items.extend(_describe_topic_partitions_cursors(topic, versions[-1]))
    return Scenario("sweep DescribeTopicPartitions", tuple(items))


def _describe_topic_partitions_cursors(topic: str, v: int) -> list[Item]:
    """Paging: a cursor inside a listed topic, one naming no listed topic (INVALID_REQUEST),
    and, with every topic asked for, one naming no topic at all (the page starts after it)."""

    def paged(
        listed: list[str], cursor: str, index: int, limit: int
    ) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: {
            "topics": [{"name": ctx.name(n)} for n in listed],
            "response_partition_limit": limit,
            "cursor": {"topic_name": ctx.name(cursor), "partition_index": index},
        }

    cases = [
        ("inside", [topic], topic, 1, 1, "a listed topic from partition 1, one per page"),
        ("not_listed", [topic], "sw-dt", 0, 2000, "a cursor naming no listed topic"),
        ("every_topic", [], "sw-dt", 0, 1, "every topic from a name no topic has, one per page"),
    ]
    return [
        step(
            f"DescribeTopicPartitions.cursor_{name}",
            API.DESCRIBE_TOPIC_PARTITIONS,
            v,
            paged(listed, cursor, index, limit),
            note,
        )
        for name, listed, cursor, index, limit, note in cases
    ]
