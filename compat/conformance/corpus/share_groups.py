"""Share groups (KIP-932): ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch,
ShareAcknowledge and the share-group offset APIs (issue 35).

One share group's life on a topic holding 3 records (offsets 0-2): a member joins and, once
the share partition is initialised, is assigned the partition; it fetches (acquires 0-2,
delivery count 1), accepts 0-1 and releases 2, fetches 2 again (delivery count 2), rejects
it, acknowledges 0 a second time; then the error paths (a share session epoch out of
order, a topic id that does not exist, a member that is not in the group, AlterShareGroupOffsets
while a member is active, fenced and unknown heartbeats); the session is closed, the member
leaves, the start offset is altered, described and deleted, and the group deleted.

The group's `share.auto.offset.reset` is set to earliest and its assignment interval to 0
where share groups are served (corpus.base.group_configs), so that the first fetch gets
the records already there and each answer is the same from run to run.

The share-group state APIs are in share_state.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    DATA,
    batch,
    create,
    forget_group,
    group_configs,
    produce_now,
    step,
    topic_id,
    where_served,
)
from compat.conformance.corpus.members import STRANGER, Epoch, Member, identity, pick
from compat.conformance.script import Ctx, HarnessError, Item, Scenario

SGH, SGD, SF, SA = (
    API.SHARE_GROUP_HEARTBEAT,
    API.SHARE_GROUP_DESCRIBE,
    API.SHARE_FETCH,
    (API.SHARE_ACKNOWLEDGE),
)
DSGO, ASGO, DLSGO = (
    API.DESCRIBE_SHARE_GROUP_OFFSETS,
    API.ALTER_SHARE_GROUP_OFFSETS,
    API.DELETE_SHARE_GROUP_OFFSETS,
)
GROUP, TOPIC, MISSING = "share", "share-topic", "share-missing-topic"
CONFIGS = {"share.auto.offset.reset": "earliest", "share.assignment.interval.ms": "0"}
ACCEPT, RELEASE, REJECT = 1, 2, 3
UNKNOWN_TOPIC_ID = uuid.UUID(int=0xC0FFEE)  # a topic id no topic has
Body = Callable[[Ctx], dict[str, Any]]
MEMBER = Member("share-m1")


def heartbeat(member: Member | None, *, epoch: Epoch = None, join: bool = False) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        member_id, current = identity(ctx, member, epoch)
        return {
            "group_id": ctx.name(GROUP),
            "member_id": member_id,
            "member_epoch": current,
            "rack_id": None,
            "subscribed_topic_names": [ctx.name(TOPIC)] if join else None,
        }

    return body


def _wait_assigned(ctx: Ctx) -> None:
    """Heartbeat until the member is assigned the partition: Kafka initialises a share
    partition's state (the share coordinator) before it assigns it."""

    def assigned() -> bool:
        answer = ctx.call(SGH, 1, heartbeat(MEMBER)(ctx))
        if answer.error_code:
            raise HarnessError(f"ShareGroupHeartbeat: error {answer.error_code}")
        MEMBER.keep()(ctx, answer)
        return bool(answer.assignment and answer.assignment.topic_partitions)

    ctx.wait("share partition assigned", assigned, poll=0.1)


def fetch(
    session_epoch: int,
    *,
    member: str | None = None,
    topic: uuid.UUID | None = None,
    wait_ms: int = 5000,
    acks: tuple[tuple[int, int, int], ...] = (),
    partitions: bool = True,
) -> Body:
    """A ShareFetch of partition 0 in the member's share session (epoch `session_epoch`),
    up to 10 records, waiting up to `wait_ms` for one."""

    def body(ctx: Ctx) -> dict[str, Any]:
        tid = topic if topic is not None else topic_id(ctx, TOPIC)
        batches = [
            {"first_offset": a, "last_offset": b, "acknowledge_types": [t]} for a, b, t in acks
        ]
        part = {"partition_index": 0, "partition_max_bytes": 1 << 20}
        return {
            "group_id": ctx.name(GROUP),
            "member_id": member if member is not None else MEMBER.id(ctx),
            "share_session_epoch": session_epoch,
            "max_wait_ms": wait_ms,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "max_records": 10,
            "batch_size": 10,
            "topics": [
                {"topic_id": tid, "partitions": [{**part, "acknowledgement_batches": batches}]}
            ]
            if partitions
            else [],
            "forgotten_topics_data": [],
        }

    return body


def acknowledge(session_epoch: int, acks: list[tuple[int, int, int]]) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        batches = [
            {"first_offset": a, "last_offset": b, "acknowledge_types": [t]} for a, b, t in acks
        ]
        return {
            "group_id": ctx.name(GROUP),
            "member_id": MEMBER.id(ctx),
            "share_session_epoch": session_epoch,
            "topics": [
                {
                    "topic_id": topic_id(ctx, TOPIC),
                    "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
                }
            ],
        }

    return body


def offsets(groups: list[str], topics: bool) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        named = [{"topic_name": ctx.name(TOPIC), "partitions": [0]}] if topics else None
        return {"groups": [{"group_id": ctx.name(g), "topics": named} for g in groups]}

    return body


def alter(start: int) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        partitions = [{"partition_index": 0, "start_offset": start}]
        return {
            "group_id": ctx.name(GROUP),
            "topics": [
                {"topic_name": ctx.name(name), "partitions": partitions}
                for name in (TOPIC, MISSING)
            ],
        }

    return body


def _membership(hb: int, describe: list[int]) -> list[Item]:
    items: list[Item] = [
        step(
            "share.join_without_id",
            SGH,
            hb,
            heartbeat(None, epoch=0, join=True),
            "joining with an empty member id (the client makes its id)",
        ),
        step(
            "share.join",
            SGH,
            hb,
            heartbeat(MEMBER, epoch=0, join=True),
            "a member joins a new share group: assigned nothing until the partition's share "
            "state is initialised",
            keep=MEMBER.keep(),
        ),
        where_served(SGH, "heartbeat until the partition is assigned", _wait_assigned),
        step(
            "share.heartbeat",
            SGH,
            hb,
            heartbeat(MEMBER),
            "the member heartbeats once assigned (nothing changed: no assignment)",
            keep=MEMBER.keep(),
        ),
    ]
    for d in describe:
        items.append(
            step(
                f"share.describe_v{d}",
                SGD,
                d,
                lambda ctx: {
                    "group_ids": [ctx.name(GROUP), ctx.name("share-none")],
                    "include_authorized_operations": True,
                },
                "the share group and a group that does not exist",
            )
        )
    return items


def _records(fetches: list[int], acks: list[int]) -> list[Item]:
    """Acquire, accept, release, redeliver, reject: the share session's epochs 0-5."""

    def f(slot: int) -> int:
        return pick(fetches, slot)

    def a(slot: int) -> int:
        return pick(acks, slot)

    return [
        step("share.fetch", SF, f(0), fetch(0), "a new share session: acquires offsets 0-2"),
        step(
            "share.acknowledge",
            SA,
            a(0),
            acknowledge(1, [(0, 1, ACCEPT), (2, 2, RELEASE)]),
            "accepts 0-1, releases 2",
        ),
        step("share.fetch_again", SF, f(1), fetch(2), "offset 2 again (delivery count 2)"),
        step("share.reject", SA, a(1), acknowledge(3, [(2, 2, REJECT)]), "rejects offset 2"),
        step(
            "share.acknowledge_twice",
            SA,
            a(2),
            acknowledge(4, [(0, 0, ACCEPT)]),
            "accepts offset 0 a second time",
        ),
        step(
            "share.fetch_nothing",
            SF,
            f(2),
            fetch(5, wait_ms=100),
            "nothing left to acquire (waits 100 ms)",
        ),
    ]


def _errors(hb: int, versions: dict[API, list[int]]) -> list[Item]:
    fetches, describe_offsets = versions[SF], versions[DSGO]

    def f(slot: int) -> int:
        return pick(fetches, slot)

    return [
        step(
            "share.fetch_bad_epoch",
            SF,
            f(3),
            fetch(9, wait_ms=100),
            "a share session epoch out of order (9 where 6 is due)",
        ),
        step(
            "share.fetch_unknown_topic",
            SF,
            f(4),
            fetch(6, topic=UNKNOWN_TOPIC_ID, wait_ms=100),
            "a topic id no topic has",
        ),
        step(
            "share.fetch_not_a_member",
            SF,
            f(5),
            fetch(0, member=STRANGER, wait_ms=100),
            "a new share session for a member id the group does not know",
        ),
        step(
            f"share.offsets_v{pick(describe_offsets, 0)}",
            DSGO,
            pick(describe_offsets, 0),
            offsets([GROUP], topics=False),
            "the group's start offset (every topic)",
        ),
        step(
            "share.alter_while_active",
            ASGO,
            pick(versions[ASGO], 0),
            alter(1),
            "AlterShareGroupOffsets while a member is in the group",
        ),
        step(
            "share.fenced_epoch",
            SGH,
            hb,
            heartbeat(MEMBER, epoch=lambda ctx: MEMBER.epoch(ctx) + 10),
            "a member epoch ahead of the coordinator's",
        ),
        step(
            "share.unknown_member",
            SGH,
            hb,
            lambda ctx: {**heartbeat(None, epoch=3)(ctx), "member_id": STRANGER},
            "a member id the group does not know",
        ),
    ]


def _offsets(alter_versions: list[int], delete: list[int], describe: list[int]) -> list[Item]:
    items: list[Item] = [
        step(
            f"share.alter_v{v}",
            ASGO,
            v,
            alter(1),
            "the empty group's start offset to 1 (and a topic that does not exist)",
        )
        for v in alter_versions
    ]
    last = pick(describe, 1)
    items.append(
        step(
            f"share.offsets_v{last}_after_alter",
            DSGO,
            last,
            offsets([GROUP], topics=True),
            "the start offset and lag after the alter",
        )
    )
    items += [
        step(
            f"share.delete_offsets_v{v}",
            DLSGO,
            v,
            lambda ctx: {
                "group_id": ctx.name(GROUP),
                "topics": [{"topic_name": ctx.name(n)} for n in (TOPIC, MISSING)],
            },
            "the empty group's offsets of the topic (and of a topic that does not exist)",
        )
        for v in delete
    ]
    items.append(
        step(
            "share.offsets_after_delete",
            DSGO,
            pick(describe, 2),
            offsets([GROUP, "share-none"], topics=False),
            "after the delete, and a group that does not exist",
        )
    )
    return items


def flow(versions: dict[API, list[int]]) -> Scenario:
    """The share group's life (see the module docstring); `versions` of each API to use."""
    hb = versions[SGH][-1]
    fetches, acks = versions[SF], versions[SA]
    items: list[Item] = [
        create(TOPIC, 1, DATA),
        produce_now(TOPIC, 0, batch(3)),
        group_configs(SGH, GROUP, CONFIGS),
    ]
    items += _membership(hb, versions[SGD])
    items += _records(fetches, acks)
    items += _errors(hb, versions)
    items += [
        step(
            "share.fetch_close",
            SF,
            fetches[-1],
            fetch(-1, partitions=False),
            "closes the share session (epoch -1)",
        ),
        step("share.leave", SGH, hb, heartbeat(MEMBER, epoch=-1), "the member leaves (epoch -1)"),
    ]
    items += _offsets(versions[ASGO], versions[DLSGO], versions[DSGO])
    items.append(forget_group(SGH, GROUP, CONFIGS))
    return Scenario("share group (KIP-932)", tuple(items))
