"""Topics and Metadata beyond the sweeps: CreateTopics, CreatePartitions and DeleteTopics
with their error paths, and Metadata's auto-creation, topic ids and internal topics.

The steps are tables (module constants); each scenario function only puts its stage-setting
actions in front.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    NIL,
    creatable,
    create,
    metadata,
    step,
    topic_id,
    wait_gone,
    wait_topic,
)
from compat.conformance.script import Ctx, Do, HarnessError, Item, Scenario

Body = Callable[[Ctx], dict[str, Any]]
CT, CP, DT, MD = API.CREATE_TOPICS, API.CREATE_PARTITIONS, API.DELETE_TOPICS, API.METADATA


def _create(topics: list[dict[str, Any]], validate_only: bool = False) -> dict[str, Any]:
    return {"topics": topics, "timeout_ms": 30000, "validate_only": validate_only}


def one(
    logical: str,
    partitions: int = 1,
    configs: dict[str, str | None] | None = None,
    rf: int = 1,
) -> Body:
    """CreateTopics of one topic."""
    return lambda ctx: _create([creatable(ctx, logical, partitions, configs, rf)])


def named(name: str) -> Body:
    """CreateTopics of one topic with a literal (invalid) name."""
    return lambda ctx: _create([{**creatable(ctx, "adm-x", 1), "name": name}])


def assigned(
    logical: str,
    assignments: Callable[[int], list[dict[str, Any]]],
    count: int = -1,
    rf: int = -1,
) -> Body:
    """CreateTopics with explicit assignments (a function of the side's node id)."""

    def body(ctx: Ctx) -> dict[str, Any]:
        topic = {
            **creatable(ctx, logical, count, None, rf),
            "assignments": assignments(ctx.side.node_id),
        }
        return _create([topic])

    return body


def _meta_of(logicals: list[str]) -> Body:
    return lambda ctx: {
        "topics": [{"name": ctx.name(n), "topic_id": NIL} for n in logicals],
        "allow_auto_topic_creation": False,
    }


WITH_CONFIGS = {
    "cleanup.policy": "compact",
    "min.insync.replicas": "1",
    "segment.bytes": "1048576",
    "compression.type": "zstd",
}

CREATE_TOPICS: tuple[Item, ...] = (
    step(
        "create_topics.with_configs",
        CT,
        7,
        one("adm-configs", 3, WITH_CONFIGS),
        "3 partitions and 4 configs: the answer lists every config",
    ),
    wait_topic("adm-configs", 3),
    step(
        "create_topics.defaults",
        CT,
        7,
        one("adm-defaults", -1, None, -1),
        "partitions and replication factor -1 (the broker's defaults)",
    ),
    wait_topic("adm-defaults"),
    step("create_topics.duplicate", CT, 7, one("adm-existing"), "a topic that exists"),
    step("create_topics.zero_partitions", CT, 7, one("adm-zero", 0), "0 partitions"),
    step("create_topics.negative_partitions", CT, 7, one("adm-negative", -5), "-5 partitions"),
    step(
        "create_topics.replication_2",
        CT,
        7,
        one("adm-rf2", 1, None, 2),
        "replication factor 2 on one broker",
    ),
    step("create_topics.replication_0", CT, 7, one("adm-rf0", 1, None, 0), "replication factor 0"),
    step(
        "create_topics.bad_config_value",
        CT,
        7,
        one("adm-badvalue", 1, {"retention.ms": "soon"}),
        "retention.ms=soon",
    ),
    step(
        "create_topics.unknown_config",
        CT,
        7,
        one("adm-unknownconfig", 1, {"conformance.unknown": "1"}),
        "a config Kafka does not have",
    ),
    step(
        "create_topics.config_out_of_range",
        CT,
        7,
        one("adm-range", 1, {"min.insync.replicas": "0"}),
        "min.insync.replicas=0",
    ),
    step(
        "create_topics.null_config_value",
        CT,
        7,
        one("adm-nullvalue", 1, {"retention.ms": None}),
        "a config with a null value",
    ),
    step("create_topics.bad_name", CT, 7, named("bad/name"), "the name bad/name"),
    step("create_topics.dot_name", CT, 7, named(".."), "the name .."),
    step("create_topics.long_name", CT, 7, named("x" * 250), "a name of 250 characters"),
    step("create_topics.empty_name", CT, 7, named(""), "an empty name"),
    step(
        "create_topics.twice_in_one_request",
        CT,
        7,
        lambda ctx: _create([creatable(ctx, "adm-twice", 1), creatable(ctx, "adm-twice", 2)]),
        "the same name twice in one request",
    ),
    step(
        "create_topics.validate_only",
        CT,
        7,
        lambda ctx: _create(
            [creatable(ctx, "adm-validate", 4, {"cleanup.policy": "compact"})], True
        ),
        "validate_only (nothing is created)",
    ),
    step(
        "create_topics.validate_only_metadata",
        MD,
        12,
        _meta_of(["adm-validate"]),
        "the validated topic does not exist",
    ),
    step(
        "create_topics.assignments",
        CT,
        7,
        assigned(
            "adm-assigned", lambda n: [{"partition_index": i, "broker_ids": [n]} for i in (0, 1)]
        ),
        "explicit replica assignments for 2 partitions",
    ),
    wait_topic("adm-assigned", 2),
    step(
        "create_topics.assignment_unknown_broker",
        CT,
        7,
        assigned("adm-badassign", lambda n: [{"partition_index": 0, "broker_ids": [999]}]),
        "an assignment to a broker that does not exist",
    ),
    step(
        "create_topics.assignment_with_count",
        CT,
        7,
        assigned("adm-both", lambda n: [{"partition_index": 0, "broker_ids": [n]}], count=2, rf=1),
        "assignments and a partition count together",
    ),
    step(
        "create_topics.metadata_after",
        MD,
        12,
        _meta_of(["adm-configs", "adm-defaults", "adm-assigned"]),
        "the created topics",
    ),
)


def create_topics() -> Scenario:
    return Scenario("create topics", (create("adm-existing", 1), *CREATE_TOPICS))


def grow(
    count: int, logical: str = "adm-grow", validate: bool = False, assignments: Any = None
) -> Body:
    """CreatePartitions of one topic; `assignments` may be a function of the node id."""

    def body(ctx: Ctx) -> dict[str, Any]:
        given = assignments(ctx.side.node_id) if callable(assignments) else assignments
        topic = {"name": ctx.name(logical), "count": count, "assignments": given}
        return {"topics": [topic], "timeout_ms": 30000, "validate_only": validate}

    return body


def delete(names: list[str | None], ids: Callable[[Ctx], list[uuid.UUID]] | None = None) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        topics = [{"name": ctx.name(n) if n else None, "topic_id": NIL} for n in names]
        topics += [{"name": None, "topic_id": t} for t in (ids(ctx) if ids else [])]
        return {"topics": topics, "timeout_ms": 30000}

    return body


PARTITIONS_AND_DELETES: tuple[Item, ...] = (
    step("topics.partitions_decrease", CP, 3, grow(1), "from 2 partitions to 1"),
    step("topics.partitions_same", CP, 3, grow(2), "from 2 partitions to 2"),
    step(
        "topics.partitions_unknown_topic",
        CP,
        3,
        grow(3, "adm-never"),
        "a topic that does not exist",
    ),
    step("topics.partitions_validate_only", CP, 3, grow(5, validate=True), "to 5, validate only"),
    step(
        "topics.partitions_bad_assignment",
        CP,
        3,
        grow(3, assignments=[{"broker_ids": [999]}]),
        "to 3 with the new partition on a broker that does not exist",
    ),
    step(
        "topics.partitions_wrong_assignment_count",
        CP,
        3,
        grow(4, assignments=lambda n: [{"broker_ids": [n]}]),
        "to 4 with one assignment for two new partitions",
    ),
    step(
        "topics.partitions_assigned",
        CP,
        3,
        grow(3, assignments=lambda n: [{"broker_ids": [n]}]),
        "to 3 with an assignment",
    ),
    wait_topic("adm-grow", 3),
    step(
        "topics.partitions_twice",
        CP,
        3,
        lambda ctx: {**grow(4)(ctx), "topics": grow(4)(ctx)["topics"] * 2},
        "the same topic twice in one request",
    ),
    step("topics.metadata_grown", MD, 12, _meta_of(["adm-grow"]), "the grown topic"),
    step("topics.delete_unknown", DT, 6, delete(["adm-never"]), "a topic that does not exist"),
    step(
        "topics.delete_unknown_id",
        DT,
        6,
        delete([], lambda ctx: [uuid.UUID(int=12345)]),
        "a topic id that does not exist",
    ),
    step(
        "topics.delete_by_id",
        DT,
        6,
        delete([], lambda ctx: [topic_id(ctx, "adm-doomed-by-id")]),
        "a topic by its id",
    ),
    step(
        "topics.delete_v5",
        DT,
        5,
        lambda ctx: {
            "topic_names": [ctx.name("adm-doomed"), ctx.name("adm-never")],
            "timeout_ms": 30000,
        },
        "a topic and a missing one, by name",
    ),
    wait_gone(["adm-doomed", "adm-doomed-by-id"]),
    step("topics.metadata_deleted", MD, 12, _meta_of(["adm-doomed"]), "the deleted topic"),
    step(
        "topics.produce_deleted",
        API.PRODUCE,
        9,
        lambda ctx: {
            "acks": -1,
            "timeout_ms": 1000,
            "topic_data": [
                {"name": ctx.name("adm-doomed"), "partition_data": [{"index": 0, "records": None}]}
            ],
        },
        "produce to the deleted topic",
    ),
)


def partitions_and_deletes() -> Scenario:
    stage = (create("adm-grow", 2), create("adm-doomed", 1), create("adm-doomed-by-id", 1))
    return Scenario("partitions and deletes", (*stage, *PARTITIONS_AND_DELETES))


def meta(names: list[str] | None, auto: bool) -> Body:
    """Metadata of `names` (logical, or literal after "!"); None: every topic."""
    return lambda ctx: {
        "topics": None
        if names is None
        else [{"name": ctx.name(n) if n[:1] != "!" else n[1:], "topic_id": NIL} for n in names],
        "allow_auto_topic_creation": auto,
        "include_topic_authorized_operations": False,
    }


def _wait_auto(logical: str) -> Do:
    """Give a broker that auto-creates the time to do it; one that does not is not an error
    here (the next step shows the difference)."""

    def created(ctx: Ctx) -> bool:
        topics = metadata(ctx, [logical]).topics
        return all(
            t.error_code == 0 and all(p.leader_id >= 0 for p in t.partitions) for t in topics
        )

    def run(ctx: Ctx) -> None:
        with contextlib.suppress(HarnessError):
            ctx.wait(f"topic {logical} auto-created", lambda: created(ctx), timeout=5.0)

    return Do(f"wait (up to 5 s) for the auto-created {logical}", run)


METADATA_CASES: tuple[Item, ...] = (
    step("metadata.no_topics", MD, 12, meta([], False), "no topics: brokers and controller only"),
    step(
        "metadata.unknown_no_auto",
        MD,
        12,
        meta(["meta-absent"], False),
        "a topic that does not exist, auto-creation off",
    ),
    step(
        "metadata.auto_create",
        MD,
        12,
        meta(["meta-auto"], True),
        "a topic that does not exist, allow_auto_topic_creation (a consumer's request)",
    ),
    _wait_auto("meta-auto"),
    step(
        "metadata.auto_created_after",
        MD,
        12,
        meta(["meta-auto"], False),
        "the same topic afterwards",
    ),
    step(
        "metadata.auto_create_v3",
        MD,
        3,
        meta(["meta-auto-v3"], True),
        "v3 (no flag: auto-creation allowed)",
    ),
    _wait_auto("meta-auto-v3"),
    step(
        "metadata.auto_created_v3_after",
        MD,
        12,
        meta(["meta-auto-v3"], False),
        "the same topic afterwards",
    ),
    step(
        "metadata.auto_create_bad_name",
        MD,
        12,
        meta(["!bad name!"], True),
        "auto-creation of an invalid name",
    ),
    step(
        "metadata.internal_topic",
        MD,
        12,
        meta(["!__consumer_offsets"], False),
        "the internal offsets topic",
    ),
    step(
        "metadata.by_topic_id",
        MD,
        12,
        lambda ctx: {
            "topics": [{"name": None, "topic_id": topic_id(ctx, "meta-known")}],
            "allow_auto_topic_creation": False,
        },
        "a topic by id (name null)",
    ),
    step(
        "metadata.known_and_unknown",
        MD,
        12,
        meta(["meta-known", "meta-absent"], False),
        "a topic that exists and one that does not",
    ),
    step("metadata.v0_known", MD, 0, meta(["meta-known"], False), "v0"),
)


def metadata_cases() -> Scenario:
    return Scenario("metadata", (create("meta-known", 2), *METADATA_CASES))
