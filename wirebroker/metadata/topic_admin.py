"""Topic administration: create and delete topics, add partitions, change topic configs.

`TopicAdmin` is the one interface the handlers (CreateTopics, DeleteTopics, CreatePartitions,
AlterConfigs, IncrementalAlterConfigs, Metadata auto-creation) and the group coordinator
(`__consumer_offsets`) use; Kafka splits it the same way (AdminManager / ZkAdminManager vs
ReplicaManager). `wirebroker.cluster.zk_topic_admin.ZkTopicAdmin` implements it over Kafka's
znodes, in a cluster and on a single broker (over its in-process ZooKeeper); the unit tests'
`LocalTopicAdmin` (tests/unit/local_metadata.py) works on the `TopicStore` and the `LogManager`
directly, without a cluster layer.

Every check lives here, in `TopicChecks`, which both admins hold (composition, not a base
class), in Kafka's order and with its messages (ReplicationControlManager): name, exists,
collision ('.' vs '_'), configs (`topic_configs.validate_topic_configs`), manual assignments
or partitions / replication factor, MAX_PARTITIONS_PER_REQUEST. Failures raise a
`ClusterError` subclass (wirebroker.metadata.errors); handlers only map it to codes.
`validate_only` runs every check and changes nothing.

Ordering, so that a crash at any point leaves a state `ReplicaManager.load` repairs:
- create topic / partitions: every new log in one batch (`LogManager.create_many`), then the
  topic into the store (one fsynced rewrite: the commit point). A crash before it leaves logs
  of an unknown topic (or partitions past the recorded count), deleted as stray at the next
  start; after it, a complete topic. A failure deletes the new logs again and is raised.
- delete topic: remove it from the store, tell the listener, then delete the logs.
The `PartitionListener` (the `ReplicaManager`) hears of every change after the store did:
new partitions with their open logs, deleted topics, changed configs.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from wirebroker.log.errors import LogError
from wirebroker.metadata.errors import (
    ClusterError,
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    PolicyViolationError,
    TopicExistsError,
    UnknownTopicError,
)
from wirebroker.metadata.names import (
    collision_key,
    has_collision_chars,
    is_internal,
    validate_topic_name,
)
from wirebroker.metadata.topic_configs import (
    validate_topic_configs,
)
from wirebroker.metadata.topic_store import TopicInfo, TopicStore, new_random_uuid

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig
    from wirebroker.log.partition_log import PartitionLog

__all__ = [
    "MAX_PARTITIONS_PER_REQUEST",
    "CreateTopicResult",
    "NewPartitions",
    "NewTopic",
    "PartitionListener",
    "TopicAdmin",
    "TopicChecks",
    "create_each",
]


#: Kafka's controller refuses to create more partitions than this in one request.
MAX_PARTITIONS_PER_REQUEST = 10_000

#: A manual assignment: (partition index, replica broker ids), in request order.
Assignment = tuple[int, Sequence[int]]

#: What `create_topics` answers per topic: the new topic, or why it was refused (a
#: `ClusterError`), or the storage failure that stopped it (a `LogError`: nothing was kept).
CreateTopicResult = TopicInfo | ClusterError | LogError


@dataclass(frozen=True)
class NewTopic:
    """One topic of a CreateTopics request; -1 means the broker default."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str | None] = field(default_factory=dict)
    assignments: Sequence[Assignment] | None = None


class PartitionListener(Protocol):
    """What a broker's partition owner (`ReplicaManager`) hears from topic administration."""

    def on_partitions_created(self, info: TopicInfo, logs: Sequence[PartitionLog]) -> None: ...

    def on_topic_deleted(self, info: TopicInfo) -> None: ...

    def on_topic_configs_changed(self, info: TopicInfo) -> None: ...


@dataclass(frozen=True)
class NewPartitions:
    """One topic of a CreatePartitions request: grow `name` to `count` partitions;
    `assignments` gives the replicas of each new partition, in order."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None


class TopicAdmin(abc.ABC):
    """Topic administration (see the module docstring); errors are `ClusterError`s."""

    async def wait_settled(self, names: Sequence[str], timeout_s: float) -> dict[str, str]:
        """Wait (at most `timeout_s`) until the changes just made to `names` are visible in
        this broker's metadata; returns name -> problem for those that are not. A single
        broker applies every change before returning, so there is nothing to wait for."""
        return {}

    async def alter_reassignments(
        self, changes: Sequence[tuple[str, int, Sequence[int] | None]], *, allow_rf_change: bool
    ) -> dict[tuple[str, int], tuple[int, str | None]] | None:
        """AlterPartitionReassignments in a cluster: (error code, message) per partition that
        exists (target replicas, or None to cancel). None on a single broker."""
        return None

    def reassignments(self) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]] | None:
        """Reassignments in progress: (replicas, adding, removing) per partition; None on a
        single broker, which never has one."""
        return None

    async def elect_leaders(
        self, partitions: Sequence[tuple[str, int]], *, preferred: bool, timeout_s: float
    ) -> dict[tuple[str, int], tuple[int, str | None]] | None:
        """ElectLeaders in a cluster: (error code, message) per existing partition. None on a
        single broker, which leads every partition with its only replica."""
        return None

    @abc.abstractmethod
    def describe(self, name: str) -> TopicInfo | None:
        """The topic as the metadata knows it, or None."""

    @abc.abstractmethod
    def create_topics(
        self, topics: Sequence[NewTopic], *, now_ms: int, validate_only: bool = False
    ) -> list[CreateTopicResult]:
        """Each topic's TopicInfo, or the error that refused or stopped it."""

    @abc.abstractmethod
    def delete_topic(self, name: str) -> TopicInfo:
        """Delete the topic (UnknownTopicError when there is none); its last TopicInfo."""

    @abc.abstractmethod
    def create_partitions(
        self, request: NewPartitions, *, now_ms: int, validate_only: bool = False
    ) -> None:
        """Grow a topic (Kafka never shrinks one)."""

    @abc.abstractmethod
    def alter_topic_configs(
        self, name: str, configs: Mapping[str, str | None], *, validate_only: bool = False
    ) -> None:
        """Replace the topic's config overrides with `configs`."""

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        *,
        now_ms: int,
        validate_only: bool = False,
        assignments: Mapping[int, Sequence[int]] | None = None,
    ) -> TopicInfo:
        """One topic, raising its error (the group coordinator, auto-creation, tests)."""
        topic = NewTopic(
            name,
            num_partitions,
            replication_factor,
            configs or {},
            list(assignments.items()) if assignments else None,
        )
        [result] = self.create_topics([topic], now_ms=now_ms, validate_only=validate_only)
        if isinstance(result, TopicInfo):
            return result
        raise result


def _assignment_error(message: str) -> InvalidReplicationAssignmentError:
    return InvalidReplicationAssignmentError(message)


def check_replicas(replicas: Sequence[int], brokers: Iterable[int], rf: int | None) -> None:
    """One partition's manual replica list: non-empty, registered brokers, each once, and
    (when `rf` is given) as many replicas as the other partitions have."""
    if not replicas:
        raise _assignment_error("The manual partition assignment includes an empty replica list.")
    registered = set(brokers)
    previous: int | None = None
    for broker in sorted(replicas):
        if broker not in registered:
            raise _assignment_error(
                f"The manual partition assignment includes broker {broker}, but no such "
                "broker is registered."
            )
        if broker == previous:
            raise _assignment_error(
                f"The manual partition assignment includes the broker {broker} more than once."
            )
        previous = broker
    if rf is not None and len(replicas) != rf:
        raise _assignment_error(
            f"The manual partition assignment includes a partition with {len(replicas)} "
            f"replica(s), but this is not consistent with previous partitions, which have "
            f"{rf} replica(s)."
        )


def check_new_topic_assignments(
    assignments: Iterable[Assignment], brokers: Iterable[int]
) -> tuple[int, int]:
    """Kafka's checks of a new topic's manual assignment; returns (partitions, rf)."""
    registered = list(brokers)
    seen: set[int] = set()
    rf: int | None = None
    for index, replicas in assignments:
        if index in seen:
            raise _assignment_error(
                f"Found multiple manual partition assignments for partition {index}"
            )
        check_replicas(replicas, registered, rf)
        rf = len(replicas)
        seen.add(index)
    if seen != set(range(len(seen))):
        raise _assignment_error("partitions should be a consecutive 0-based integer sequence")
    return len(seen), rf or 0


def create_each(
    create: Callable[..., TopicInfo],
    topics: Sequence[NewTopic],
    *,
    now_ms: int,
    validate_only: bool,
) -> list[CreateTopicResult]:
    """`create` for one topic after the other, each answering its TopicInfo or its error."""
    out: list[CreateTopicResult] = []
    for topic in topics:
        try:
            out.append(create(topic, now_ms=now_ms, validate_only=validate_only))
        except (ClusterError, LogError) as exc:
            out.append(exc)
    return out


class TopicChecks:
    """The one validation path of topic administration, over what the metadata knows (the
    `TopicStore`) and the registered brokers (`brokers()`). Each method raises the first
    failing check's `ClusterError` or returns what the change would be; it changes nothing."""

    def __init__(
        self, config: BrokerConfig, topics: TopicStore, brokers: Callable[[], Sequence[int]]
    ) -> None:
        self.config = config
        self.topics = topics
        self.brokers = brokers

    def new_topic(self, topic: NewTopic) -> TopicInfo:
        """Check `topic` in Kafka's order; the topic it would be (a new id, no assignment)."""
        name = topic.name
        self._check_new_name(name)
        overrides = validate_topic_configs(topic.configs)
        num_partitions, replication_factor = self._partitions_and_rf(topic)
        if num_partitions > MAX_PARTITIONS_PER_REQUEST:
            raise PolicyViolationError("Excessively large number of partitions per request.")
        return TopicInfo(
            name=name,
            topic_id=new_random_uuid(t.topic_id for t in self.topics.all()),
            partitions=num_partitions,
            replication_factor=replication_factor,
            configs=overrides,
            is_internal=is_internal(name),
        )

    def _check_new_name(self, name: str) -> None:
        validate_topic_name(name)
        if self.topics.get(name) is not None:
            raise TopicExistsError(f"Topic '{name}' already exists.")
        if has_collision_chars(name):
            key = collision_key(name)
            for other in self.topics.all():
                if other.name != name and collision_key(other.name) == key:
                    raise InvalidTopicError(
                        f"Topic '{name}' collides with existing topic: {other.name}"
                    )

    def _partitions_and_rf(self, topic: NewTopic) -> tuple[int, int]:
        num_partitions, rf = topic.num_partitions, topic.replication_factor
        if topic.assignments:
            if rf != -1:
                raise InvalidRequestError(
                    "A manual partition assignment was specified, but replication factor "
                    "was not set to -1."
                )
            if num_partitions != -1:
                raise InvalidRequestError(
                    "A manual partition assignment was specified, but numPartitions was not "
                    "set to -1."
                )
            return check_new_topic_assignments(topic.assignments, self.brokers())
        if rf < -1 or rf == 0:
            raise InvalidReplicationFactorError(
                "Replication factor must be larger than 0, or -1 to use the default value."
            )
        if num_partitions < -1 or num_partitions == 0:
            raise InvalidPartitionsError(
                "Number of partitions was set to an invalid non-positive value."
            )
        if num_partitions == -1:
            num_partitions = self.config.num_partitions
        if rf == -1:
            rf = self.config.get_int("default.replication.factor")
        brokers = len(self.brokers())
        if rf > brokers:
            raise InvalidReplicationFactorError(
                f"Unable to replicate the partition {rf} time(s): The target replication "
                f"factor of {rf} cannot be reached because only {brokers} broker(s) are "
                "registered or some brokers have all their log directories cordoned."
            )
        return num_partitions, rf

    def new_partitions(self, request: NewPartitions) -> TopicInfo:
        """Check growing a topic; the topic as it is now."""
        name, count, assignments = request.name, request.count, request.assignments
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicError()
        current = info.partitions
        if count == current:
            raise InvalidPartitionsError(f"Topic already has {current} partition(s).")
        if count < current:
            raise InvalidPartitionsError(
                f"The topic {name} currently has {current} partition(s); {count} would not be "
                "an increase."
            )
        additional = count - current
        if assignments is not None:
            if len(assignments) != additional:
                raise _assignment_error(
                    f"Attempted to add {additional} additional partition(s), but only "
                    f"{len(assignments)} assignment(s) were specified."
                )
            brokers = self.brokers()
            for replicas in assignments:
                check_replicas(replicas, brokers, info.replication_factor)
        if additional > MAX_PARTITIONS_PER_REQUEST:
            raise PolicyViolationError(
                "Excessively large number of additional partitions per request."
            )
        return info

    def deleted_topic(self, name: str) -> TopicInfo:
        """Check deleting `name`: the topic as it is now."""
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicError("This server does not host this topic-partition.")
        return info

    def topic_configs(
        self, name: str, configs: Mapping[str, str | None]
    ) -> tuple[TopicInfo, dict[str, str]]:
        """Check replacing the topic's overrides with `configs` (the configs first, then the
        topic must exist); the topic as it is now and the overrides it would have."""
        validate_topic_name(name)
        overrides = validate_topic_configs(configs)
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicError(f"The topic '{name}' does not exist.")
        return info, overrides
