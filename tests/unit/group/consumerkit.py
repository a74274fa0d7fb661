"""Test kit for KIP-848 consumer groups in the pure core: a clock, a topic table and
heartbeat helpers with defaults (group "cg", topic "t" of 4 partitions)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from wirebroker.group import GroupConfig, GroupCoordinatorCore, Record
from wirebroker.group.consumer.messages import ConsumerHeartbeatRequest, ConsumerHeartbeatResult

T = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
U = uuid.UUID("00000000-0000-0000-0000-0000000000b2")
SESSION = 45_000
REBALANCE = 30_000


class CKit:
    def __init__(self, config: GroupConfig | None = None) -> None:
        self.core = GroupCoordinatorCore(config or GroupConfig(num_partitions=1))
        self.core.complete_loading(0)
        self.now = 0
        self.topics: dict[str, tuple[uuid.UUID, int]] = {"t": (T, 4), "u": (U, 2)}
        self.records: list[Record] = []

    def hb(
        self,
        member: str,
        epoch: int,
        *,
        group: str = "cg",
        owned: Mapping[uuid.UUID, frozenset[int]] | None = None,
        topics: tuple[str, ...] | None = None,
        **kw: Any,
    ) -> ConsumerHeartbeatResult:
        if epoch == 0:
            kw.setdefault("rebalance_timeout_ms", REBALANCE)
            if topics is None:
                topics = ("t",)
            if owned is None:
                owned = {}
        req = ConsumerHeartbeatRequest(
            group_id=group,
            member_id=member,
            member_epoch=epoch,
            subscribed_topic_names=topics,
            owned=owned,
            **kw,
        )
        result = self.core.consumer_group_heartbeat(
            self.now, req, self.topics.get, lambda: list(self.topics)
        )
        self.records.extend(result.records)
        assert result.response is not None
        return result.response

    def tick(self, ms: int) -> None:
        self.now += ms
        self.records.extend(self.core.tick(self.now).records)

    def group(self, gid: str = "cg") -> Any:
        return self.core.state.consumer_groups[gid]


def parts(result: ConsumerHeartbeatResult, topic: uuid.UUID = T) -> set[int]:
    assert result.assignment is not None
    return set(result.assignment.get(topic, ()))
