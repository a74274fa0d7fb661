"""Topics, configs, metadata and the cluster: happy paths beyond the sweeps, and error paths."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    NIL,
    configs_resource,
    creatable,
    create,
    metadata,
    settle,
    step,
    topic_id,
    wait_topic,
)
from compat.conformance.script import Ctx, Do, HarnessError, Item, Scenario, Step


def _create(ctx: Ctx, topics: list[dict[str, Any]], validate_only: bool = False) -> dict[str, Any]:
    return {"topics": topics, "timeout_ms": 30000, "validate_only": validate_only}


def create_topics() -> Scenario:
    p = "create_topics"
    C: Callable[..., Step] = step
    items: list[Item] = [create("adm-existing", 1)]

    def one(
        logical: str, partitions: int = 1, configs: dict[str, str | None] | None = None, rf: int = 1
    ) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: _create(ctx, [creatable(ctx, logical, partitions, configs, rf)])

    long_name = "x" * 250
    items += [
        C(
            f"{p}.with_configs",
            API.CREATE_TOPICS,
            7,
            one(
                "adm-configs",
                3,
                {
                    "cleanup.policy": "compact",
                    "min.insync.replicas": "1",
                    "segment.bytes": "1048576",
                    "compression.type": "zstd",
                },
            ),
            "3 partitions and 4 configs: the answer lists every config",
        ),
        wait_topic("adm-configs", 3),
        C(
            f"{p}.defaults",
            API.CREATE_TOPICS,
            7,
            one("adm-defaults", -1, None, -1),
            "partitions and replication factor -1 (the broker's defaults)",
        ),
        wait_topic("adm-defaults"),
        C(f"{p}.duplicate", API.CREATE_TOPICS, 7, one("adm-existing"), "a topic that exists"),
        C(f"{p}.zero_partitions", API.CREATE_TOPICS, 7, one("adm-zero", 0), "0 partitions"),
        C(
            f"{p}.negative_partitions",
            API.CREATE_TOPICS,
            7,
            one("adm-negative", -5),
            "-5 partitions",
        ),
        C(
            f"{p}.replication_2",
            API.CREATE_TOPICS,
            7,
            one("adm-rf2", 1, None, 2),
            "replication factor 2 on one broker",
        ),
        C(
            f"{p}.replication_0",
            API.CREATE_TOPICS,
            7,
            one("adm-rf0", 1, None, 0),
            "replication factor 0",
        ),
        C(
            f"{p}.bad_config_value",
            API.CREATE_TOPICS,
            7,
            one("adm-badvalue", 1, {"retention.ms": "soon"}),
            "retention.ms=soon",
        ),
        C(
            f"{p}.unknown_config",
            API.CREATE_TOPICS,
            7,
            one("adm-unknownconfig", 1, {"conformance.unknown": "1"}),
            "a config Kafka does not have",
        ),
        C(
            f"{p}.config_out_of_range",
            API.CREATE_TOPICS,
            7,
            one("adm-range", 1, {"min.insync.replicas": "0"}),
            "min.insync.replicas=0",
        ),
        C(
            f"{p}.null_config_value",
            API.CREATE_TOPICS,
            7,
            one("adm-nullvalue", 1, {"retention.ms": None}),
            "a config with a null value",
        ),
        C(
            f"{p}.bad_name",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(ctx, [{**creatable(ctx, "adm-x", 1), "name": "bad/name"}]),
            "the name bad/name",
        ),
        C(
            f"{p}.dot_name",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(ctx, [{**creatable(ctx, "adm-x", 1), "name": ".."}]),
            "the name ..",
        ),
        C(
            f"{p}.long_name",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(ctx, [{**creatable(ctx, "adm-x", 1), "name": long_name}]),
            "a name of 250 characters",
        ),
        C(
            f"{p}.empty_name",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(ctx, [{**creatable(ctx, "adm-x", 1), "name": ""}]),
            "an empty name",
        ),
        C(
            f"{p}.twice_in_one_request",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(
                ctx, [creatable(ctx, "adm-twice", 1), creatable(ctx, "adm-twice", 2)]
            ),
            "the same name twice in one request",
        ),
        C(
            f"{p}.validate_only",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(
                ctx, [creatable(ctx, "adm-validate", 4, {"cleanup.policy": "compact"})], True
            ),
            "validate_only (nothing is created)",
        ),
        C(
            f"{p}.validate_only_metadata",
            API.METADATA,
            12,
            lambda ctx: {
                "topics": [{"name": ctx.name("adm-validate"), "topic_id": NIL}],
                "allow_auto_topic_creation": False,
            },
            "the validated topic does not exist",
        ),
        C(
            f"{p}.assignments",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(
                ctx,
                [
                    {
                        **creatable(ctx, "adm-assigned", -1, None, -1),
                        "assignments": [
                            {"partition_index": 0, "broker_ids": [ctx.side.node_id]},
                            {"partition_index": 1, "broker_ids": [ctx.side.node_id]},
                        ],
                    }
                ],
            ),
            "explicit replica assignments for 2 partitions",
        ),
        wait_topic("adm-assigned", 2),
        C(
            f"{p}.assignment_unknown_broker",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(
                ctx,
                [
                    {
                        **creatable(ctx, "adm-badassign", -1, None, -1),
                        "assignments": [{"partition_index": 0, "broker_ids": [999]}],
                    }
                ],
            ),
            "an assignment to a broker that does not exist",
        ),
        C(
            f"{p}.assignment_with_count",
            API.CREATE_TOPICS,
            7,
            lambda ctx: _create(
                ctx,
                [
                    {
                        **creatable(ctx, "adm-both", 2),
                        "assignments": [{"partition_index": 0, "broker_ids": [ctx.side.node_id]}],
                    }
                ],
            ),
            "assignments and a partition count together",
        ),
        C(
            f"{p}.metadata_after",
            API.METADATA,
            12,
            lambda ctx: {
                "topics": [
                    {"name": ctx.name(n), "topic_id": NIL}
                    for n in ("adm-configs", "adm-defaults", "adm-assigned")
                ],
                "allow_auto_topic_creation": False,
            },
            "the created topics",
        ),
    ]
    return Scenario("create topics", tuple(items))


def partitions_and_deletes() -> Scenario:
    p = "topics"
    items: list[Item] = [
        create("adm-grow", 2),
        create("adm-doomed", 1),
        create("adm-doomed-by-id", 1),
    ]

    def grow(
        count: int, logical: str = "adm-grow", validate: bool = False, assignments: Any = None
    ) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: {
            "topics": [{"name": ctx.name(logical), "count": count, "assignments": assignments}],
            "timeout_ms": 30000,
            "validate_only": validate,
        }

    S: Callable[..., Step] = step
    items += [
        S(f"{p}.partitions_decrease", API.CREATE_PARTITIONS, 3, grow(1), "from 2 partitions to 1"),
        S(f"{p}.partitions_same", API.CREATE_PARTITIONS, 3, grow(2), "from 2 partitions to 2"),
        S(
            f"{p}.partitions_unknown_topic",
            API.CREATE_PARTITIONS,
            3,
            grow(3, "adm-never"),
            "a topic that does not exist",
        ),
        S(
            f"{p}.partitions_validate_only",
            API.CREATE_PARTITIONS,
            3,
            grow(5, validate=True),
            "to 5, validate only",
        ),
        S(
            f"{p}.partitions_bad_assignment",
            API.CREATE_PARTITIONS,
            3,
            grow(3, assignments=[[999]]),
            "to 3 with the new partition on a broker that does not exist",
        ),
        S(
            f"{p}.partitions_wrong_assignment_count",
            API.CREATE_PARTITIONS,
            3,
            lambda ctx: grow(4, assignments=[{"broker_ids": [ctx.side.node_id]}])(ctx),
            "to 4 with one assignment for two new partitions",
        ),
        S(
            f"{p}.partitions_assigned",
            API.CREATE_PARTITIONS,
            3,
            lambda ctx: grow(3, assignments=[{"broker_ids": [ctx.side.node_id]}])(ctx),
            "to 3 with an assignment",
        ),
        wait_topic("adm-grow", 3),
        S(
            f"{p}.partitions_twice",
            API.CREATE_PARTITIONS,
            3,
            lambda ctx: {
                "topics": [{"name": ctx.name("adm-grow"), "count": 4, "assignments": None}] * 2,
                "timeout_ms": 30000,
                "validate_only": False,
            },
            "the same topic twice in one request",
        ),
        S(
            f"{p}.metadata_grown",
            API.METADATA,
            12,
            lambda ctx: {
                "topics": [{"name": ctx.name("adm-grow"), "topic_id": NIL}],
                "allow_auto_topic_creation": False,
            },
            "the grown topic",
        ),
        S(
            f"{p}.delete_unknown",
            API.DELETE_TOPICS,
            6,
            lambda ctx: {
                "topics": [{"name": ctx.name("adm-never"), "topic_id": NIL}],
                "timeout_ms": 30000,
            },
            "a topic that does not exist",
        ),
        S(
            f"{p}.delete_unknown_id",
            API.DELETE_TOPICS,
            6,
            {"topics": [{"name": None, "topic_id": uuid.UUID(int=12345)}], "timeout_ms": 30000},
            "a topic id that does not exist",
        ),
        S(
            f"{p}.delete_by_id",
            API.DELETE_TOPICS,
            6,
            lambda ctx: {
                "topics": [{"name": None, "topic_id": topic_id(ctx, "adm-doomed-by-id")}],
                "timeout_ms": 30000,
            },
            "a topic by its id",
        ),
        S(
            f"{p}.delete_v5",
            API.DELETE_TOPICS,
            5,
            lambda ctx: {
                "topic_names": [ctx.name("adm-doomed"), ctx.name("adm-never")],
                "timeout_ms": 30000,
            },
            "a topic and a missing one, by name",
        ),
        Do(
            "wait until the deleted topics are gone", _wait_gone(["adm-doomed", "adm-doomed-by-id"])
        ),
        S(
            f"{p}.metadata_deleted",
            API.METADATA,
            12,
            lambda ctx: {
                "topics": [{"name": ctx.name("adm-doomed"), "topic_id": NIL}],
                "allow_auto_topic_creation": False,
            },
            "the deleted topic",
        ),
        S(
            f"{p}.produce_deleted",
            API.PRODUCE,
            9,
            lambda ctx: {
                "acks": -1,
                "timeout_ms": 1000,
                "topic_data": [
                    {
                        "name": ctx.name("adm-doomed"),
                        "partition_data": [{"index": 0, "records": None}],
                    }
                ],
            },
            "produce to the deleted topic",
        ),
    ]
    return Scenario("partitions and deletes", tuple(items))


def _wait_gone(logicals: list[str]) -> Callable[[Ctx], None]:
    def run(ctx: Ctx) -> None:
        ctx.wait(
            f"topics {logicals} deleted",
            lambda: all(t.error_code == 3 for t in metadata(ctx, logicals).topics),
        )

    return run


def metadata_cases() -> Scenario:
    p = "metadata"
    items: list[Item] = [create("meta-known", 2)]

    def meta(version: int, names: list[str] | None, auto: bool) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: {
            "topics": None
            if names is None
            else [{"name": ctx.name(n) if n[:1] != "!" else n[1:], "topic_id": NIL} for n in names],
            "allow_auto_topic_creation": auto,
            "include_topic_authorized_operations": False,
        }

    M: Callable[..., Step] = step
    items += [
        M(
            f"{p}.no_topics",
            API.METADATA,
            12,
            meta(12, [], False),
            "no topics: brokers and controller only",
        ),
        M(
            f"{p}.unknown_no_auto",
            API.METADATA,
            12,
            meta(12, ["meta-absent"], False),
            "a topic that does not exist, auto-creation off",
        ),
        M(
            f"{p}.auto_create",
            API.METADATA,
            12,
            meta(12, ["meta-auto"], True),
            "a topic that does not exist, allow_auto_topic_creation (a consumer's request)",
        ),
        Do("wait (up to 5 s) for the auto-created topic", _wait_auto("meta-auto")),
        M(
            f"{p}.auto_created_after",
            API.METADATA,
            12,
            meta(12, ["meta-auto"], False),
            "the same topic afterwards",
        ),
        M(
            f"{p}.auto_create_v3",
            API.METADATA,
            3,
            meta(3, ["meta-auto-v3"], True),
            "v3 (no flag: auto-creation allowed)",
        ),
        Do("wait (up to 5 s) for the topic auto-created by v3", _wait_auto("meta-auto-v3")),
        M(
            f"{p}.auto_created_v3_after",
            API.METADATA,
            12,
            meta(12, ["meta-auto-v3"], False),
            "the same topic afterwards",
        ),
        M(
            f"{p}.auto_create_bad_name",
            API.METADATA,
            12,
            meta(12, ["!bad name!"], True),
            "auto-creation of an invalid name",
        ),
        M(
            f"{p}.internal_topic",
            API.METADATA,
            12,
            meta(12, ["!__consumer_offsets"], False),
            "the internal offsets topic",
        ),
        M(
            f"{p}.by_topic_id",
            API.METADATA,
            12,
            lambda ctx: {
                "topics": [{"name": None, "topic_id": topic_id(ctx, "meta-known")}],
                "allow_auto_topic_creation": False,
            },
            "a topic by id (name null)",
        ),
        M(
            f"{p}.known_and_unknown",
            API.METADATA,
            12,
            meta(12, ["meta-known", "meta-absent"], False),
            "a topic that exists and one that does not",
        ),
        M(f"{p}.v0_known", API.METADATA, 0, meta(0, ["meta-known"], False), "v0"),
    ]
    return Scenario("metadata", tuple(items))


def _wait_auto(logical: str) -> Callable[[Ctx], None]:
    """Give a broker that auto-creates the time to do it; one that does not is not an error
    here (the next step shows the difference)."""

    def run(ctx: Ctx) -> None:
        with contextlib.suppress(HarnessError):
            ctx.wait(
                f"topic {logical} auto-created",
                lambda: all(
                    t.error_code == 0
                    and t.partitions
                    and all(x.leader_id >= 0 for x in t.partitions)
                    for t in metadata(ctx, [logical]).topics
                ),
                timeout=5.0,
            )

    return run


def configs() -> Scenario:
    topic, p = "cfg-topic", "configs"
    items: list[Item] = [
        create(topic, 1, {"retention.ms": "123456", "cleanup.policy": "compact,delete"})
    ]

    def describe(
        resources: Callable[[Ctx], list[dict[str, Any]]], synonyms: bool = True, docs: bool = True
    ) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: {
            "resources": resources(ctx),
            "include_synonyms": synonyms,
            "include_documentation": docs,
        }

    def alter(
        resource: Callable[[Ctx], dict[str, Any]],
        configs_: list[dict[str, Any]],
        validate: bool = False,
    ) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: {
            "resources": [{**resource(ctx), "configs": configs_}],
            "validate_only": validate,
        }

    def t(ctx: Ctx) -> dict[str, Any]:
        return {"resource_type": 2, "resource_name": ctx.name(topic)}

    def broker(ctx: Ctx) -> dict[str, Any]:
        return {"resource_type": 4, "resource_name": str(ctx.side.node_id)}

    C: Callable[..., Step] = step
    items += [
        C(
            f"{p}.broker_v4",
            API.DESCRIBE_CONFIGS,
            4,
            describe(lambda ctx: [configs_resource(ctx, None)]),
            "every config of the broker: value, source, read_only, synonyms, type, documentation",
        ),
        C(
            f"{p}.broker_v1",
            API.DESCRIBE_CONFIGS,
            1,
            describe(lambda ctx: [configs_resource(ctx, None)], docs=False),
            "every config of the broker at v1",
        ),
        C(
            f"{p}.topic_v4",
            API.DESCRIBE_CONFIGS,
            4,
            describe(lambda ctx: [configs_resource(ctx, topic)]),
            "every config of a topic with 2 set",
        ),
        C(
            f"{p}.topic_no_synonyms",
            API.DESCRIBE_CONFIGS,
            4,
            describe(lambda ctx: [configs_resource(ctx, topic)], synonyms=False, docs=False),
            "the same without synonyms or documentation",
        ),
        C(
            f"{p}.topic_some_keys",
            API.DESCRIBE_CONFIGS,
            4,
            describe(
                lambda ctx: [
                    configs_resource(
                        ctx, topic, ["retention.ms", "segment.bytes", "conformance.unknown"]
                    )
                ]
            ),
            "3 keys, one unknown",
        ),
        C(
            f"{p}.unknown_topic",
            API.DESCRIBE_CONFIGS,
            4,
            describe(lambda ctx: [configs_resource(ctx, "cfg-never")]),
            "a topic that does not exist",
        ),
        C(
            f"{p}.other_broker",
            API.DESCRIBE_CONFIGS,
            4,
            describe(
                lambda ctx: [
                    {"resource_type": 4, "resource_name": "999", "configuration_keys": None}
                ]
            ),
            "a broker id that is not this broker",
        ),
        C(
            f"{p}.broker_bad_name",
            API.DESCRIBE_CONFIGS,
            4,
            describe(
                lambda ctx: [
                    {
                        "resource_type": 4,
                        "resource_name": "not-a-number",
                        "configuration_keys": None,
                    }
                ]
            ),
            "a broker resource whose name is not a number",
        ),
        C(
            f"{p}.cluster_default",
            API.DESCRIBE_CONFIGS,
            4,
            describe(
                lambda ctx: [
                    {
                        "resource_type": 4,
                        "resource_name": "",
                        "configuration_keys": ["log.retention.ms"],
                    }
                ]
            ),
            "the cluster-wide default resource (empty broker name)",
        ),
        C(
            f"{p}.broker_logger",
            API.DESCRIBE_CONFIGS,
            4,
            describe(
                lambda ctx: [
                    {
                        "resource_type": 8,
                        "resource_name": str(ctx.side.node_id),
                        "configuration_keys": ["root"],
                    }
                ]
            ),
            "the broker's root logger (BROKER_LOGGER)",
        ),
        C(
            f"{p}.bad_type",
            API.DESCRIBE_CONFIGS,
            4,
            describe(
                lambda ctx: [
                    {"resource_type": 99, "resource_name": "x", "configuration_keys": None}
                ]
            ),
            "resource type 99",
        ),
        C(
            f"{p}.alter_bad_value",
            API.ALTER_CONFIGS,
            2,
            alter(t, [{"name": "retention.ms", "value": "soon"}]),
            "retention.ms=soon",
        ),
        C(
            f"{p}.alter_unknown_key",
            API.ALTER_CONFIGS,
            2,
            alter(t, [{"name": "conformance.unknown", "value": "1"}]),
            "a config Kafka does not have",
        ),
        C(
            f"{p}.alter_unknown_topic",
            API.ALTER_CONFIGS,
            2,
            alter(
                lambda ctx: {"resource_type": 2, "resource_name": ctx.name("cfg-never")},
                [{"name": "retention.ms", "value": "1000"}],
            ),
            "a topic that does not exist",
        ),
        C(
            f"{p}.alter_validate_only",
            API.ALTER_CONFIGS,
            2,
            alter(t, [{"name": "retention.ms", "value": "999"}], validate=True),
            "validate_only (nothing changes)",
        ),
        C(
            f"{p}.alter_broker_validate",
            API.ALTER_CONFIGS,
            2,
            alter(broker, [{"name": "log.cleaner.threads", "value": "2"}], validate=True),
            "a dynamic broker config, validate only",
        ),
        C(
            f"{p}.alter_broker_read_only",
            API.ALTER_CONFIGS,
            2,
            alter(broker, [{"name": "log.dirs", "value": "/tmp/x"}], validate=True),
            "a read-only broker config, validate only",
        ),
        C(
            f"{p}.incremental_delete",
            API.INCREMENTAL_ALTER_CONFIGS,
            1,
            alter(t, [{"name": "retention.ms", "config_operation": 1, "value": None}]),
            "DELETE retention.ms (back to the default)",
        ),
        C(
            f"{p}.incremental_subtract",
            API.INCREMENTAL_ALTER_CONFIGS,
            1,
            alter(t, [{"name": "cleanup.policy", "config_operation": 3, "value": "delete"}]),
            "SUBTRACT delete from cleanup.policy",
        ),
        C(
            f"{p}.incremental_append_scalar",
            API.INCREMENTAL_ALTER_CONFIGS,
            1,
            alter(t, [{"name": "retention.ms", "config_operation": 2, "value": "5"}]),
            "APPEND to a config that is not a list",
        ),
        C(
            f"{p}.incremental_unknown_key",
            API.INCREMENTAL_ALTER_CONFIGS,
            1,
            alter(t, [{"name": "conformance.unknown", "config_operation": 0, "value": "1"}]),
            "SET a config Kafka does not have",
        ),
        C(
            f"{p}.incremental_twice",
            API.INCREMENTAL_ALTER_CONFIGS,
            1,
            alter(
                t,
                [
                    {"name": "retention.ms", "config_operation": 0, "value": "1"},
                    {"name": "retention.ms", "config_operation": 0, "value": "2"},
                ],
            ),
            "the same config twice",
        ),
        C(
            f"{p}.incremental_broker_validate",
            API.INCREMENTAL_ALTER_CONFIGS,
            1,
            alter(
                broker,
                [{"name": "log.cleaner.threads", "config_operation": 0, "value": "2"}],
                validate=True,
            ),
            "a dynamic broker config, validate only",
        ),
        settle(topic, {"retention.ms": "604800000", "cleanup.policy": "compact"}),
        C(
            f"{p}.topic_after",
            API.DESCRIBE_CONFIGS,
            4,
            describe(
                lambda ctx: [configs_resource(ctx, topic, ["retention.ms", "cleanup.policy"])],
                docs=False,
            ),
            "the topic's configs afterwards",
        ),
    ]
    return Scenario("configs", tuple(items))


def cluster() -> Scenario:
    topic, p = "cl-topic", "cluster"
    items: list[Item] = [create(topic, 3)]

    def reassign(
        replicas: Callable[[Ctx], list[int] | None], name: str = topic
    ) -> Callable[[Ctx], dict[str, Any]]:
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

    def dtp(
        limit: int, cursor: Callable[[Ctx], dict[str, Any] | None] = lambda ctx: None
    ) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: {
            "topics": [{"name": ctx.name(topic)}],
            "response_partition_limit": limit,
            "cursor": cursor(ctx),
        }

    def elect(kind: int, name: str, partitions: list[int]) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: {
            "election_type": kind,
            "topic_partitions": [{"topic": ctx.name(name), "partitions": partitions}],
            "timeout_ms": 10000,
        }

    C: Callable[..., Step] = step
    items += [
        C(
            f"{p}.describe_controllers",
            API.DESCRIBE_CLUSTER,
            1,
            {"include_cluster_authorized_operations": False, "endpoint_type": 2},
            "endpoint type 2 (controllers) asked of a broker",
        ),
        C(
            f"{p}.describe_bad_endpoint_type",
            API.DESCRIBE_CLUSTER,
            1,
            {"include_cluster_authorized_operations": False, "endpoint_type": 9},
            "endpoint type 9",
        ),
        C(
            f"{p}.reassign_unknown_broker",
            API.ALTER_PARTITION_REASSIGNMENTS,
            0,
            reassign(lambda ctx: [999]),
            "to a broker that does not exist",
        ),
        C(
            f"{p}.reassign_duplicate",
            API.ALTER_PARTITION_REASSIGNMENTS,
            0,
            reassign(lambda ctx: [ctx.side.node_id, ctx.side.node_id]),
            "to the same broker twice",
        ),
        C(
            f"{p}.reassign_empty",
            API.ALTER_PARTITION_REASSIGNMENTS,
            0,
            reassign(lambda ctx: []),
            "to no replicas",
        ),
        C(
            f"{p}.reassign_cancel_none",
            API.ALTER_PARTITION_REASSIGNMENTS,
            0,
            reassign(lambda ctx: None),
            "cancel where nothing is ongoing",
        ),
        C(
            f"{p}.reassign_unknown_topic",
            API.ALTER_PARTITION_REASSIGNMENTS,
            0,
            reassign(lambda ctx: [ctx.side.node_id], "cl-never"),
            "a topic that does not exist",
        ),
        C(
            f"{p}.list_reassignments_unknown",
            API.LIST_PARTITION_REASSIGNMENTS,
            0,
            lambda ctx: {
                "timeout_ms": 10000,
                "topics": [{"name": ctx.name("cl-never"), "partition_indexes": [0]}],
            },
            "a topic that does not exist",
        ),
        C(
            f"{p}.elect_unknown_topic",
            API.ELECT_LEADERS,
            2,
            elect(0, "cl-never", [0]),
            "a topic that does not exist",
        ),
        C(
            f"{p}.elect_bad_partition",
            API.ELECT_LEADERS,
            2,
            elect(0, topic, [9]),
            "a partition the topic does not have",
        ),
        C(
            f"{p}.elect_unclean",
            API.ELECT_LEADERS,
            2,
            elect(1, topic, [0, 1]),
            "unclean election where leaders are live",
        ),
        C(f"{p}.elect_bad_type", API.ELECT_LEADERS, 2, elect(5, topic, [0]), "election type 5"),
        C(
            f"{p}.dtp_limit_1",
            API.DESCRIBE_TOPIC_PARTITIONS,
            0,
            dtp(1),
            "partition limit 1: a cursor for the rest",
        ),
        C(
            f"{p}.dtp_cursor",
            API.DESCRIBE_TOPIC_PARTITIONS,
            0,
            dtp(2000, lambda ctx: {"topic_name": ctx.name(topic), "partition_index": 1}),
            "from the cursor (partition 1)",
        ),
        C(
            f"{p}.log_dirs_unknown_topic",
            API.DESCRIBE_LOG_DIRS,
            4,
            lambda ctx: {"topics": [{"topic": ctx.name("cl-never"), "partitions": [0]}]},
            "a topic that does not exist",
        ),
    ]
    return Scenario("cluster", tuple(items))


def everything() -> Scenario:
    """Listings of everything the broker has, after every other scenario (phase 2)."""
    p = "everything"
    E: Callable[..., Step] = step
    steps = (
        E(
            f"{p}.metadata_v0",
            API.METADATA,
            0,
            {"topics": []},
            "Metadata v0 with no topics (v0: every topic)",
            listing=True,
        ),
        E(
            f"{p}.list_reassignments",
            API.LIST_PARTITION_REASSIGNMENTS,
            0,
            {"timeout_ms": 10000, "topics": None},
            "every ongoing reassignment",
            listing=True,
        ),
        E(
            f"{p}.describe_topic_partitions",
            API.DESCRIBE_TOPIC_PARTITIONS,
            0,
            {"topics": [], "response_partition_limit": 2000, "cursor": None},
            "every topic",
            listing=True,
        ),
        E(
            f"{p}.log_dirs",
            API.DESCRIBE_LOG_DIRS,
            4,
            {"topics": None},
            "every partition of every log dir",
            listing=True,
        ),
    )
    return Scenario("listings of everything", steps, phase=2)
