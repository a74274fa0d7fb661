"""The cluster APIs beyond the sweeps (DescribeCluster endpoint types, reassignments, leader
elections, DescribeTopicPartitions paging, DescribeLogDirs), and the listings of everything a
broker has, played last (phase 2) so that no other scenario is still changing what they list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import API, create, step
from compat.conformance.script import Ctx, Item, Scenario

Body = Callable[[Ctx], dict[str, Any]]
TOPIC = "cl-topic"
DCL, APR, LPR = (
    API.DESCRIBE_CLUSTER,
    API.ALTER_PARTITION_REASSIGNMENTS,
    API.LIST_PARTITION_REASSIGNMENTS,
)
EL, DTP, DLD = API.ELECT_LEADERS, API.DESCRIBE_TOPIC_PARTITIONS, API.DESCRIBE_LOG_DIRS


def reassign(replicas: Callable[[Ctx], list[int] | None], name: str = TOPIC) -> Body:
    return lambda ctx: {
        "timeout_ms": 10000,
        "allow_replication_factor_change": True,
        "topics": [
            {
                "name": ctx.name(name),
                "partitions": [{"partition_index": 0, "replicas": replicas(ctx)}],
            }
        ],
    }


def dtp(limit: int, cursor: Callable[[Ctx], dict[str, Any] | None] = lambda ctx: None) -> Body:
    return lambda ctx: {
        "topics": [{"name": ctx.name(TOPIC)}],
        "response_partition_limit": limit,
        "cursor": cursor(ctx),
    }


def elect(kind: int, name: str, partitions: list[int]) -> Body:
    return lambda ctx: {
        "election_type": kind,
        "topic_partitions": [{"topic": ctx.name(name), "partitions": partitions}],
        "timeout_ms": 10000,
    }


CLUSTER: tuple[Item, ...] = (
    step(
        "cluster.describe_controllers",
        DCL,
        1,
        {"include_cluster_authorized_operations": False, "endpoint_type": 2},
        "endpoint type 2 (controllers) asked of a broker",
    ),
    step(
        "cluster.describe_bad_endpoint_type",
        DCL,
        1,
        {"include_cluster_authorized_operations": False, "endpoint_type": 9},
        "endpoint type 9",
    ),
    step(
        "cluster.reassign_unknown_broker",
        APR,
        0,
        reassign(lambda ctx: [999]),
        "to a broker that does not exist",
    ),
    step(
        "cluster.reassign_duplicate",
        APR,
        0,
        reassign(lambda ctx: [ctx.side.node_id, ctx.side.node_id]),
        "to the same broker twice",
    ),
    step("cluster.reassign_empty", APR, 0, reassign(lambda ctx: []), "to no replicas"),
    step(
        "cluster.reassign_cancel_none",
        APR,
        0,
        reassign(lambda ctx: None),
        "cancel where nothing is ongoing",
    ),
    step(
        "cluster.reassign_unknown_topic",
        APR,
        0,
        reassign(lambda ctx: [ctx.side.node_id], "cl-never"),
        "a topic that does not exist",
    ),
    step(
        "cluster.list_reassignments_unknown",
        LPR,
        0,
        lambda ctx: {
            "timeout_ms": 10000,
            "topics": [{"name": ctx.name("cl-never"), "partition_indexes": [0]}],
        },
        "a topic that does not exist",
    ),
    step(
        "cluster.elect_unknown_topic",
        EL,
        2,
        elect(0, "cl-never", [0]),
        "a topic that does not exist",
    ),
    step(
        "cluster.elect_bad_partition",
        EL,
        2,
        elect(0, TOPIC, [9]),
        "a partition the topic does not have",
    ),
    step(
        "cluster.elect_unclean",
        EL,
        2,
        elect(1, TOPIC, [0, 1]),
        "unclean election where leaders are live",
    ),
    step("cluster.elect_bad_type", EL, 2, elect(5, TOPIC, [0]), "election type 5"),
    step("cluster.dtp_limit_1", DTP, 0, dtp(1), "partition limit 1: a cursor for the rest"),
    step(
        "cluster.dtp_cursor",
        DTP,
        0,
        dtp(2000, lambda ctx: {"topic_name": ctx.name(TOPIC), "partition_index": 1}),
        "from the cursor (partition 1)",
    ),
    step(
        "cluster.log_dirs_unknown_topic",
        DLD,
        4,
        lambda ctx: {"topics": [{"topic": ctx.name("cl-never"), "partitions": [0]}]},
        "a topic that does not exist",
    ),
)


def cluster() -> Scenario:
    return Scenario("cluster", (create(TOPIC, 3), *CLUSTER))


EVERYTHING: tuple[Item, ...] = (
    step(
        "everything.metadata_v0",
        API.METADATA,
        0,
        {"topics": []},
        "Metadata v0 with no topics (v0: every topic)",
        listing=True,
    ),
    step(
        "everything.list_reassignments",
        LPR,
        0,
        {"timeout_ms": 10000, "topics": None},
        "every ongoing reassignment",
        listing=True,
    ),
    step(
        "everything.describe_topic_partitions",
        DTP,
        0,
        lambda ctx: {
            "topics": [],
            "response_partition_limit": 2000,
            "cursor": {"topic_name": ctx.side.names.token, "partition_index": 0},
        },
        "every topic from the run's first name on (a cursor at the run's token: the shared "
        "oracle's other topics before it would fill the page)",
        listing=True,
    ),
    step(
        "everything.log_dirs",
        DLD,
        4,
        {"topics": None},
        "every partition of every log dir",
        listing=True,
    ),
)


def everything() -> Scenario:
    """Listings of everything the broker has, after every other scenario (phase 2)."""
    return Scenario("listings of everything", EVERYTHING, phase=2)
