"""The broker's partitions and the topic operations that create, change and delete them.

`ReplicaManager` keeps three things in step: the metadata image (`TopicStore`), the logs
(`LogManager`) and the in-memory `Partition`s. It is pure (no trio): long-poll Fetch wake-ups
go through data listeners (`add_data_listener`), which `replication.fetch_waiters` installs.

Ordering, so that a crash at any point leaves a state `load` repairs:
- create topic / partitions: create every log in one batch (`LogManager.create_many`: all
  directories and files, then one fsync per new directory and one per log dir), then record
  the topic in the store (one fsynced rewrite). The store is the commit point: a crash
  before it leaves logs of an unknown topic (or partitions beyond the recorded count),
  deleted by the next `load` as stray, so a half-created topic is REMOVED at start, never
  completed (its CreateTopics / CreatePartitions was not answered); a crash after it leaves
  a complete topic. A failure (ENOSPC, EIO) deletes the logs the call created and answers
  the error.
- delete topic: remove it from the store, then delete the logs (same repair).
- `load`: logs of a topic the store does not know are deleted, unless the store was created by
  this process (a missing store must never wipe data; those logs are left and logged). A
  partition the store knows without a log (lost by a power failure, or a crash during an
  older create) gets an empty log, and a `partition.metadata` that is missing or does not
  hold the store's topic id (it is written without fsync) is rewritten.

Topic configs: `TopicInfo.configs` holds the explicit overrides; every other topic config
takes the broker's synonym value or the default (`BrokerConfig.topic_defaults`). The
partition's `LogConfig` is `LogConfig.from_topic_configs(effective_topic_configs(topic))`.

Errors: every failure raises a `wirebroker.cluster.ClusterError` subclass whose `error_code` and
message are what Kafka answers (CreateTopics, CreatePartitions, AlterConfigs ...).
Policy left to the handlers: `delete.topic.enable`, refusing to delete internal topics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.cluster.errors import ClusterError, InvalidTopicError
from wirebroker.cluster.names import collision_key, has_collision_chars, validate_topic_name
from wirebroker.cluster.names import is_internal as _is_internal_name
from wirebroker.cluster.topic_store import (
    TopicInfo,
    TopicStore,
    ensure_meta_properties,
    new_random_uuid,
)
from wirebroker.config import TOPIC_CONFIGS, BrokerConfig, ConfigError
from wirebroker.log.config import LogConfig
from wirebroker.replication.partition import Partition

if TYPE_CHECKING:
    from collections.abc import Sequence

    from protocol.records import BatchHeader
    from wirebroker.log.log_manager import LogManager
    from wirebroker.log.partition_log import AppendResult, PartitionLog

__all__ = [
    "MAX_PARTITIONS_PER_REQUEST",
    "DataListener",
    "InvalidConfigError",
    "InvalidPartitionsError",
    "InvalidReplicationAssignmentError",
    "InvalidReplicationFactorError",
    "InvalidRequestError",
    "InvalidTopicError",
    "PolicyViolationError",
    "ReplicaManager",
    "TopicExistsError",
    "UnknownTopicError",
    "UnknownTopicOrPartitionError",
]

log = logging.getLogger(__name__)

#: Kafka's controller refuses to create more partitions than this in one request.
MAX_PARTITIONS_PER_REQUEST = 10_000

DataListener = Callable[[str, int], None]


class TopicExistsError(ClusterError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(ClusterError):
    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(ClusterError):
    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicationAssignmentError(ClusterError):
    error_code = ErrorCode.INVALID_REPLICATION_ASSIGNMENT


class InvalidConfigError(ClusterError):
    error_code = ErrorCode.INVALID_CONFIG


class InvalidRequestError(ClusterError):
    error_code = ErrorCode.INVALID_REQUEST


class PolicyViolationError(ClusterError):
    error_code = ErrorCode.POLICY_VIOLATION


class UnknownTopicError(ClusterError):
    """The topic does not exist (UNKNOWN_TOPIC_OR_PARTITION)."""

    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class UnknownTopicOrPartitionError(UnknownTopicError):
    """The topic or the partition does not exist."""


class ReplicaManager:
    def __init__(
        self,
        config: BrokerConfig,
        logs: LogManager,
        topics: TopicStore,
        *,
        node_id: int,
        on_data: DataListener | None = None,
    ) -> None:
        self.config = config
        self.logs = logs
        self.topics = topics
        self.node_id = node_id
        self._partitions: dict[str, list[Partition]] = {}
        self._listeners: list[DataListener] = [on_data] if on_data is not None else []

    # -- start-up --------------------------------------------------------------------------
    def load(self, now_ms: int) -> None:
        """Check meta.properties, open every log, build the partitions of known topics."""
        log_dirs = self.log_dirs()
        ensure_meta_properties(log_dirs, node_id=self.node_id, cluster_id=self.topics.cluster_id)
        self.logs.load(self._log_config_for_loading, now_ms)
        fresh_store = self.topics.created
        for (topic, index), _plog in sorted(self.logs.all_logs().items()):
            info = self.topics.get(topic)
            if info is not None and 0 <= index < info.partitions:
                continue
            if fresh_store:
                log.warning(
                    "log %s-%d has no topic in the metadata store %s; left in place",
                    topic,
                    index,
                    self.topics.path,
                )
                continue
            log.warning("deleting stray log %s-%d (topic not in the metadata store)", topic, index)
            self.logs.delete(topic, index)
        self._partitions.clear()
        for info in self.topics.all():
            config = self.log_config(info.name)
            min_isr = self._min_insync(info.name)
            parts = []
            missing = [i for i in range(info.partitions) if self.logs.get(info.name, i) is None]
            if missing:
                log.warning("%s: creating %d missing partition log(s)", info.name, len(missing))
                self.logs.create_many(info.name, missing, config, now_ms, info.topic_id)
            for index in range(info.partitions):
                plog = self.logs.get(info.name, index)
                assert plog is not None
                if self.logs.repair_topic_id(info.name, index, info.topic_id):
                    log.warning("%s-%d: partition.metadata rewritten", info.name, index)
                parts.append(self._new_partition(info, index, plog, min_isr))
            self._partitions[info.name] = parts

    def _log_config_for_loading(self, topic: str) -> LogConfig:
        if self.topics.get(topic) is None:
            return LogConfig.from_topic_configs(self.config.topic_defaults())
        return self.log_config(topic)

    def _new_partition(
        self, info: TopicInfo, index: int, plog: PartitionLog, min_isr: int | None = None
    ) -> Partition:
        """`min_isr`: the topic's min.insync.replicas when the caller already has it."""
        return Partition(
            info.name,
            index,
            plog,
            node_id=self.node_id,
            topic_id=info.topic_id,
            min_insync_replicas=self._min_insync(info.name) if min_isr is None else min_isr,
        )

    # -- configs ------------------------------------------------------------------------------
    def effective_topic_configs(self, topic: str) -> dict[str, str | None]:
        """Every topic config: the topic override, else the broker value, else the default."""
        values = self.config.topic_defaults()
        info = self.topics.get(topic)
        if info is not None:
            values.update(info.configs)
        return values

    def log_config(self, topic: str) -> LogConfig:
        return LogConfig.from_topic_configs(self.effective_topic_configs(topic))

    def _min_insync(self, topic: str) -> int:
        raw = self.effective_topic_configs(topic).get("min.insync.replicas")
        try:
            return int(raw) if raw is not None else 1
        except ValueError:
            return 1

    def _validate_configs(self, configs: Mapping[str, str | None]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in configs.items():
            definition = TOPIC_CONFIGS.get(key)
            if definition is None:
                raise InvalidConfigError(f"Unknown topic config name: {key}")
            if value is None:
                raise InvalidConfigError(f"Null value not supported for topic configs: {key}")
            try:
                definition.validate(value)
            except ConfigError as exc:
                raise InvalidConfigError(
                    f"Invalid value {value} for configuration {key}: {exc}"
                ) from exc
            out[key] = value
        merged = self.config.topic_defaults()
        merged.update(out)
        try:
            LogConfig.from_topic_configs(merged)
        except (ValueError, TypeError) as exc:
            raise InvalidConfigError(str(exc)) from exc
        return out

    # -- topics ------------------------------------------------------------------------------
    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        *,
        now_ms: int,
        validate_only: bool = False,
        assignments: Mapping[int, list[int]] | None = None,
    ) -> TopicInfo:
        """Create a topic (or only validate the request). -1 means the broker default.

        The topic is internal when its name is one of `INTERNAL_TOPICS`.
        """
        validate_topic_name(name)
        if self.topics.get(name) is not None:
            raise TopicExistsError(f"Topic '{name}' already exists.")
        if has_collision_chars(name):
            key = collision_key(name)
            for other in self.topics.all():
                if collision_key(other.name) == key:
                    raise InvalidTopicError(
                        f"Topic '{name}' collides with existing topic: {other.name}"
                    )
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time."
                )
            num_partitions, replication_factor = self._check_assignments(assignments, 0)
        else:
            if num_partitions == -1:
                num_partitions = self.config.num_partitions
            if replication_factor == -1:
                replication_factor = int(str(self.config.raw("default.replication.factor")))
            if num_partitions <= 0:
                raise InvalidPartitionsError(
                    "Number of partitions was set to an invalid non-positive value."
                )
            if replication_factor <= 0:
                raise InvalidReplicationFactorError(
                    "Replication factor must be larger than 0, or -1 to use the default value."
                )
            if replication_factor > 1:
                raise InvalidReplicationFactorError(
                    f"Unable to replicate the partition {replication_factor} time(s): The target "
                    f"replication factor of {replication_factor} cannot be reached because only "
                    "1 broker(s) are registered."
                )
        if num_partitions > MAX_PARTITIONS_PER_REQUEST:
            raise PolicyViolationError("Excessively large number of partitions per request.")
        overrides = self._validate_configs(configs or {})
        topic_id = new_random_uuid(t.topic_id for t in self.topics.all())
        info = TopicInfo(
            name=name,
            topic_id=topic_id,
            partitions=num_partitions,
            replication_factor=replication_factor,
            configs=overrides,
            is_internal=_is_internal_name(name),
        )
        if validate_only:
            return info
        log_config = LogConfig.from_topic_configs({**self.config.topic_defaults(), **overrides})
        created = self._create_logs(info, 0, num_partitions, log_config, now_ms)
        min_isr = self._min_insync(name)
        self._partitions[name] = [
            self._new_partition(info, i, plog, min_isr) for i, plog in enumerate(created)
        ]
        return info

    def _create_logs(
        self, info: TopicInfo, first: int, count: int, log_config: LogConfig, now_ms: int
    ) -> list[PartitionLog]:
        """Logs `first` .. `count`-1 of the topic in one batch, then `info` into the store
        (the commit point); on failure the new logs are deleted again and the error raised."""
        created = self.logs.create_many(
            info.name, range(first, count), log_config, now_ms, info.topic_id
        )
        try:
            self.topics.put(info)
        except BaseException:
            for plog in created:
                try:
                    self.logs.delete(info.name, plog.partition)
                except Exception:  # pragma: no cover - best effort rollback
                    log.exception("rollback of %s-%d failed", info.name, plog.partition)
            raise
        return created

    def _check_assignments(
        self, assignments: Mapping[int, list[int]], existing: int
    ) -> tuple[int, int]:
        """Validate a manual assignment for partitions existing.. ; returns (count, rf)."""
        indexes = sorted(assignments)
        if indexes != list(range(existing, existing + len(indexes))):
            raise InvalidReplicationAssignmentError(
                "Partitions should be a consecutive 0-based integer sequence"
                if existing == 0
                else f"Partitions should be numbered from {existing}"
            )
        sizes = {len(assignments[i]) for i in indexes}
        if len(sizes) != 1:
            raise InvalidReplicationAssignmentError(
                "All partitions should have the same number of replicas"
            )
        rf = sizes.pop()
        for index in indexes:
            replicas = assignments[index]
            if not replicas:
                raise InvalidReplicationAssignmentError(
                    f"The manual partition assignment includes an empty replica list for "
                    f"partition {index}."
                )
            if len(set(replicas)) != len(replicas):
                raise InvalidReplicationAssignmentError(
                    f"The manual partition assignment includes the broker {replicas} more than "
                    "once."
                )
            for broker in replicas:
                if broker != self.node_id:
                    raise InvalidReplicationAssignmentError(
                        f"The manual partition assignment includes broker {broker}, but no such "
                        "broker is registered."
                    )
        return len(indexes), rf

    def delete_topic(self, name: str) -> None:
        """Remove the topic from the metadata, then delete its logs; wakes its fetchers."""
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicError("This server does not host this topic-partition.")
        self.topics.remove(name)
        parts = self._partitions.pop(name, [])
        for index in range(info.partitions):
            if self.logs.get(name, index) is not None:
                self.logs.delete(name, index)
        for part in parts:
            self.notify_data(name, part.index)

    def create_partitions(
        self,
        name: str,
        count: int,
        *,
        now_ms: int,
        validate_only: bool = False,
        assignments: Mapping[int, list[int]] | None = None,
    ) -> None:
        """Grow the topic to `count` partitions (Kafka never shrinks)."""
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicError(f"The topic '{name}' does not exist.")
        if count < info.partitions:
            raise InvalidPartitionsError(
                f"The topic {name} currently has {info.partitions} partition(s); {count} would "
                "not be an increase."
            )
        if count == info.partitions:
            raise InvalidPartitionsError(f"Topic already has {info.partitions} partition(s).")
        if count - info.partitions > MAX_PARTITIONS_PER_REQUEST:
            raise PolicyViolationError("Excessively large number of partitions per request.")
        if assignments:
            added, _rf = self._check_assignments(assignments, info.partitions)
            if info.partitions + added != count:
                raise InvalidReplicationAssignmentError(
                    f"Attempted to add {count - info.partitions} additional partition(s), but "
                    f"only {added} assignment(s) were specified."
                )
        if validate_only:
            return
        new_info = TopicInfo(
            name=info.name,
            topic_id=info.topic_id,
            partitions=count,
            replication_factor=info.replication_factor,
            configs=info.configs,
            is_internal=info.is_internal,
        )
        created = self._create_logs(new_info, info.partitions, count, self.log_config(name), now_ms)
        parts = self._partitions.setdefault(name, [])
        min_isr = self._min_insync(name)
        for plog in created:
            parts.append(self._new_partition(new_info, plog.partition, plog, min_isr))

    def alter_topic_configs(
        self, name: str, configs: Mapping[str, str], *, validate_only: bool = False
    ) -> None:
        """Replace the topic's overrides with `configs`; live logs get the new LogConfig."""
        info = self.topics.get(name)
        if info is None:
            raise UnknownTopicError(f"The topic '{name}' does not exist.")
        overrides = self._validate_configs(configs)
        if validate_only:
            return
        new_info = TopicInfo(
            name=info.name,
            topic_id=info.topic_id,
            partitions=info.partitions,
            replication_factor=info.replication_factor,
            configs=overrides,
            is_internal=info.is_internal,
        )
        self.topics.put(new_info)
        log_config = self.log_config(name)
        min_isr = self._min_insync(name)
        for part in self._partitions.get(name, []):
            part.log.update_config(log_config)
            part.min_insync_replicas = min_isr

    # -- partitions ---------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition | None:
        parts = self._partitions.get(topic)
        if parts is None or not 0 <= index < len(parts):
            return None
        return parts[index]

    def partitions_of(self, topic: str) -> list[Partition]:
        return list(self._partitions.get(topic, []))

    def topic_info(self, topic: str) -> TopicInfo | None:
        return self.topics.get(topic)

    def append(
        self,
        topic: str,
        index: int,
        records: bytes | bytearray | memoryview,
        *,
        now_ms: int,
        required_acks: int = -1,
        batches: Sequence[tuple[int, BatchHeader]] | None = None,
    ) -> AppendResult:
        """Append to a partition as leader and wake its fetchers (`batches`: the records'
        batch headers when the caller parsed them).

        Raises UnknownTopicOrPartitionError, NotEnoughReplicasError or a
        wirebroker.log.errors.LogError.
        """
        part = self.partition(topic, index)
        if part is None:
            raise UnknownTopicOrPartitionError("This server does not host this topic-partition.")
        result = part.append_records(
            records, now_ms=now_ms, required_acks=required_acks, batches=batches
        )
        if not result.duplicate:
            self.notify_data(topic, index)
        return result

    # -- data listeners (long-poll Fetch) ----------------------------------------------------------
    def add_data_listener(self, listener: DataListener) -> None:
        self._listeners.append(listener)

    def remove_data_listener(self, listener: DataListener) -> None:
        self._listeners.remove(listener)

    def notify_data(self, topic: str, index: int) -> None:
        """Tell listeners that the partition changed (new data, new HW, or deleted)."""
        for listener in list(self._listeners):
            listener(topic, index)

    def log_dirs(self) -> list[Path]:
        return [Path(d).expanduser() for d in self.config.log_dirs]
