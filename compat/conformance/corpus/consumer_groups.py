"""KIP-848 consumer groups: ConsumerGroupHeartbeat and ConsumerGroupDescribe (issue 35).

One whole membership per ConsumerGroupHeartbeat version, each with its own group and topic
(2 partitions): a member joins (v1+: with the id it made; v0: the broker gives one) and
gets both partitions, heartbeats owning them; a second member joins (v1+, the `range`
assignor, so that which partition moves is the same every run), the first is asked to
revoke one, confirms, the second gets it; the group is described; the error paths (a member
epoch from the future, an unknown member, an unknown assignor, an invalid regular
expression, an empty member id at v1); both leave, the empty group is described, and the
group is deleted. The group's assignment interval is set to 0 on a side that serves the API
(corpus.base.group_configs), so that each answer carries the assignment its request caused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    create,
    forget_group,
    group_configs,
    step,
    topic_id,
)
from compat.conformance.corpus.members import STRANGER, Epoch, Member, identity, spread
from compat.conformance.script import Ctx, Item, Scenario

CGH, CGD = API.CONSUMER_GROUP_HEARTBEAT, API.CONSUMER_GROUP_DESCRIBE
Body = Callable[[Ctx], dict[str, Any]]
CONFIGS = {"consumer.assignment.interval.ms": "0"}
REBALANCE_MS = 30000


def heartbeat(
    group: str,
    topic: str,
    member: Member | None,
    *,
    epoch: Epoch = None,
    subscribe: bool = False,
    owned: list[int] | None = None,
    assignor: str | None = None,
    regex: str | None = None,
) -> Body:
    """A ConsumerGroupHeartbeat: `member` (None: the empty member id) at its kept epoch
    (or `epoch`); subscribed to `topic` when `subscribe` (else unchanged: null); owning
    `owned` partitions of it (None: unchanged)."""

    def body(ctx: Ctx) -> dict[str, Any]:
        member_id, current = identity(ctx, member, epoch)
        partitions = None
        if owned is not None:
            partitions = [{"topic_id": topic_id(ctx, topic), "partitions": owned}] if owned else []
        return {
            "group_id": ctx.name(group),
            "member_id": member_id,
            "member_epoch": current,
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout_ms": REBALANCE_MS,
            "subscribed_topic_names": [ctx.name(topic)] if subscribe and not regex else None,
            "subscribed_topic_regex": regex,
            "server_assignor": assignor,
            "topic_partitions": partitions,
        }

    return body


def describe(groups: list[str], operations: bool = True) -> Body:
    return lambda ctx: {
        "group_ids": [ctx.name(g) for g in groups],
        "include_authorized_operations": operations,
    }


def _second_member(prefix: str, v: int, group: str, topic: str, m1: Member) -> list[Item]:
    """A second member joins; the first revokes partition 1 (range: members by id), the
    second then gets it (both leave at the end of the flow)."""
    m2 = Member(f"{prefix}-m2")
    hb = heartbeat
    return [
        step(
            f"{prefix}.second_joins",
            CGH,
            v,
            hb(group, topic, m2, epoch=0, subscribe=True, owned=[], assignor="range"),
            "a second member joins: nothing for it until the first revokes a partition",
            keep=m2.keep(),
        ),
        step(
            f"{prefix}.revoke",
            CGH,
            v,
            hb(group, topic, m1, owned=[0, 1]),
            "the first member, still owning both: told to keep partition 0 only",
            keep=m1.keep(),
        ),
        step(
            f"{prefix}.revoked",
            CGH,
            v,
            hb(group, topic, m1, owned=[0]),
            "the first member confirms it revoked partition 1: the new member epoch",
            keep=m1.keep(),
        ),
        step(
            f"{prefix}.second_assigned",
            CGH,
            v,
            hb(group, topic, m2, owned=[]),
            "the second member gets partition 1",
            keep=m2.keep(),
        ),
    ]


def _errors(prefix: str, v: int, group: str, topic: str, m1: Member) -> list[Item]:
    items: list[Item] = [
        step(
            f"{prefix}.fenced_epoch",
            CGH,
            v,
            heartbeat(group, topic, m1, epoch=lambda ctx: m1.epoch(ctx) + 10),
            "a member epoch ahead of the coordinator's: FENCED_MEMBER_EPOCH",
        ),
        step(
            f"{prefix}.unknown_member",
            CGH,
            v,
            lambda ctx: {**heartbeat(group, topic, None, epoch=1)(ctx), "member_id": STRANGER},
            "a member id the group does not know, epoch 1: UNKNOWN_MEMBER_ID",
        ),
        step(
            f"{prefix}.bad_assignor",
            CGH,
            v,
            heartbeat(
                f"{prefix}-bad",
                topic,
                Member(f"{prefix}-m3", broker_made=v == 0),
                epoch=0,
                subscribe=True,
                owned=[],
                assignor="conformance-none",
            ),
            "joining another group with an assignor the broker does not have",
        ),
    ]
    if v >= 1:
        items.append(
            step(
                f"{prefix}.bad_regex",
                CGH,
                v,
                heartbeat(
                    f"{prefix}-bad",
                    topic,
                    Member(f"{prefix}-m3"),
                    epoch=0,
                    owned=[],
                    regex="[",
                ),
                "joining with an invalid subscription regular expression (v1+)",
            )
        )
    return items


def flow(v: int, describe_versions: list[int]) -> Scenario:
    """One consumer group's life at ConsumerGroupHeartbeat v`v`."""
    prefix = f"cg-v{v}"
    group, topic = prefix, f"{prefix}-topic"
    m1 = Member(f"{prefix}-m1", broker_made=v == 0)
    items: list[Item] = [create(topic, 2), group_configs(CGH, group, CONFIGS)]
    if v >= 1:
        items.append(
            step(
                f"{prefix}.join_without_id",
                CGH,
                v,
                heartbeat(group, topic, None, epoch=0, subscribe=True, owned=[]),
                "joining with an empty member id (v1+: the client makes its id, KIP-1082)",
            )
        )
    items += [
        step(
            f"{prefix}.join",
            CGH,
            v,
            heartbeat(group, topic, m1, epoch=0, subscribe=True, owned=[], assignor="range"),
            "a member joins a new group (epoch 0) subscribing to a topic of 2 partitions",
            keep=m1.keep(),
        ),
        step(
            f"{prefix}.heartbeat",
            CGH,
            v,
            heartbeat(group, topic, m1, owned=[0, 1]),
            "the member heartbeats, owning what it was given (nothing changed: no assignment)",
            keep=m1.keep(),
        ),
    ]
    if v >= 1:
        items += _second_member(prefix, v, group, topic, m1)
    for d in describe_versions:
        items.append(
            step(
                f"{prefix}.describe_v{d}",
                CGD,
                d,
                describe([group, f"{prefix}-none"]),
                "the group (members, epochs, assignments) and a group that does not exist",
            )
        )
    items += _errors(prefix, v, group, topic, m1)
    items += _leave(prefix, v, group, topic, describe_versions)
    return Scenario(f"consumer group v{v} (KIP-848)", tuple(items))


def _leave(prefix: str, v: int, group: str, topic: str, describe_versions: list[int]) -> list[Item]:
    """Every member leaves, the empty group is described, then deleted."""
    members = [Member(f"{prefix}-m1", broker_made=v == 0)]
    if v >= 1:
        members.append(Member(f"{prefix}-m2"))
    items: list[Item] = [
        step(
            f"{prefix}.leave" if i == 0 else f"{prefix}.second_leaves",
            CGH,
            v,
            heartbeat(group, topic, member, epoch=-1),
            "the member leaves (member epoch -1)" if i == 0 else "the second member leaves too",
        )
        for i, member in enumerate(members)
    ]
    if describe_versions:
        items.append(
            step(
                f"{prefix}.describe_empty",
                CGD,
                describe_versions[-1],
                describe([group], operations=False),
                "the group once every member left",
            )
        )
    items.append(forget_group(CGH, group, CONFIGS))
    return items


def flows(heartbeat_versions: list[int], describe_versions: list[int]) -> list[Scenario]:
    describes = spread(heartbeat_versions, describe_versions)
    return [flow(v, describes[v]) for v in heartbeat_versions]
