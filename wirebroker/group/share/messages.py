"""Typed inputs and results of ShareGroupHeartbeat / ShareGroupDescribe (no wire versions:
the handlers map those)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from wirebroker.group.messages import DescribedModernGroup, ModernHeartbeatResult
from wirebroker.group.share.model import Assignment, InitValue


@dataclass(frozen=True)
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    #: None: not sent (unchanged)
    subscribed_topic_names: tuple[str, ...] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class InitializeRequest:
    """Share states to initialize through the persister (state epoch = the group epoch,
    start offset -1), then record as initialized (`ShareGroupManager.initialized`)."""

    group_id: str
    group_epoch: int
    topics: Mapping[uuid.UUID, InitValue]


@dataclass(frozen=True)
class ShareHeartbeatResult(ModernHeartbeatResult):
    #: what the runtime must initialize after the records are written (never on the wire)
    initialize: InitializeRequest | None = field(default=None, compare=False)


@dataclass(frozen=True)
class DescribedShareMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: Assignment


@dataclass(frozen=True)
class DescribedShareGroup(DescribedModernGroup[DescribedShareMember]):
    pass
