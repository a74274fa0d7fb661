"""Typed inputs and results of ConsumerGroupHeartbeat / ConsumerGroupDescribe (no wire
versions: the handlers map those)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from protocol.errors import ErrorCode
from wirebroker.group.consumer.model import Assignment
from wirebroker.group.messages import DescribedModernGroup, ModernHeartbeatResult

#: topic name -> (topic id, partition count), or None when the topic does not exist
TopicLookup = Callable[[str], "tuple[uuid.UUID, int] | None"]
#: every topic name (what a regular-expression subscription is matched against)
TopicNames = Callable[[], Iterable[str]]


class HeartbeatError(Exception):
    """A ConsumerGroupHeartbeat (or a classic request to a consumer group) answered with an
    error and Kafka's message."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(frozen=True)
class TopicResolver:
    """The topics the coordinator sees (the broker installs its cluster view's)."""

    lookup: TopicLookup = field(default=lambda name: None)
    name_of: Callable[[uuid.UUID], str | None] = field(default=lambda topic_id: None)
    names: TopicNames = field(default=tuple)


@dataclass(frozen=True)
class ConsumerHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: what the member says it owns (None: not sent)
    owned: Mapping[uuid.UUID, frozenset[int]] | None = None
    client_id: str = ""
    client_host: str = ""
    #: v1+: the client generates its member id (an empty one is INVALID_REQUEST)
    member_id_required: bool = True


@dataclass(frozen=True)
class ConsumerHeartbeatResult(ModernHeartbeatResult):
    pass


@dataclass(frozen=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target_assignment: Assignment
    #: a member using the classic protocol (KIP-848 online migration)
    classic: bool = False


@dataclass(frozen=True)
class DescribedConsumerGroup(DescribedModernGroup[DescribedConsumerMember]):
    pass
