"""The share-group state APIs (KIP-932): InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState and ReadShareGroupStateSummary (issue 35).

A share-partition leader sends these to the share coordinator, which keeps each share
partition's state (start offset, state epoch, in-flight batches with their delivery state
and count) in `__share_group_state`. They are played here for a share partition of this
run's own: a group id that no share group has, on a topic of this run, whose state is
deleted at the end; nothing another client uses is touched. The life of that state: read
and write before it exists, initialise, read, write (v0, then v1 with a delivery-complete
count), read, summaries, a negative leader epoch, a topic that does not exist, delete, read.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import API, create, step, topic_id, where_served
from compat.conformance.corpus.members import pick
from compat.conformance.script import Ctx, Item, Scenario

INIT, READ, WRITE, DELETE, SUMMARY = (
    API.INITIALIZE_SHARE_GROUP_STATE,
    API.READ_SHARE_GROUP_STATE,
    API.WRITE_SHARE_GROUP_STATE,
    API.DELETE_SHARE_GROUP_STATE,
    API.READ_SHARE_GROUP_STATE_SUMMARY,
)
GROUP, TOPIC = "share-state", "share-state-topic"
UNKNOWN_TOPIC_ID = uuid.UUID(int=0xC0FFEE)  # a topic id no topic has
AVAILABLE, ARCHIVED = 0, 2  # a state batch's delivery state
Body = Callable[[Ctx], dict[str, Any]]


def partition(*, topic: uuid.UUID | None = None, **fields: Any) -> Body:
    """A state request for partition 0 of the topic (or of `topic`) with `fields`."""

    def body(ctx: Ctx) -> dict[str, Any]:
        tid = topic if topic is not None else topic_id(ctx, TOPIC)
        return {
            "group_id": ctx.name(GROUP),
            "topics": [{"topic_id": tid, "partitions": [{"partition": 0, **fields}]}],
        }

    return body


SHARE_KEY = 2  # FindCoordinator key type of a share partition's state
LOADING = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


def _coordinator_ready(ctx: Ctx) -> None:
    """Until the share coordinator of this share partition answers: on a fresh Kafka its
    topic (__share_group_state) is made on the first FindCoordinator for a share key, and
    its partitions are loaded a moment later (until then: NOT_COORDINATOR)."""
    tid = topic_id(ctx, TOPIC)
    text_id = base64.urlsafe_b64encode(tid.bytes).decode().rstrip("=")  # Kafka's Uuid text
    find = {"key_type": SHARE_KEY, "coordinator_keys": [f"{ctx.name(GROUP)}:{text_id}:0"]}
    probe = partition(leader_epoch=0)(ctx)

    def ready() -> bool:
        ctx.call(API.FIND_COORDINATOR, 6, find)
        answer = ctx.call(SUMMARY, 0, probe)
        return all(p.error_code not in LOADING for t in answer.results for p in t.partitions)

    ctx.wait("share coordinator", ready, timeout=60.0, poll=0.2)


def _batch(first: int, last: int, state: int, count: int) -> dict[str, int]:
    return {
        "first_offset": first,
        "last_offset": last,
        "delivery_state": state,
        "delivery_count": count,
    }


def _writes(versions: list[int]) -> list[Item]:
    """Each version of WriteShareGroupState once, each moving the start offset on."""
    items: list[Item] = []
    for i, v in enumerate(versions):
        start = 12 + i
        items.append(
            step(
                f"share-state.write_v{v}",
                WRITE,
                v,
                partition(
                    state_epoch=0,
                    leader_epoch=0,
                    start_offset=start,
                    delivery_complete_count=1,
                    state_batches=[_batch(start, 14, ARCHIVED if i == 0 else AVAILABLE, i + 1)],
                ),
                f"start offset {start}, a batch {start}-14 (delivery count {i + 1})"
                + (", one record delivered (v1+: delivery_complete_count)" if v >= 1 else ""),
            )
        )
    return items


def _uninitialized(versions: dict[API, list[int]]) -> list[Item]:
    """Before the state exists: wait for the coordinator, then read, write, summarise."""
    read = partition(leader_epoch=0)
    return [
        where_served(READ, "wait for the share coordinator", _coordinator_ready),
        step(
            "share-state.read_uninitialized",
            READ,
            pick(versions[READ], 0),
            read,
            "a share partition whose state was never initialised",
        ),
        step(
            "share-state.write_uninitialized",
            WRITE,
            pick(versions[WRITE], 0),
            partition(state_epoch=0, leader_epoch=0, start_offset=5, state_batches=[]),
            "writing the state of a share partition never initialised",
        ),
        step(
            "share-state.summary_uninitialized",
            SUMMARY,
            pick(versions[SUMMARY], 0),
            read,
            "the summary of a share partition never initialised",
        ),
    ]


def flow(versions: dict[API, list[int]]) -> Scenario:
    """The life of one share partition's state (see the module docstring)."""

    def v(api: API, slot: int) -> int:
        return pick(versions[api], slot)

    read = partition(leader_epoch=0)
    items: list[Item] = [create(TOPIC), *_uninitialized(versions)]
    items += [
        step(
            f"share-state.initialize_v{iv}",
            INIT,
            iv,
            partition(state_epoch=0, start_offset=10),
            "initialise: state epoch 0, start offset 10",
        )
        for iv in versions[INIT]
    ]
    items.append(step("share-state.read", READ, v(READ, 1), read, "the state initialised"))
    items += _writes(versions[WRITE])
    items.append(
        step("share-state.read_after_write", READ, v(READ, 2), read, "the state written last")
    )
    items += [
        step(f"share-state.summary_v{sv}", SUMMARY, sv, read, "the summary of the state")
        for sv in versions[SUMMARY]
    ]
    items += [
        step(
            "share-state.read_negative_leader_epoch",
            READ,
            v(READ, 3),
            partition(leader_epoch=-5),
            "a negative leader epoch",
        ),
        step(
            "share-state.initialize_unknown_topic",
            INIT,
            v(INIT, 1),
            partition(topic=UNKNOWN_TOPIC_ID, state_epoch=0, start_offset=0),
            "a topic id no topic has",
        ),
    ]
    items += [
        step(f"share-state.delete_v{dv}", DELETE, dv, partition(), "delete the state")
        for dv in versions[DELETE]
    ]
    items.append(
        step("share-state.read_after_delete", READ, v(READ, 4), read, "the state once deleted")
    )
    return Scenario("share-group state (KIP-932, share coordinator)", tuple(items))
