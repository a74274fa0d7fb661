"""The broker's partitions: build them from the logs, append to them, wake their fetchers.

`ReplicaManager` keeps the in-memory `Partition`s of every topic the `TopicStore` knows, each
over its `PartitionLog` (`LogManager`). It is pure (no trio): long-poll Fetch wake-ups go
through data listeners (`add_data_listener`; the broker installs its `FetchWaiters`).

Topic administration (create, delete, grow, configs) is `wirebroker.cluster.TopicAdmin`'s;
the `ReplicaManager` is its `PartitionListener` and hears of each change after the store
recorded it: `on_partitions_created` (new partitions over their new logs), `on_topic_deleted`
(drop the partitions, wake their fetchers), `on_topic_configs_changed` (new `LogConfig` and
min.insync.replicas on the live partitions).

`load` (start-up) reconciles the logs with the store: logs of a topic the store does not know
are deleted, unless the store was created by this process (a missing store must never wipe
data; those logs are left and logged). A partition the store knows without a log (lost by a
power failure, or a crash during an older create) gets an empty log, and a
`partition.metadata` that is missing or does not hold the store's topic id (it is written
without fsync) is rewritten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from wirebroker.cluster.topic_configs import min_insync_replicas, topic_log_config
from wirebroker.cluster.topic_store import TopicInfo, TopicStore, ensure_meta_properties
from wirebroker.replication.partition import Partition

if TYPE_CHECKING:
    from collections.abc import Sequence

    from protocol.records import BatchHeader
    from wirebroker.config import BrokerConfig
    from wirebroker.log.config import LogConfig
    from wirebroker.log.log_manager import LogManager
    from wirebroker.log.partition_log import AppendResult, PartitionLog

__all__ = ["DataListener", "ReplicaManager"]

log = logging.getLogger(__name__)

DataListener = Callable[[str, int], None]


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
        ensure_meta_properties(
            log_dirs, node_id=self.node_id, cluster_id=self.topics.cluster_id, fs=self.topics.fs
        )
        self.logs.load(self.log_config, now_ms)
        self._delete_stray_logs()
        self._partitions.clear()
        for info in self.topics.all():
            config = self.log_config(info.name)
            missing = [i for i in range(info.partitions) if self.logs.get(info.name, i) is None]
            if missing:
                log.warning("%s: creating %d missing partition log(s)", info.name, len(missing))
                self.logs.create_many(info.name, missing, config, now_ms, info.topic_id)
            plogs = []
            for index in range(info.partitions):
                plog = self.logs.get(info.name, index)
                assert plog is not None
                if self.logs.repair_topic_id(info.name, index, info.topic_id):
                    log.warning("%s-%d: partition.metadata rewritten", info.name, index)
                plogs.append(plog)
            self.on_partitions_created(info, plogs)

    def _delete_stray_logs(self) -> None:
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

    def log_config(self, topic: str) -> LogConfig:
        """The topic's LogConfig (broker defaults for a topic the store does not know)."""
        info = self.topics.get(topic)
        return topic_log_config(self.config, info.configs if info is not None else {})

    def log_dirs(self) -> list[Path]:
        return [Path(d).expanduser() for d in self.config.log_dirs]

    # -- PartitionListener (topic administration) -------------------------------------------
    def on_partitions_created(self, info: TopicInfo, logs: Sequence[PartitionLog]) -> None:
        """Serve the new partitions of `info` (a new topic, or one that grew) over `logs`."""
        min_isr = min_insync_replicas(self.config, info.configs)
        parts = self._partitions.setdefault(info.name, [])
        for plog in logs:
            parts.append(
                Partition(
                    info.name,
                    plog.partition,
                    plog,
                    node_id=self.node_id,
                    topic_id=info.topic_id,
                    min_insync_replicas=min_isr,
                )
            )

    def on_topic_deleted(self, info: TopicInfo) -> None:
        """Stop serving the topic's partitions and wake their fetchers."""
        for part in self._partitions.pop(info.name, []):
            self.notify_data(info.name, part.index)

    def on_topic_configs_changed(self, info: TopicInfo) -> None:
        """The live partitions take the topic's new LogConfig and min.insync.replicas."""
        log_config = topic_log_config(self.config, info.configs)
        min_isr = min_insync_replicas(self.config, info.configs)
        for part in self._partitions.get(info.name, []):
            part.update_config(log_config, min_isr)

    # -- partitions ---------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition | None:
        parts = self._partitions.get(topic)
        if parts is None or not 0 <= index < len(parts):
            return None
        return parts[index]

    def partitions_of(self, topic: str) -> list[Partition]:
        return list(self._partitions.get(topic, []))

    def append(
        self,
        part: Partition,
        records: bytes | bytearray | memoryview,
        *,
        now_ms: int,
        required_acks: int = -1,
        batches: Sequence[tuple[int, BatchHeader]] | None = None,
    ) -> AppendResult:
        """Append to `part` as leader and wake its fetchers (`batches`: the records' batch
        headers when the caller parsed them).

        Raises NotEnoughReplicasError or a wirebroker.log.errors.LogError.
        """
        result = part.append_records(
            records, now_ms=now_ms, required_acks=required_acks, batches=batches
        )
        if not result.duplicate:
            self.notify_data(part.topic, part.index)
        return result

    # -- data listeners (long-poll Fetch) ----------------------------------------------------------
    def add_data_listener(self, listener: DataListener) -> None:
        self._listeners.append(listener)

    def notify_data(self, topic: str, index: int) -> None:
        """Tell listeners that the partition changed (new data, new HW, or deleted)."""
        for listener in list(self._listeners):
            listener(topic, index)
