"""Streams groups (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe and
StreamsGroupTopologyDescriptionUpdate (issue 35).

One streams group's life per StreamsGroupHeartbeat version, each with its own group and
source topic (2 partitions): a member joins with a topology of one subtopology reading the
topic (no state store, no repartition topic: Kafka creates no internal topic) and is given
both tasks; it heartbeats owning them; the group is described (v1+: with the topology
description); the error paths (an empty member id, no topology on a join, a subtopology
without source topics, a member epoch from the future, an unknown member, a topology
description with no plugin configured); a member of another group whose source topic does
not exist (a status, not an error); both leave; the group is described empty and deleted.
The group's initial rebalance delay (3 s) and assignment interval are set to 0 where streams
groups are served (corpus.base.group_configs), so that the join's answer holds the tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import API, create, forget_group, group_configs, step
from compat.conformance.corpus.members import STRANGER, Epoch, Member, identity, spread
from compat.conformance.script import Ctx, Item, Scenario

SGH, SGD, TDU = (
    API.STREAMS_GROUP_HEARTBEAT,
    API.STREAMS_GROUP_DESCRIBE,
    API.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE,
)
CONFIGS = {"streams.initial.rebalance.delay.ms": "0", "streams.assignment.interval.ms": "0"}
Body = Callable[[Ctx], dict[str, Any]]
SOURCE, SINK = 1, 3  # TopologyDescriptionNode node types


def topology(ctx: Ctx, source: str | None) -> dict[str, Any]:
    """One subtopology "0" reading `source` (None: no source topic at all)."""
    return {
        "epoch": 0,
        "subtopologies": [
            {
                "subtopology_id": "0",
                "source_topics": [] if source is None else [ctx.name(source)],
                "source_topic_regex": [],
                "state_changelog_topics": [],
                "repartition_sink_topics": [],
                "repartition_source_topics": [],
                "copartition_groups": [],
            }
        ],
    }


def heartbeat(
    group: str,
    member: Member | None,
    *,
    epoch: Epoch = None,
    source: str | None = None,
    join: bool = False,
    owned: list[int] | None = None,
    endpoint: bool = True,
) -> Body:
    """A StreamsGroupHeartbeat. `join`: with the topology (reading `source`), the process id
    and the client's endpoint (when `endpoint`); else those unchanged (null). `owned`: the
    active tasks of subtopology 0 the member reports (None: unchanged)."""

    def body(ctx: Ctx) -> dict[str, Any]:
        member_id, current = identity(ctx, member, epoch)
        tasks = None if owned is None else [{"subtopology_id": "0", "partitions": owned}]
        return {
            "group_id": ctx.name(group),
            "member_id": member_id,
            "member_epoch": current,
            "endpoint_information_epoch": 0,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout_ms": 30000,
            "topology": topology(ctx, source) if join else None,
            "active_tasks": [] if join else tasks,
            "standby_tasks": [] if join or owned is not None else None,
            "warmup_tasks": [] if join or owned is not None else None,
            "process_id": "process-1" if join else None,
            "user_endpoint": {"host": "localhost", "port": 8080} if join and endpoint else None,
            "client_tags": [] if join else None,
            "task_offsets": [] if join else None,
            "task_end_offsets": [] if join else None,
            "shutdown_application": False,
        }

    return body


def describe(groups: list[str], operations: bool = True) -> Body:
    return lambda ctx: {
        "group_ids": [ctx.name(g) for g in groups],
        "include_authorized_operations": operations,
        "include_topology_description": True,
    }


def topology_update(group: str, member: Member | str) -> Body:
    """A topology description: a source node reading the topic, a sink node writing out."""

    def body(ctx: Ctx) -> dict[str, Any]:
        nodes = [
            {
                "name": "KSTREAM-SOURCE-0000000000",
                "node_type": SOURCE,
                "source_topics": [ctx.name(f"{group}-in")],
                "sink_topic": None,
                "stores": [],
                "successors": ["KSTREAM-SINK-0000000001"],
            },
            {
                "name": "KSTREAM-SINK-0000000001",
                "node_type": SINK,
                "source_topics": [],
                "sink_topic": ctx.name(f"{group}-out"),
                "stores": [],
                "successors": [],
            },
        ]
        return {
            "group_id": ctx.name(group),
            "member_id": member if isinstance(member, str) else member.id(ctx),
            "topology_epoch": 0,
            "topology_description": {
                "subtopologies": [{"subtopology_id": "0", "nodes": nodes}],
                "global_stores": [],
            },
        }

    return body


def _errors(prefix: str, v: int, group: str, m1: Member) -> list[Item]:
    other = f"{prefix}-invalid"
    return [
        step(
            f"{prefix}.join_without_id",
            SGH,
            v,
            heartbeat(group, None, epoch=0, source=f"{prefix}-in", join=True),
            "joining with an empty member id (the client makes its id)",
        ),
        step(
            f"{prefix}.join_without_topology",
            SGH,
            v,
            heartbeat(group, Member(f"{prefix}-m2"), epoch=0),
            "joining (epoch 0) without a topology",
        ),
        step(
            f"{prefix}.invalid_topology",
            SGH,
            v,
            heartbeat(other, Member(f"{prefix}-m2"), epoch=0, source=None, join=True),
            "joining another group with a subtopology that reads no topic",
        ),
        step(
            f"{prefix}.fenced_epoch",
            SGH,
            v,
            heartbeat(group, m1, epoch=lambda ctx: m1.epoch(ctx) + 10),
            "a member epoch ahead of the coordinator's",
        ),
        step(
            f"{prefix}.unknown_member",
            SGH,
            v,
            lambda ctx: {**heartbeat(group, None, epoch=1)(ctx), "member_id": STRANGER},
            "a member id the group does not know",
        ),
    ]


def _missing_source(prefix: str, v: int) -> list[Item]:
    """A member of another group whose source topic does not exist: a status, not an error
    (no client endpoint: Kafka 4.4 answers UNKNOWN_SERVER_ERROR to a join with one here)."""
    group, member = f"{prefix}-missing", Member(f"{prefix}-m3")
    return [
        group_configs(SGH, group, CONFIGS),
        step(
            f"{prefix}.missing_source_topic",
            SGH,
            v,
            heartbeat(group, member, epoch=0, source=f"{prefix}-none", join=True, endpoint=False),
            "a member of another group joins with a source topic that does not exist",
            keep=member.keep(),
        ),
        step(
            f"{prefix}.missing_source_topic_leaves",
            SGH,
            v,
            heartbeat(group, member, epoch=-1),
            "that member leaves",
        ),
        forget_group(SGH, group, CONFIGS),
    ]


def flow(v: int, describe_versions: list[int], update_versions: list[int]) -> Scenario:
    """One streams group's life at StreamsGroupHeartbeat v`v`."""
    prefix = f"st-v{v}"
    group, topic = prefix, f"{prefix}-in"
    m1 = Member(f"{prefix}-m1")
    items: list[Item] = [
        create(topic, 2),
        group_configs(SGH, group, CONFIGS),
        step(
            f"{prefix}.join",
            SGH,
            v,
            heartbeat(group, m1, epoch=0, source=topic, join=True),
            "a member joins a new group with a topology reading a topic of 2 partitions",
            keep=m1.keep(),
        ),
        step(
            f"{prefix}.heartbeat",
            SGH,
            v,
            heartbeat(group, m1, owned=[0, 1]),
            "the member heartbeats, running the tasks it was given",
            keep=m1.keep(),
        ),
    ]
    items += [
        step(
            f"{prefix}.describe_v{d}",
            SGD,
            d,
            describe([group, f"{prefix}-none"]),
            "the group (topology, members, tasks) and a group that does not exist",
        )
        for d in describe_versions
    ]
    items += [
        step(
            f"{prefix}.topology_update_v{u}",
            TDU,
            u,
            topology_update(group, m1),
            "the member sends its topology's description",
        )
        for u in update_versions
    ]
    items += _errors(prefix, v, group, m1)
    items += _missing_source(prefix, v)
    items.append(
        step(
            f"{prefix}.leave",
            SGH,
            v,
            heartbeat(group, m1, epoch=-1),
            "the member leaves (member epoch -1)",
        )
    )
    if describe_versions:
        items.append(
            step(
                f"{prefix}.describe_empty",
                SGD,
                describe_versions[-1],
                describe([group], operations=False),
                "the group once its member left",
            )
        )
    items.append(forget_group(SGH, group, CONFIGS))
    return Scenario(f"streams group v{v} (KIP-1071)", tuple(items))


def flows(
    heartbeat_versions: list[int], describe_versions: list[int], update_versions: list[int]
) -> list[Scenario]:
    describes = spread(heartbeat_versions, describe_versions)
    updates = spread(heartbeat_versions, update_versions)
    return [flow(v, describes[v], updates[v]) for v in heartbeat_versions]
