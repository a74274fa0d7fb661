"""Consumer groups (classic protocol): one whole membership flow per JoinGroup version, and
the error paths.

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

SESSION_MS = 30000
REBALANCE_MS = 60000


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


def _member(ctx: Ctx, var: str = "member") -> str:
    member: str = ctx.vars[var]
    return member


def _gen(ctx: Ctx, var: str = "generation") -> int:
    generation: int = ctx.vars[var]
    return generation


def join_steps(
    prefix: str, v: int, group: str, topic: str, instance: str | None = None
) -> list[Step]:
    """Join as a new member: v4+ first gets MEMBER_ID_REQUIRED with its id, then joins."""
    keep_join = _keep_join
    if v < 4 or instance is not None:
        return [
            step(
                f"{prefix}.join",
                API.JOIN_GROUP,
                v,
                lambda ctx: join_body(ctx, group, topic, instance=instance),
                "a new member joins (no member id yet)",
                keep=keep_join,
                timeout=30.0,
            )
        ]
    return [
        step(
            f"{prefix}.join_no_id",
            API.JOIN_GROUP,
            v,
            lambda ctx: join_body(ctx, group, topic),
            "a new member without an id (KIP-394: the broker gives one)",
            keep=keep("member", lambda a: a.member_id),
        ),
        step(
            f"{prefix}.join",
            API.JOIN_GROUP,
            v,
            lambda ctx: join_body(ctx, group, topic, _member(ctx)),
            "joins again with the id it was given",
            keep=keep_join,
            timeout=30.0,
        ),
    ]


def _keep_join(ctx: Ctx, answer: Any) -> None:
    ctx.vars["member"] = answer.member_id
    ctx.vars["generation"] = answer.generation_id


def _sync(ctx: Ctx, group: str, topic: str) -> dict[str, Any]:
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
    }


def _heartbeat(
    ctx: Ctx, group: str, generation: int | None = None, member: str | None = None
) -> dict[str, Any]:
    return {
        "group_id": ctx.name(group),
        "generation_id": _gen(ctx) if generation is None else generation,
        "member_id": _member(ctx) if member is None else member,
        "group_instance_id": None,
    }


def _commit(
    ctx: Ctx, group: str, topic: str, generation: int, member: str, partition: int = 0
) -> dict[str, Any]:
    return {
        "group_id": ctx.name(group),
        "generation_id_or_member_epoch": generation,
        "member_id": member,
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


def _describe(ctx: Ctx, group: str) -> dict[str, Any]:
    return {"groups": [ctx.name(group)], "include_authorized_operations": True}


def _leave(ctx: Ctx, group: str) -> dict[str, Any]:
    return {
        "group_id": ctx.name(group),
        "member_id": _member(ctx),
        "members": [{"member_id": _member(ctx), "group_instance_id": None, "reason": "done"}],
    }


def flow(v: int, versions: dict[str, list[int]]) -> Scenario:
    """The whole life of a one-member group, JoinGroup at version `v`."""
    group, topic, p = f"grp-v{v}", f"grp-v{v}-topic", f"group-v{v}"
    s, h = clamp(v, versions["sync"]), clamp(v, versions["heartbeat"])
    lv, d = clamp(v, versions["leave"]), clamp(v, versions["describe"])
    G: Callable[..., Step] = step
    items: list[Item] = [create(topic, 2, DATA), produce_now(topic, 0, batch(6))]
    items.append(
        G(
            f"{p}.find_coordinator",
            API.FIND_COORDINATOR,
            3,
            lambda ctx: {"key": ctx.name(group), "key_type": 0},
            "the group's coordinator",
        )
    )
    items += join_steps(p, v, group, topic)
    items += [
        G(
            f"{p}.sync",
            API.SYNC_GROUP,
            s,
            lambda ctx: _sync(ctx, group, topic),
            "the leader sends its assignment",
            timeout=30.0,
        ),
        G(
            f"{p}.heartbeat",
            API.HEARTBEAT,
            h,
            lambda ctx: _heartbeat(ctx, group),
            "a heartbeat of the current generation",
        ),
        G(
            f"{p}.describe_stable",
            API.DESCRIBE_GROUPS,
            d,
            lambda ctx: _describe(ctx, group),
            "the group, stable with one member",
        ),
        G(
            f"{p}.commit",
            API.OFFSET_COMMIT,
            8,
            lambda ctx: _commit(ctx, group, topic, _gen(ctx), _member(ctx)),
            "the member commits offset 5",
        ),
        G(
            f"{p}.heartbeat_old_generation",
            API.HEARTBEAT,
            h,
            lambda ctx: _heartbeat(ctx, group, generation=_gen(ctx) + 5),
            "a heartbeat of a generation the group never had",
        ),
        G(
            f"{p}.heartbeat_unknown_member",
            API.HEARTBEAT,
            h,
            lambda ctx: _heartbeat(ctx, group, member="conformance-stranger"),
            "a heartbeat from a member the group does not have",
        ),
        G(f"{p}.leave", API.LEAVE_GROUP, lv, lambda ctx: _leave(ctx, group), "the member leaves"),
        G(
            f"{p}.describe_empty",
            API.DESCRIBE_GROUPS,
            d,
            lambda ctx: _describe(ctx, group),
            "the group, empty, with its offsets",
        ),
        G(
            f"{p}.heartbeat_after_leave",
            API.HEARTBEAT,
            h,
            lambda ctx: _heartbeat(ctx, group),
            "a heartbeat after leaving",
        ),
    ]
    return Scenario(f"group flow JoinGroup v{v}", tuple(items))


def errors() -> Scenario:
    """Error paths of the group APIs, at the newest versions both serve."""
    group, topic, p = "grp-errors", "grp-errors-topic", "group-errors"
    G: Callable[..., Step] = step
    items: list[Item] = [create(topic, 2, DATA)]
    items += [
        G(
            f"{p}.join_bad_session",
            API.JOIN_GROUP,
            9,
            lambda ctx: join_body(ctx, group, topic, session_ms=1),
            "session timeout 1 ms (below group.min.session.timeout.ms)",
        ),
        G(
            f"{p}.join_empty_group_id",
            API.JOIN_GROUP,
            9,
            lambda ctx: {**join_body(ctx, group, topic), "group_id": ""},
            "an empty group id",
        ),
        G(
            f"{p}.join_no_protocol_type",
            API.JOIN_GROUP,
            9,
            lambda ctx: join_body(ctx, group, topic, protocol_type=""),
            "an empty protocol type",
        ),
        G(
            f"{p}.heartbeat_unknown_group",
            API.HEARTBEAT,
            4,
            lambda ctx: _heartbeat(ctx, "grp-never", 1, "conformance-stranger"),
            "a heartbeat to a group that does not exist",
        ),
        G(
            f"{p}.sync_unknown_group",
            API.SYNC_GROUP,
            5,
            lambda ctx: {**_sync_unknown(ctx), "group_id": ctx.name("grp-never")},
            "a SyncGroup to a group that does not exist",
        ),
        G(
            f"{p}.describe_unknown",
            API.DESCRIBE_GROUPS,
            5,
            lambda ctx: _describe(ctx, "grp-never"),
            "a group that does not exist",
        ),
        G(
            f"{p}.delete_unknown",
            API.DELETE_GROUPS,
            2,
            lambda ctx: {"groups_names": [ctx.name("grp-never")]},
            "delete a group that does not exist",
        ),
        G(
            f"{p}.leave_unknown_group",
            API.LEAVE_GROUP,
            5,
            lambda ctx: {
                "group_id": ctx.name("grp-never"),
                "members": [{"member_id": "conformance-stranger", "group_instance_id": None}],
            },
            "leave a group that does not exist",
        ),
    ]
    items += join_steps(p, 9, group, topic)
    items += [
        G(
            f"{p}.sync",
            API.SYNC_GROUP,
            5,
            lambda ctx: _sync(ctx, group, topic),
            "the leader's assignment",
            timeout=30.0,
        ),
        G(
            f"{p}.sync_wrong_generation",
            API.SYNC_GROUP,
            5,
            lambda ctx: {**_sync(ctx, group, topic), "generation_id": _gen(ctx) + 3},
            "SyncGroup with a generation the group never had",
        ),
        G(
            f"{p}.sync_unknown_member",
            API.SYNC_GROUP,
            5,
            lambda ctx: {**_sync(ctx, group, topic), "member_id": "conformance-stranger"},
            "SyncGroup from an unknown member",
        ),
        G(
            f"{p}.join_other_protocol_type",
            API.JOIN_GROUP,
            9,
            lambda ctx: join_body(ctx, group, topic, protocol_type="connect"),
            "a new member with another protocol type",
        ),
        G(
            f"{p}.commit_stale_generation",
            API.OFFSET_COMMIT,
            9,
            lambda ctx: _commit(ctx, group, topic, _gen(ctx) - 1, _member(ctx)),
            "a commit of the previous generation",
        ),
        G(
            f"{p}.commit_unknown_member",
            API.OFFSET_COMMIT,
            9,
            lambda ctx: _commit(ctx, group, topic, _gen(ctx), "conformance-stranger"),
            "a commit from an unknown member",
        ),
        G(
            f"{p}.commit_unknown_partition",
            API.OFFSET_COMMIT,
            9,
            lambda ctx: _commit(ctx, group, topic, _gen(ctx), _member(ctx), partition=9),
            "a commit for a partition the topic does not have",
        ),
        G(
            f"{p}.commit_simple_to_live_group",
            API.OFFSET_COMMIT,
            9,
            lambda ctx: _commit(ctx, group, topic, -1, ""),
            "a simple consumer's commit to a group with members",
        ),
        G(
            f"{p}.commit",
            API.OFFSET_COMMIT,
            9,
            lambda ctx: _commit(ctx, group, topic, _gen(ctx), _member(ctx)),
            "the member commits",
        ),
        G(
            f"{p}.offset_delete_subscribed",
            API.OFFSET_DELETE,
            0,
            lambda ctx: {
                "group_id": ctx.name(group),
                "topics": [{"name": ctx.name(topic), "partitions": [{"partition_index": 0}]}],
            },
            "delete offsets of a topic the group subscribes to",
        ),
        G(
            f"{p}.delete_non_empty",
            API.DELETE_GROUPS,
            2,
            lambda ctx: {"groups_names": [ctx.name(group)]},
            "delete a group with a member",
        ),
        G(
            f"{p}.leave_unknown_member",
            API.LEAVE_GROUP,
            5,
            lambda ctx: {
                "group_id": ctx.name(group),
                "members": [{"member_id": "conformance-stranger", "group_instance_id": None}],
            },
            "a member the group does not have leaves",
        ),
        G(
            f"{p}.offset_fetch_unstable",
            API.OFFSET_FETCH,
            8,
            lambda ctx: _fetch_offsets(ctx, group, topic),
            "the group's offsets, require_stable",
        ),
        G(f"{p}.leave", API.LEAVE_GROUP, 5, lambda ctx: _leave(ctx, group), "the member leaves"),
        G(
            f"{p}.delete_empty",
            API.DELETE_GROUPS,
            2,
            lambda ctx: {"groups_names": [ctx.name(group)]},
            "delete the now empty group",
        ),
        G(
            f"{p}.offset_fetch_deleted",
            API.OFFSET_FETCH,
            8,
            lambda ctx: _fetch_offsets(ctx, group, topic),
            "the deleted group's offsets",
        ),
    ]
    return Scenario("group errors", tuple(items))


def _sync_unknown(ctx: Ctx) -> dict[str, Any]:
    return {
        "group_id": "",
        "generation_id": 1,
        "member_id": "conformance-stranger",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [],
    }


def _fetch_offsets(ctx: Ctx, group: str, topic: str) -> dict[str, Any]:
    parts = {"name": ctx.name(topic), "topic_id": topic_id(ctx, topic), "partition_indexes": [0, 1]}
    return {
        "groups": [
            {"group_id": ctx.name(group), "member_id": None, "member_epoch": -1, "topics": [parts]}
        ],
        "require_stable": True,
    }


def static_members() -> Scenario:
    """Static membership (KIP-345): a second member with the same instance id fences the first."""
    group, topic, p = "grp-static", "grp-static-topic", "group-static"
    G: Callable[..., Step] = step
    items: list[Item] = [create(topic, 1, DATA)]
    items += join_steps(p, 9, group, topic, instance="instance-a")
    items += [
        G(
            f"{p}.sync",
            API.SYNC_GROUP,
            5,
            lambda ctx: {**_sync(ctx, group, topic), "group_instance_id": ctx.name("instance-a")},
            "the static leader's assignment",
            timeout=30.0,
        ),
        G(
            f"{p}.rejoin_same_instance",
            API.JOIN_GROUP,
            9,
            lambda ctx: join_body(ctx, group, topic, instance="instance-a"),
            "a new member id for the same instance id replaces the first",
            keep=keep("member2", lambda a: a.member_id),
            timeout=30.0,
        ),
        G(
            f"{p}.heartbeat_fenced",
            API.HEARTBEAT,
            4,
            lambda ctx: {**_heartbeat(ctx, group), "group_instance_id": ctx.name("instance-a")},
            "the replaced member's heartbeat",
        ),
        G(
            f"{p}.describe",
            API.DESCRIBE_GROUPS,
            5,
            lambda ctx: _describe(ctx, group),
            "the group with its static member",
        ),
        G(
            f"{p}.leave_by_instance",
            API.LEAVE_GROUP,
            5,
            lambda ctx: {
                "group_id": ctx.name(group),
                "members": [
                    {"member_id": "", "group_instance_id": ctx.name("instance-a"), "reason": None}
                ],
            },
            "leave by instance id",
        ),
    ]
    return Scenario("group static membership", tuple(items))
