"""ReplicaManager + Partition against a real LogManager/TopicStore in tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.records import build_batch
from tests.unit.local_metadata import Leader, LocalTopicAdmin, lead_every_partition
from wirebroker.config import BrokerConfig
from wirebroker.log.config import LogConfig
from wirebroker.log.log_manager import LogManager
from wirebroker.metadata.errors import (
    ClusterError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    PolicyViolationError,
    TopicExistsError,
    UnknownTopicError,
)
from wirebroker.metadata.topic_admin import NewPartitions
from wirebroker.metadata.topic_store import TopicStore, read_meta_properties
from wirebroker.replication.partition import READ_COMMITTED, NotEnoughReplicasError
from wirebroker.replication.replica_manager import ReplicaManager

NOW = 1_700_000_000_000


class Env:
    def __init__(self, data: Path, **overrides: str) -> None:
        self.data = data
        self.overrides = overrides
        self.open()

    def open(self) -> None:
        self.config = BrokerConfig({"node.id": "0", "log.dirs": str(self.data), **self.overrides})
        self.topics = TopicStore.open(self.data)
        self.logs = LogManager([self.data])
        self.events: list[tuple[str, int]] = []
        self.rm = ReplicaManager(
            self.config,
            self.logs,
            self.topics,
            node_id=0,
            on_data=lambda t, i: self.events.append((t, i)),
        )
        self.rm.load(NOW)
        lead_every_partition(self.rm, NOW)
        self.admin = LocalTopicAdmin(
            self.config, self.topics, self.logs, node_id=0, listener=Leader(self.rm, lambda: NOW)
        )

    def reopen(self) -> None:
        self.logs.close()
        self.open()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    e = Env(tmp_path / "data")
    yield e
    e.logs.close()


def batch(n: int = 1, **kw: object) -> bytes:
    return build_batch([(None, b"value-%d" % i) for i in range(n)], base_timestamp=NOW, **kw)  # type: ignore[arg-type]


def test_create_topic_defaults_and_partitions(env: Env) -> None:
    info = env.admin.create_topic("orders", now_ms=NOW)
    assert info.partitions == 1 and info.replication_factor == 1
    assert not info.is_internal
    assert env.topics.get("orders") == info
    parts = env.rm.partitions_of("orders")
    assert [p.index for p in parts] == [0]
    p = parts[0]
    assert (p.leader_id, p.leader_epoch, p.replicas, p.isr) == (0, 0, [0], [0])
    assert p.topic_id == info.topic_id
    assert env.logs.get("orders", 0) is not None
    assert env.rm.partition("orders", 1) is None
    assert env.rm.partition("nope", 0) is None
    assert env.rm.partitions_of("nope") == []


def test_create_topic_uses_broker_num_partitions(tmp_path: Path) -> None:
    e = Env(tmp_path / "d", **{"num.partitions": "4"})
    try:
        assert e.admin.create_topic("t", now_ms=NOW).partitions == 4
        assert len(e.rm.partitions_of("t")) == 4
    finally:
        e.logs.close()


def test_internal_topic_flag(env: Env) -> None:
    info = env.admin.create_topic(
        "__consumer_offsets", 3, configs={"cleanup.policy": "compact"}, now_ms=NOW
    )
    assert info.is_internal
    assert env.admin.effective_configs("__consumer_offsets")["cleanup.policy"] == "compact"


@pytest.mark.parametrize(
    ("kwargs", "exc", "code"),
    [
        ({"name": "bad name"}, InvalidTopicError, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ({"name": "t", "num_partitions": 0}, InvalidPartitionsError, ErrorCode.INVALID_PARTITIONS),
        ({"name": "t", "num_partitions": -5}, InvalidPartitionsError, ErrorCode.INVALID_PARTITIONS),
        (
            {"name": "t", "replication_factor": 0},
            InvalidReplicationFactorError,
            ErrorCode.INVALID_REPLICATION_FACTOR,
        ),
        (
            {"name": "t", "replication_factor": 3},
            InvalidReplicationFactorError,
            ErrorCode.INVALID_REPLICATION_FACTOR,
        ),
        (
            {"name": "t", "configs": {"no.such.config": "1"}},
            InvalidConfigError,
            ErrorCode.INVALID_CONFIG,
        ),
        (
            {"name": "t", "configs": {"retention.ms": "abc"}},
            InvalidConfigError,
            ErrorCode.INVALID_CONFIG,
        ),
        (
            {"name": "t", "configs": {"cleanup.policy": "shred"}},
            InvalidConfigError,
            ErrorCode.INVALID_CONFIG,
        ),
        (
            {"name": "t", "configs": {"retention.ms": None}},
            InvalidConfigError,
            ErrorCode.INVALID_CONFIG,
        ),
        (
            {"name": "t", "num_partitions": 100_001},
            PolicyViolationError,
            ErrorCode.POLICY_VIOLATION,
        ),
        (
            {"name": "t", "num_partitions": 2, "assignments": {0: [0]}},
            InvalidRequestError,
            ErrorCode.INVALID_REQUEST,
        ),
        (
            {"name": "t", "assignments": {0: [0], 2: [0]}},
            InvalidReplicationAssignmentError,
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
        ),
        (
            {"name": "t", "assignments": {0: [1]}},
            InvalidReplicationAssignmentError,
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
        ),
        (
            {"name": "t", "assignments": {0: [0, 0]}},
            InvalidReplicationAssignmentError,
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
        ),
        (
            {"name": "t", "assignments": {0: []}},
            InvalidReplicationAssignmentError,
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
        ),
    ],
)
def test_create_topic_errors(env: Env, kwargs: dict, exc: type, code: ErrorCode) -> None:
    with pytest.raises(exc) as info:
        env.admin.create_topic(now_ms=NOW, **kwargs)
    assert isinstance(info.value, ClusterError)
    assert info.value.error_code == code
    assert str(info.value)
    assert env.topics.all() == []
    assert env.logs.all_logs() == {}


def test_create_topic_exists_and_collisions(env: Env) -> None:
    env.admin.create_topic("a.b", now_ms=NOW)
    with pytest.raises(TopicExistsError) as exists:
        env.admin.create_topic("a.b", now_ms=NOW)
    assert exists.value.error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    with pytest.raises(InvalidTopicError, match=r"collides with existing topic: a\.b"):
        env.admin.create_topic("a_b", now_ms=NOW)
    env.admin.create_topic("ab", now_ms=NOW)  # no '.' or '_': no collision


def test_validate_only_has_no_effect(env: Env) -> None:
    info = env.admin.create_topic("v", 3, now_ms=NOW, validate_only=True)
    assert info.partitions == 3
    assert env.topics.get("v") is None
    assert env.rm.partitions_of("v") == []
    assert env.logs.all_logs() == {}


def test_manual_assignment(env: Env) -> None:
    info = env.admin.create_topic("m", assignments={0: [0], 1: [0]}, now_ms=NOW)
    assert (info.partitions, info.replication_factor) == (2, 1)


def test_effective_configs_precedence(tmp_path: Path) -> None:
    e = Env(tmp_path / "d", **{"log.retention.ms": "5000", "log.segment.bytes": "3000000"})
    try:
        e.admin.create_topic("t", configs={"segment.bytes": "2000000"}, now_ms=NOW)
        values = e.admin.effective_configs("t")
        assert values["segment.bytes"] == "2000000"  # topic override
        assert values["retention.ms"] == "5000"  # broker synonym
        assert values["max.message.bytes"] == "1048588"  # default
        cfg = e.rm.log_config("t")
        assert isinstance(cfg, LogConfig)
        assert (cfg.segment_bytes, cfg.retention_ms) == (2000000, 5000)
        assert e.logs.get("t", 0).config.segment_bytes == 2000000  # type: ignore[union-attr]
        # Kafka's internal config for tests takes the place of segment.bytes
        e.admin.alter_topic_configs("t", {"internal.segment.bytes": "20000"})
        assert e.logs.get("t", 0).config.segment_bytes == 20000  # type: ignore[union-attr]
    finally:
        e.logs.close()


def test_alter_topic_configs_replaces_overrides_and_updates_logs(env: Env) -> None:
    env.admin.create_topic("t", 2, configs={"retention.ms": "1000"}, now_ms=NOW)
    env.admin.alter_topic_configs("t", {"max.message.bytes": "2000"}, validate_only=True)
    assert env.topics.get("t").configs == {"retention.ms": "1000"}  # type: ignore[union-attr]
    env.admin.alter_topic_configs("t", {"max.message.bytes": "2000"})
    assert dict(env.topics.get("t").configs) == {"max.message.bytes": "2000"}  # type: ignore[union-attr]
    for p in env.rm.partitions_of("t"):
        assert p.log.config.max_message_bytes == 2000
        assert p.log.config.retention_ms == 604800000
    with pytest.raises(InvalidConfigError):
        env.admin.alter_topic_configs("t", {"bogus": "1"})
    with pytest.raises(UnknownTopicError):
        env.admin.alter_topic_configs("missing", {})


def test_create_partitions(env: Env) -> None:
    env.admin.create_topic("t", 2, now_ms=NOW)
    env.admin.create_partitions(NewPartitions("t", 5), now_ms=NOW, validate_only=True)
    assert len(env.rm.partitions_of("t")) == 2
    env.admin.create_partitions(NewPartitions("t", 5), now_ms=NOW)
    assert [p.index for p in env.rm.partitions_of("t")] == [0, 1, 2, 3, 4]
    assert env.topics.get("t").partitions == 5  # type: ignore[union-attr]
    assert env.logs.get("t", 4) is not None
    for count in (5, 3):
        with pytest.raises(InvalidPartitionsError):
            env.admin.create_partitions(NewPartitions("t", count), now_ms=NOW)
    with pytest.raises(UnknownTopicError):
        env.admin.create_partitions(NewPartitions("missing", 3), now_ms=NOW)
    with pytest.raises(InvalidReplicationAssignmentError):
        env.admin.create_partitions(NewPartitions("t", 7, [[0]]), now_ms=NOW)
    env.admin.create_partitions(NewPartitions("t", 6, [[0]]), now_ms=NOW)
    assert len(env.rm.partitions_of("t")) == 6


def test_delete_topic_removes_logs_and_metadata_and_wakes(env: Env) -> None:
    info = env.admin.create_topic("t", 2, now_ms=NOW)
    env.rm.append(env.rm.partition("t", 1), batch(), now_ms=NOW)
    dirs = [env.logs.log_dir_of("t", i) / f"t-{i}" for i in range(2)]
    env.events.clear()
    env.admin.delete_topic("t")
    assert env.topics.get("t") is None and env.topics.by_id(info.topic_id) is None
    assert env.rm.partitions_of("t") == [] and env.rm.partition("t", 0) is None
    assert env.logs.get("t", 0) is None and env.logs.get("t", 1) is None
    assert not any(d.exists() for d in dirs)
    assert sorted(env.events) == [("t", 0), ("t", 1)]
    with pytest.raises(UnknownTopicError) as unknown:
        env.admin.delete_topic("t")
    assert unknown.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # Re-creating the name gives a new, empty topic.
    again = env.admin.create_topic("t", 1, now_ms=NOW)
    assert again.topic_id != info.topic_id
    assert env.rm.partition("t", 0).log_end_offset == 0  # type: ignore[union-attr]


def test_append_advances_high_watermark_and_notifies(env: Env) -> None:
    env.admin.create_topic("t", 1, now_ms=NOW)
    env.events.clear()  # the partition became leader
    p = env.rm.partition("t", 0)
    assert p is not None
    assert (p.high_watermark, p.log_end_offset, p.last_stable_offset) == (0, 0, 0)
    result = env.rm.append(env.rm.partition("t", 0), batch(3), now_ms=NOW)
    assert (result.first_offset, result.last_offset) == (0, 2)
    assert (p.high_watermark, p.log_end_offset, p.last_stable_offset) == (3, 3, 3)
    assert env.events == [("t", 0)]
    assert p.fetch_upper_bound(READ_COMMITTED) == 3
    assert p.read(0, max_bytes=1 << 20).startswith(b"\x00" * 8)
    assert env.rm.partition("t", 1) is None  # append takes the Partition the caller holds


def test_idempotent_duplicate_does_not_notify(env: Env) -> None:
    env.admin.create_topic("t", 1, now_ms=NOW)
    b = batch(2, producer_id=7, producer_epoch=0, base_sequence=0)
    first = env.rm.append(env.rm.partition("t", 0), b, now_ms=NOW)
    env.events.clear()
    dup = env.rm.append(env.rm.partition("t", 0), b, now_ms=NOW)
    assert dup.duplicate and dup.first_offset == first.first_offset
    assert env.events == []
    assert env.rm.partition("t", 0).log_end_offset == 2  # type: ignore[union-attr]


def test_min_insync_replicas(env: Env) -> None:
    env.admin.create_topic("t", 1, configs={"min.insync.replicas": "2"}, now_ms=NOW)
    # one replica: Kafka's effective minimum is min(min.insync.replicas, replicas) = 1
    env.rm.append(env.rm.partition("t", 0), batch(), now_ms=NOW, required_acks=-1)
    env.rm.make_leader(
        "t", 0, leader_epoch=1, isr=[0], replicas=[0, 1], partition_epoch=1, now_ms=NOW
    )
    with pytest.raises(NotEnoughReplicasError) as info:
        env.rm.append(env.rm.partition("t", 0), batch(), now_ms=NOW, required_acks=-1)
    assert info.value.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert env.rm.partition("t", 0).log_end_offset == 1  # type: ignore[union-attr]
    env.rm.append(env.rm.partition("t", 0), batch(), now_ms=NOW, required_acks=1)
    env.admin.alter_topic_configs("t", {})
    env.rm.append(env.rm.partition("t", 0), batch(), now_ms=NOW, required_acks=-1)
    assert env.rm.partition("t", 0).log_end_offset == 3  # type: ignore[union-attr]


def test_leader_epoch_checks(env: Env) -> None:
    env.admin.create_topic("t", 1, now_ms=NOW)
    p = env.rm.partition("t", 0)
    assert p is not None
    assert p.check_leader_epoch(-1) == ErrorCode.NONE
    assert p.check_leader_epoch(0) == ErrorCode.NONE
    assert p.check_leader_epoch(1) == ErrorCode.UNKNOWN_LEADER_EPOCH
    p.leader_epoch = 5
    assert p.check_leader_epoch(4) == ErrorCode.FENCED_LEADER_EPOCH


def test_reload_restores_topics_data_and_meta_properties(env: Env) -> None:
    info = env.admin.create_topic("t", 2, configs={"retention.ms": "123456"}, now_ms=NOW)
    env.rm.append(env.rm.partition("t", 1), batch(4), now_ms=NOW)
    env.reopen()
    assert env.topics.get("t") == info
    p = env.rm.partition("t", 1)
    assert p is not None
    assert (p.log_end_offset, p.high_watermark) == (4, 4)
    assert p.log.config.retention_ms == 123456
    props = read_meta_properties(env.data)
    assert props is not None
    assert props["cluster.id"] == env.topics.cluster_id and props["node.id"] == "0"


def test_load_repairs_interrupted_create_and_delete(env: Env) -> None:
    env.admin.create_topic("keep", 1, now_ms=NOW)
    # A crash after the logs of "stray" were created but before the store recorded it.
    env.logs.create("stray", 0, LogConfig(), NOW)
    # A crash after "keep" got a partition in the store whose log was never created.
    info = env.topics.get("keep")
    assert info is not None
    from wirebroker.metadata.topic_store import TopicInfo

    env.topics.put(
        TopicInfo(name="keep", topic_id=info.topic_id, partitions=2, replication_factor=1)
    )
    env.reopen()
    assert env.logs.get("stray", 0) is None
    # The partition without a log is built once it has a role (ensure_partition creates the
    # log: `lead_every_partition`, as the single broker's cluster layer does at start).
    assert [p.index for p in env.rm.partitions_of("keep")] == [0, 1]
    assert env.logs.get("keep", 1) is not None


def test_fresh_store_never_deletes_existing_logs(tmp_path: Path) -> None:
    data = tmp_path / "d"
    e = Env(data)
    e.admin.create_topic("precious", 1, now_ms=NOW)
    e.rm.append(e.rm.partition("precious", 0), batch(), now_ms=NOW)
    e.logs.close()
    (e.topics.path).unlink()  # the metadata store is lost, the logs are not
    e.open()
    try:
        assert e.topics.created
        assert e.logs.get("precious", 0) is not None
        assert e.rm.partitions_of("precious") == []
    finally:
        e.logs.close()
