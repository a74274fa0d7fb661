"""Test kit for KIP-932 share groups in the pure core: a clock, a topic table, heartbeat
helpers with defaults (group "sg", topic "t" of 4 partitions, "u" of 2) and the persister
step the runtime runs after a heartbeat (`init`)."""

from __future__ import annotations

import uuid
from typing import Any

from wirebroker.group import GroupConfig, GroupCoordinatorCore, Record
from wirebroker.group.share.messages import ShareHeartbeatRequest, ShareHeartbeatResult

T = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
U = uuid.UUID("00000000-0000-0000-0000-0000000000b2")
SESSION = 45_000
INTERVAL = 1_000


class SKit:
    def __init__(self, config: GroupConfig | None = None) -> None:
        self.core = GroupCoordinatorCore(config or GroupConfig(num_partitions=1))
        self.core.complete_loading(0)
        self.now = 1_000_000
        self.topics: dict[str, tuple[uuid.UUID, int]] = {"t": (T, 4), "u": (U, 2)}
        self.records: list[Record] = []
        #: what the fake persister was asked to initialize: (group, topic, partition, epoch)
        self.initialized: list[tuple[str, uuid.UUID, int, int]] = []

    def hb(
        self,
        member: str,
        epoch: int,
        *,
        group: str = "sg",
        topics: tuple[str, ...] | None = None,
        init: bool = True,
        **kw: Any,
    ) -> ShareHeartbeatResult:
        """One heartbeat; `init`: then run the persister step as the runtime does."""
        if epoch == 0 and topics is None:
            topics = ("t",)
        req = ShareHeartbeatRequest(
            group_id=group,
            member_id=member,
            member_epoch=epoch,
            subscribed_topic_names=topics,
            client_id="cli",
            client_host="/127.0.0.1",
            **kw,
        )
        result = self.core.share_group_heartbeat(self.now, req, self.topics.get)
        self.records.extend(result.records)
        response = result.response
        assert response is not None
        if init and response.initialize is not None:
            request = response.initialize
            for topic_id, value in request.topics.items():
                for p in sorted(value.partitions):
                    self.initialized.append((request.group_id, topic_id, p, request.group_epoch))
            self.records.extend(self.core.share.initialized(self.now, request).records)
        return response

    def joined(self, member: str, **kw: Any) -> ShareHeartbeatResult:
        """Join, then heartbeat once the assignment interval passed: the member holds its
        share of the initialized partitions."""
        first = self.hb(member, 0, **kw)
        self.tick(INTERVAL)
        return self.hb(member, first.member_epoch)

    def tick(self, ms: int) -> None:
        self.now += ms
        self.records.extend(self.core.tick(self.now).records)

    def group(self, gid: str = "sg") -> Any:
        return self.core.state.share_groups[gid]


def parts(result: ShareHeartbeatResult, topic: uuid.UUID = T) -> set[int]:
    assert result.assignment is not None
    return set(result.assignment.get(topic, ()))
