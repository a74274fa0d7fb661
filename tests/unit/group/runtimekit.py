"""Test kit for the group coordinator runtime: real storage in a temporary directory, a clock
driven by trio (so `autojump_clock` / MockClock moves session timers), and a `Member` that
speaks the classic protocol through `GroupCoordinatorRuntime`.

    trio_ms()                       START_MS + trio.current_time() in ms (START_MS outside trio)
    Node(data_dir, runtime_options=None, **overrides)
                                    TopicStore + LogManager + ReplicaManager (leading every
                                    partition) + runtime (not run; `runtime_options`: keyword
                                    arguments of the runtime, e.g. replication_waiter=...)
    running(data_dir, runtime_options=None, *, lead=True, **overrides)
                                    async context manager: a Node whose runtime is running
                                    (timers) and, with `lead`, leads and has loaded every
                                    partition (as a single broker's); logs closed on exit
    Member(runtime, client_id)      join() (with the MEMBER_ID_REQUIRED handshake), sync(),
                                    heartbeat(), commit(), leave()
    commit / fetched / describe / listed / deleted   one request through the runtime, answered
                                    as the handlers' response dicts (their builders)
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from protocol.errors import ErrorCode
from tests.unit.local_metadata import (
    Leader,
    LocalTopicAdmin,
    coordinate_every_partition,
    lead_every_partition,
)
from wirebroker.config import BrokerConfig
from wirebroker.group.messages import (
    CommitPartition,
    CommitRequest,
    CommitTopic,
    HeartbeatRequest,
    JoinRequest,
    LeaveMember,
    SyncRequest,
    TopicPartitions,
)
from wirebroker.group.runtime import GroupCoordinatorRuntime
from wirebroker.handlers.delete_groups import delete_groups_response
from wirebroker.handlers.describe_groups import describe_groups_response
from wirebroker.handlers.join_group import join_response
from wirebroker.handlers.list_groups import list_groups_response
from wirebroker.handlers.offset_commit import commit_errors
from wirebroker.handlers.offset_fetch import fetch_group_response
from wirebroker.handlers.sync_group import sync_response
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.replica_manager import ReplicaManager

START_MS = 1_700_000_000_000
SESSION = 10_000
REBALANCE = 30_000


def trio_ms() -> int:
    try:
        return START_MS + round(trio.current_time() * 1000)
    except RuntimeError:  # outside trio.run
        return START_MS


def subscription(*topics: str) -> bytes:
    """A `consumer` protocol subscription (v0): topics, null user data."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        raw = t.encode()
        out += struct.pack(">h", len(raw)) + raw
    return out + struct.pack(">i", -1)


class Node:
    """One broker's storage and group coordinator on `data_dir` (not started)."""

    def __init__(
        self, data_dir: Path, runtime_options: dict[str, Any] | None = None, **overrides: str
    ) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.config = BrokerConfig({"node.id": "0", "log.dirs": str(data_dir), **overrides})
        self.topics = TopicStore.open(data_dir)
        self.logs = LogManager([data_dir])
        self.replicas = ReplicaManager(self.config, self.logs, self.topics, node_id=0)
        self.replicas.load(trio_ms())
        lead_every_partition(self.replicas, trio_ms())
        self.admin = LocalTopicAdmin(
            self.config, self.topics, self.logs, node_id=0, listener=Leader(self.replicas, trio_ms)
        )
        counter = itertools.count(1)
        self.runtime = GroupCoordinatorRuntime(
            self.config,
            self.replicas,
            admin=self.admin,
            clock=trio_ms,
            member_id_suffix=lambda: f"m{next(counter)}",
            **(runtime_options or {}),
        )

    def create_topic(self, name: str, partitions: int = 1) -> None:
        self.admin.create_topic(name, partitions, now_ms=trio_ms())

    def close(self) -> None:
        self.logs.close()


@asynccontextmanager
async def running(
    data_dir: Path,
    runtime_options: dict[str, Any] | None = None,
    *,
    lead: bool = True,
    **overrides: str,
) -> AsyncIterator[Node]:
    node = Node(data_dir, runtime_options, **overrides)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(node.runtime.run)
            if lead:
                await coordinate_every_partition(node.runtime)
            yield node
            node.runtime.shutdown()
            nursery.cancel_scope.cancel()
    finally:
        node.close()


class Member:
    """A classic-protocol consumer talking to the runtime directly."""

    def __init__(
        self,
        runtime: GroupCoordinatorRuntime,
        client_id: str,
        *,
        group: str = "g",
        topics: Sequence[str] = ("t",),
        session: int = SESSION,
        rebalance: int = REBALANCE,
        version: int = 7,
        instance: str | None = None,
    ) -> None:
        self.runtime = runtime
        self.client_id = client_id
        self.group = group
        self.topics = tuple(topics)
        self.session = session
        self.rebalance = rebalance
        self.version = version
        self.instance = instance
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.members: list[dict[str, Any]] = []
        self.assignment = b""

    async def join_once(self) -> dict[str, Any]:
        result = await self.runtime.join_group(
            JoinRequest(
                group_id=self.group,
                member_id=self.member_id,
                protocol_type="consumer",
                protocols=[("range", subscription(*self.topics))],
                session_timeout_ms=self.session,
                rebalance_timeout_ms=self.rebalance,
                group_instance_id=self.instance,
                client_id=self.client_id,
                client_host="/127.0.0.1",
                require_known_member_id=self.version >= 4,
                supports_skip_assignment=self.version >= 9,
            ),
        )
        return join_response(self.version, result)

    async def join(self) -> dict[str, Any]:
        """JoinGroup, redoing it once with the handed-out id on MEMBER_ID_REQUIRED."""
        resp = await self.join_once()
        if resp["error_code"] == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = resp["member_id"]
            resp = await self.join_once()
        if resp["error_code"] == 0:
            self.member_id = resp["member_id"]
            self.generation = resp["generation_id"]
            self.leader = resp["leader"]
            self.members = resp["members"]
        return resp

    @property
    def is_leader(self) -> bool:
        return self.member_id == self.leader

    async def sync(self, assignments: dict[str, bytes] | None = None) -> dict[str, Any]:
        result = await self.runtime.sync_group(
            SyncRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance,
                protocol_type="consumer",
                protocol_name="range",
                assignments=list((assignments or {}).items()),
            ),
        )
        resp = sync_response(result)
        if resp["error_code"] == 0:
            self.assignment = resp["assignment"]
        return resp

    def heartbeat(self) -> ErrorCode:
        return self.runtime.heartbeat(
            HeartbeatRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance,
            ),
        )

    async def commit(
        self, offsets: dict[tuple[str, int], int], *, version: int = 8
    ) -> dict[str, Any]:
        return await commit(
            self.runtime,
            offsets,
            group=self.group,
            generation=self.generation,
            member_id=self.member_id,
            version=version,
        )

    async def leave(self) -> ErrorCode:
        resp = await self.runtime.leave_group(
            group_id=self.group, members=[LeaveMember(self.member_id)]
        )
        return resp.members[0].error if resp.members else resp.error


async def commit(
    runtime: GroupCoordinatorRuntime,
    offsets: dict[tuple[str, int], int],
    *,
    group: str = "g",
    generation: int = -1,
    member_id: str = "",
    version: int = 8,
) -> dict[str, Any]:
    by_topic: dict[str, list[CommitPartition]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(CommitPartition(partition, offset, -1, "meta"))
    result = await runtime.commit_offsets(
        CommitRequest(
            group_id=group,
            topics=[CommitTopic(t, ps) for t, ps in by_topic.items()],
            generation_id=generation,
            member_id=member_id,
        ),
    )
    errors = commit_errors(version, result)
    return {
        "throttle_time_ms": 0,
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": errors[(t.name, p.partition_index)],
                    }
                    for p in t.partitions
                ],
            }
            for t in result.topics
        ],
    }


def fetched(
    runtime: GroupCoordinatorRuntime, group: str, topics: dict[str, list[int]] | None = None
) -> tuple[ErrorCode, dict[tuple[str, int], int]]:
    """(group error, {(topic, partition): committed offset}) from OffsetFetch."""
    resp = fetch_group_response(
        runtime.fetch_offsets(
            group_id=group,
            topics=(
                None if topics is None else [TopicPartitions(t, ps) for t, ps in topics.items()]
            ),
        )
    )
    offsets = {
        (t["name"], p["partition_index"]): p["committed_offset"]
        for t in resp["topics"]
        for p in t["partitions"]
    }
    return ErrorCode(resp["error_code"]), offsets


def describe(runtime: GroupCoordinatorRuntime, group: str) -> dict[str, Any]:
    groups = describe_groups_response(5, runtime.describe_groups(group_ids=[group]))["groups"]
    assert len(groups) == 1
    return dict(groups[0])


def listed(runtime: GroupCoordinatorRuntime) -> dict[str, Any]:
    """The ListGroups response (v5 shape)."""
    return list_groups_response(runtime.list_groups())


async def deleted(runtime: GroupCoordinatorRuntime, group_ids: list[str]) -> dict[str, Any]:
    """The DeleteGroups response."""
    return delete_groups_response(await runtime.delete_groups(group_ids))
