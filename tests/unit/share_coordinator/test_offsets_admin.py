"""The share group offsets rules (`wirebroker.share_coordinator.offsets_admin`) over a fake
persister and group lookup: summaries and lag, errors the persister gives, the group checks of
Alter and Delete."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from protocol.errors import ErrorCode as E
from wirebroker.share_coordinator.offsets_admin import (
    ShareGroupView,
    alter_offsets,
    delete_offsets,
    describe_group,
)
from wirebroker.share_coordinator.persister import PartitionState

T = uuid.UUID(int=7)


class Persister:
    def __init__(self) -> None:
        self.summaries: dict[int, PartitionState | E] = {}
        self.initialized: list[tuple[str, uuid.UUID, int, int, int]] = []
        self.delete_errors: dict[int, E] = {}

    async def initialize_state(
        self, group_id: str, topic_id: uuid.UUID, partition: int, state_epoch: int, start: int
    ) -> E:
        self.initialized.append((group_id, topic_id, partition, state_epoch, start))
        return E.NONE

    async def read_summary(
        self, group_id: str, topic_id: uuid.UUID, partition: int, leader_epoch: int
    ) -> Any:
        return self.summaries.get(partition, PartitionState(0, -1, 0, ()))

    async def delete_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> E:
        return self.delete_errors.get(partition, E.NONE)


class Groups:
    def __init__(self, view: ShareGroupView | E) -> None:
        self.view = view
        self.altered: list[Any] = []
        self.deleted: list[Any] = []

    def lookup(self, group_id: str) -> ShareGroupView | E:
        return self.view

    def offsets_altered(self, group_id: str, partitions: Mapping[uuid.UUID, set[int]]) -> None:
        self.altered.append(dict(partitions))

    def offsets_deleted(self, group_id: str, topic_ids: set[uuid.UUID]) -> None:
        self.deleted.append(topic_ids)


def topics(name: str) -> tuple[uuid.UUID, int] | None:
    return (T, 3) if name == "t" else None


def names(topic_id: uuid.UUID) -> str | None:
    return "t" if topic_id == T else None


def ends(topic_id: uuid.UUID, partition: int) -> int | None:
    return 10 if partition < 2 else None


def rows(entry: dict[str, Any]) -> list[tuple[int, int, int, int, int]]:
    [topic] = entry["topics"]
    return [
        (p["partition_index"], p["start_offset"], p["leader_epoch"], p["lag"], p["error_code"])
        for p in topic["partitions"]
    ]


async def test_describe_summaries_and_lag() -> None:
    persister = Persister()
    persister.summaries = {
        0: PartitionState(1, 4, 3, (), delivery_complete_count=2),  # lag 10 - 4 - 2
        1: PartitionState(1, 4, 3, ()),  # no delivery-complete count: lag unknown
        2: E.COORDINATOR_NOT_AVAILABLE,  # Kafka swallows the error
    }
    group = {"group_id": "g", "topics": [{"topic_name": "t", "partitions": [0, 1, 2]}]}
    entry = await describe_group(persister, None, group, topics, names, ends)
    assert entry["error_code"] == 0
    assert rows(entry) == [(0, 4, 3, 4, 0), (1, 4, 3, -1, 0), (2, -1, 0, -1, 0)]


async def test_describe_every_topic_of_the_group() -> None:
    view = ShareGroupView("g", empty=True, partitions={T: frozenset({1}), uuid.uuid4(): {0}})
    entry = await describe_group(
        Persister(), Groups(view), {"group_id": "g", "topics": None}, topics, names, ends
    )
    assert rows(entry) == [(1, -1, 0, -1, 0)]  # the unknown topic id is left out
    moved = await describe_group(
        Persister(),
        Groups(E.NOT_COORDINATOR),
        {"group_id": "g", "topics": None},
        topics,
        names,
        ends,
    )
    assert (moved["error_code"], moved["topics"]) == (E.NOT_COORDINATOR, [])


async def test_alter_checks_the_group_then_initialises() -> None:
    request = {
        "group_id": "g",
        "topics": [
            {"topic_name": "t", "partitions": [{"partition_index": 1, "start_offset": 8}]},
            {"topic_name": "t", "partitions": [{"partition_index": 3, "start_offset": 8}]},
        ],
    }
    assert (await alter_offsets(Persister(), None, request, topics))["error_code"] == (
        E.GROUP_ID_NOT_FOUND
    )
    busy = Groups(ShareGroupView("g", empty=False))
    assert (await alter_offsets(Persister(), busy, request, topics))["error_code"] == (
        E.NON_EMPTY_GROUP
    )
    persister, groups = Persister(), Groups(ShareGroupView("g", empty=True, state_epoch=5))
    body = await alter_offsets(persister, groups, request, topics)
    assert [r["partitions"][0]["error_code"] for r in body["responses"]] == [
        0,
        E.UNKNOWN_TOPIC_OR_PARTITION,  # partition 3 of a 3-partition topic
    ]
    assert persister.initialized == [("g", T, 1, 5, 8)]
    assert groups.altered == [{T: {1}}]
    empty = await alter_offsets(persister, groups, {"group_id": "", "topics": []}, topics)
    assert empty["error_code"] == E.INVALID_GROUP_ID


async def test_delete_reports_the_first_persister_error() -> None:
    persister, groups = Persister(), Groups(ShareGroupView("g", empty=True))
    persister.delete_errors = {1: E.COORDINATOR_NOT_AVAILABLE}
    request = {"group_id": "g", "topics": [{"topic_name": "t"}, {"topic_name": "x"}]}
    body = await delete_offsets(persister, groups, request, topics)
    assert [(r["topic_name"], r["error_code"]) for r in body["responses"]] == [
        ("t", E.COORDINATOR_NOT_AVAILABLE),
        ("x", E.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    assert groups.deleted == []
