"""Consumer groups (classic protocol): one whole membership flow per JoinGroup version, the
error paths, and static membership.

A flow for JoinGroup version v uses SyncGroup, Heartbeat, LeaveGroup and DescribeGroups at
min(v, their newest version), so the flows together cover every version of the five APIs.
Each flow has its own group and runs concurrently with the others: Kafka holds a new group's
first join for group.initial.rebalance.delay.ms (3 s), wirebroker answers at once.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    DATA,
    batch,
    create,
    keep,
    produce_now,
    step,
    topic_id,
)
from compat.conformance.script import Ctx, Item, Scenario, Step

Body = Callable[[Ctx], dict[str, Any]]
SESSION_MS = 30000
REBALANCE_MS = 60000
STRANGER = "conformance-stranger"  # a member id no group has
JG, SG, HB, LG = API.JOIN_GROUP, API.SYNC_GROUP, API.HEARTBEAT, API.LEAVE_GROUP
DG, OC, OF = API.DESCRIBE_GROUPS, API.OFFSET_COMMIT, API.OFFSET_FETCH


def _str(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def subscription(topic: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, [topics], user data (null)."""
    return struct.pack(">hi", 0, 1) + _str(topic) + struct.pack(">i", -1)


def assignment(topic: str, partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0: version, [topic, [partitions]], user data (null)."""
    out = struct.pack(">hi", 0, 1) + _str(topic) + struct.pack(">i", len(partitions))
    out += b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


def clamp(v: int, versions: list[int]) -> int:
    """The newest of `versions` not above `v` (the oldest when all are above)."""
    below = [x for x in versions if x <= v]
    return max(below) if below else min(versions)


def join_body(
    ctx: Ctx,
    group: str,
    topic: str,
    member: str = "",
    *,
    instance: str | None = None,
    session_ms: int = SESSION_MS,
    protocol_type: str = "consumer",
) -> dict[str, Any]:
    return {
        "group_id": ctx.name(group),
        "session_timeout_ms": session_ms,
        "rebalance_timeout_ms": REBALANCE_MS,
        "member_id": member,
        "group_instance_id": None if instance is None else ctx.name(instance),
        "protocol_type": protocol_type,
        "protocols": [{"name": "range", "metadata": subscription(ctx.name(topic))}],
        "reason": "conformance",
    }


def _member(ctx: Ctx) -> str:
    member: str = ctx.vars["member"]
    return member


def _gen(ctx: Ctx) -> int:
    generation: int = ctx.vars["generation"]
    return generation


def _keep_join(ctx: Ctx, answer: Any) -> None:
    ctx.vars["member"] = answer.member_id
    ctx.vars["generation"] = answer.generation_id


def join_steps(
    prefix: str, v: int, group: str, topic: str, instance: str | None = None
) -> list[Step]:
    """Join as a new member: v4+ first gets MEMBER_ID_REQUIRED with its id, then joins."""
    if v < 4 or instance is not None:
        return [
            step(
                f"{prefix}.join",
                JG,
                v,
                lambda ctx: join_body(ctx, group, topic, instance=instance),
                "a new member joins (no member id yet)",
                keep=_keep_join,
                timeout=30.0,
            )
        ]
    return [
        step(
            f"{prefix}.join_no_id",
            JG,
            v,
            lambda ctx: join_body(ctx, group, topic),
            "a new member without an id (KIP-394: the broker gives one)",
            keep=keep("member", lambda a: a.member_id),
        ),
        step(
            f"{prefix}.join",
            JG,
            v,
            lambda ctx: join_body(ctx, group, topic, _member(ctx)),
            "joins again with the id it was given",
            keep=_keep_join,
            timeout=30.0,
        ),
    ]


def sync(group: str, topic: str, **over: Any) -> Body:
    """The leader's SyncGroup with an assignment of partitions 0 and 1 to itself."""

    def body(ctx: Ctx) -> dict[str, Any]:
        return {
            "group_id": ctx.name(group),
            "generation_id": _gen(ctx),
            "member_id": _member(ctx),
            "group_instance_id": None,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [
                {"member_id": _member(ctx), "assignment": assignment(ctx.name(topic), [0, 1])}
            ],
            **{k: v(ctx) if callable(v) else v for k, v in over.items()},
        }

    return body


def heartbeat(
    group: str, generation: Any = None, member: str | None = None, instance: str | None = None
) -> Body:
    """A Heartbeat; `generation` may be a function of ctx, None: the current one."""
    return lambda ctx: {
        "group_id": ctx.name(group),
        "generation_id": _gen(ctx)
        if generation is None
        else (generation(ctx) if callable(generation) else generation),
        "member_id": _member(ctx) if member is None else member,
        "group_instance_id": None if instance is None else ctx.name(instance),
    }


def commit(
    group: str,
    topic: str,
    generation: Callable[[Ctx], int],
    member: Callable[[Ctx], str],
    partition: int = 0,
) -> Body:
    return lambda ctx: {
        "group_id": ctx.name(group),
        "generation_id_or_member_epoch": generation(ctx),
        "member_id": member(ctx),
        "group_instance_id": None,
        "topics": [
            {
                "name": ctx.name(topic),
                "topic_id": topic_id(ctx, topic),
                "partitions": [
                    {"partition_index": partition, "committed_offset": 5, "committed_metadata": ""}
                ],
            }
        ],
    }


def describe(group: str) -> Body:
    return lambda ctx: {"groups": [ctx.name(group)], "include_authorized_operations": True}


def leave(group: str) -> Body:
    return lambda ctx: {
        "group_id": ctx.name(group),
        "member_id": _member(ctx),
        "members": [{"member_id": _member(ctx), "group_instance_id": None, "reason": "done"}],
    }


def flow(v: int, versions: dict[str, list[int]]) -> Scenario:
    """The whole life of a one-member group, JoinGroup at version `v`."""
    group, topic, p = f"grp-v{v}", f"grp-v{v}-topic", f"group-v{v}"
    s, h = clamp(v, versions["sync"]), clamp(v, versions["heartbeat"])
    lv, d = clamp(v, versions["leave"]), clamp(v, versions["describe"])
    find = {"key_type": 0}
    items: list[Item] = [
        create(topic, 2, DATA),
        produce_now(topic, 0, batch(6)),
        step(
            f"{p}.find_coordinator",
            API.FIND_COORDINATOR,
            3,
            lambda ctx: {**find, "key": ctx.name(group)},
            "the group's coordinator",
        ),
        *join_steps(p, v, group, topic),
        step(
            f"{p}.sync", SG, s, sync(group, topic), "the leader sends its assignment", timeout=30.0
        ),
        step(f"{p}.heartbeat", HB, h, heartbeat(group), "a heartbeat of the current generation"),
        step(f"{p}.describe_stable", DG, d, describe(group), "the group, stable with one member"),
        step(
            f"{p}.commit", OC, 8, commit(group, topic, _gen, _member), "the member commits offset 5"
        ),
        step(
            f"{p}.heartbeat_old_generation",
            HB,
            h,
            heartbeat(group, generation=lambda ctx: _gen(ctx) + 5),
            "a heartbeat of a generation the group never had",
        ),
        step(
            f"{p}.heartbeat_unknown_member",
            HB,
            h,
            heartbeat(group, member=STRANGER),
            "a heartbeat from a member the group does not have",
        ),
        step(f"{p}.leave", LG, lv, leave(group), "the member leaves"),
        step(f"{p}.describe_empty", DG, d, describe(group), "the group, empty, with its offsets"),
        step(f"{p}.heartbeat_after_leave", HB, h, heartbeat(group), "a heartbeat after leaving"),
    ]
    return Scenario(f"group flow JoinGroup v{v}", tuple(items))


GROUP, TOPIC, NEVER = "grp-errors", "grp-errors-topic", "grp-never"


def _unknown_group_sync(ctx: Ctx) -> dict[str, Any]:
    return {
        "group_id": ctx.name(NEVER),
        "generation_id": 1,
        "member_id": STRANGER,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [],
    }


def fetch_offsets(group: str, topic: str) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        parts = {
            "name": ctx.name(topic),
            "topic_id": topic_id(ctx, topic),
            "partition_indexes": [0, 1],
        }
        groups = [
            {"group_id": ctx.name(group), "member_id": None, "member_epoch": -1, "topics": [parts]}
        ]
        return {"groups": groups, "require_stable": True}

    return body


def _leave_as(group: str, member: str) -> Body:
    return lambda ctx: {
        "group_id": ctx.name(group),
        "members": [{"member_id": member, "group_instance_id": None}],
    }


def _delete(group: str) -> Body:
    return lambda ctx: {"groups_names": [ctx.name(group)]}


BEFORE_JOIN: tuple[Item, ...] = (
    step(
        "group-errors.join_bad_session",
        JG,
        9,
        lambda ctx: join_body(ctx, GROUP, TOPIC, session_ms=1),
        "session timeout 1 ms (below group.min.session.timeout.ms)",
    ),
    step(
        "group-errors.join_empty_group_id",
        JG,
        9,
        lambda ctx: {**join_body(ctx, GROUP, TOPIC), "group_id": ""},
        "an empty group id",
    ),
    step(
        "group-errors.join_no_protocol_type",
        JG,
        9,
        lambda ctx: join_body(ctx, GROUP, TOPIC, protocol_type=""),
        "an empty protocol type",
    ),
    step(
        "group-errors.heartbeat_unknown_group",
        HB,
        4,
        heartbeat(NEVER, 1, STRANGER),
        "a heartbeat to a group that does not exist",
    ),
    step(
        "group-errors.sync_unknown_group",
        SG,
        5,
        _unknown_group_sync,
        "a SyncGroup to a group that does not exist",
    ),
    step("group-errors.describe_unknown", DG, 5, describe(NEVER), "a group that does not exist"),
    step(
        "group-errors.delete_unknown",
        API.DELETE_GROUPS,
        2,
        _delete(NEVER),
        "delete a group that does not exist",
    ),
    step(
        "group-errors.leave_unknown_group",
        LG,
        5,
        _leave_as(NEVER, STRANGER),
        "leave a group that does not exist",
    ),
)

AFTER_JOIN: tuple[Item, ...] = (
    step("group-errors.sync", SG, 5, sync(GROUP, TOPIC), "the leader's assignment", timeout=30.0),
    step(
        "group-errors.sync_wrong_generation",
        SG,
        5,
        sync(GROUP, TOPIC, generation_id=lambda ctx: _gen(ctx) + 3),
        "SyncGroup with a generation the group never had",
    ),
    step(
        "group-errors.sync_unknown_member",
        SG,
        5,
        sync(GROUP, TOPIC, member_id=STRANGER),
        "SyncGroup from an unknown member",
    ),
    step(
        "group-errors.join_other_protocol_type",
        JG,
        9,
        lambda ctx: join_body(ctx, GROUP, TOPIC, protocol_type="connect"),
        "a new member with another protocol type",
    ),
    step(
        "group-errors.commit_stale_generation",
        OC,
        9,
        commit(GROUP, TOPIC, lambda ctx: _gen(ctx) - 1, _member),
        "a commit of the previous generation",
    ),
    step(
        "group-errors.commit_unknown_member",
        OC,
        9,
        commit(GROUP, TOPIC, _gen, lambda ctx: STRANGER),
        "a commit from an unknown member",
    ),
    step(
        "group-errors.commit_unknown_partition",
        OC,
        9,
        commit(GROUP, TOPIC, _gen, _member, partition=9),
        "a commit for a partition the topic does not have",
    ),
    step(
        "group-errors.commit_simple_to_live_group",
        OC,
        9,
        commit(GROUP, TOPIC, lambda ctx: -1, lambda ctx: ""),
        "a simple consumer's commit to a group with members",
    ),
    step("group-errors.commit", OC, 9, commit(GROUP, TOPIC, _gen, _member), "the member commits"),
    step(
        "group-errors.offset_delete_subscribed",
        API.OFFSET_DELETE,
        0,
        lambda ctx: {
            "group_id": ctx.name(GROUP),
            "topics": [{"name": ctx.name(TOPIC), "partitions": [{"partition_index": 0}]}],
        },
        "delete offsets of a topic the group subscribes to",
    ),
    step(
        "group-errors.delete_non_empty",
        API.DELETE_GROUPS,
        2,
        _delete(GROUP),
        "delete a group with a member",
    ),
    step(
        "group-errors.leave_unknown_member",
        LG,
        5,
        _leave_as(GROUP, STRANGER),
        "a member the group does not have leaves",
    ),
    step(
        "group-errors.offset_fetch_unstable",
        OF,
        8,
        fetch_offsets(GROUP, TOPIC),
        "the group's offsets, require_stable",
    ),
    step("group-errors.leave", LG, 5, leave(GROUP), "the member leaves"),
    step(
        "group-errors.delete_empty",
        API.DELETE_GROUPS,
        2,
        _delete(GROUP),
        "delete the now empty group",
    ),
    step(
        "group-errors.offset_fetch_deleted",
        OF,
        8,
        fetch_offsets(GROUP, TOPIC),
        "the deleted group's offsets",
    ),
)


def errors() -> Scenario:
    """Error paths of the group APIs, at the newest versions both serve."""
    joined = join_steps("group-errors", 9, GROUP, TOPIC)
    return Scenario("group errors", (create(TOPIC, 2, DATA), *BEFORE_JOIN, *joined, *AFTER_JOIN))


def static_members() -> Scenario:
    """Static membership (KIP-345): a second member with the same instance id fences the first."""
    group, topic, p, instance = "grp-static", "grp-static-topic", "group-static", "instance-a"
    items: list[Item] = [
        create(topic, 1, DATA),
        *join_steps(p, 9, group, topic, instance=instance),
        step(
            f"{p}.sync",
            SG,
            5,
            sync(group, topic, group_instance_id=lambda ctx: ctx.name(instance)),
            "the static leader's assignment",
            timeout=30.0,
        ),
        step(
            f"{p}.rejoin_same_instance",
            JG,
            9,
            lambda ctx: join_body(ctx, group, topic, instance=instance),
            "a new member id for the same instance id replaces the first",
            keep=keep("member2", lambda a: a.member_id),
            timeout=30.0,
        ),
        step(
            f"{p}.heartbeat_fenced",
            HB,
            4,
            heartbeat(group, instance=instance),
            "the replaced member's heartbeat",
        ),
        step(f"{p}.describe", DG, 5, describe(group), "the group with its static member"),
        step(
            f"{p}.leave_by_instance",
            LG,
            5,
            lambda ctx: {
                "group_id": ctx.name(group),
                "members": [
                    {"member_id": "", "group_instance_id": ctx.name(instance), "reason": None}
                ],
            },
            "leave by instance id",
        ),
    ]
    return Scenario("group static membership", tuple(items))
