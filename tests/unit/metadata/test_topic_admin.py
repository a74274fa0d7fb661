"""LocalTopicAdmin: one validation path, the store as commit point, the listener told after."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from tests.unit.local_metadata import LocalTopicAdmin
from wirebroker.config import BrokerConfig
from wirebroker.log.log_manager import LogManager
from wirebroker.log.partition_log import PartitionLog
from wirebroker.metadata.errors import (
    InvalidReplicationAssignmentError,
    TopicExistsError,
    UnknownTopicError,
)
from wirebroker.metadata.topic_admin import NewPartitions, NewTopic, check_new_topic_assignments
from wirebroker.metadata.topic_store import TopicInfo, TopicStore

NOW = 1_700_000_000_000


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, object]] = []

    def on_partitions_created(self, info: TopicInfo, logs: Sequence[PartitionLog]) -> None:
        self.events.append(("created", info.name, [p.partition for p in logs]))

    def on_topic_deleted(self, info: TopicInfo) -> None:
        self.events.append(("deleted", info.name, info.partitions))

    def on_topic_configs_changed(self, info: TopicInfo) -> None:
        self.events.append(("configs", info.name, dict(info.configs)))


@pytest.fixture
def admin(tmp_path: Path) -> Iterator[tuple[LocalTopicAdmin, Recorder]]:
    config = BrokerConfig({"node.id": "0", "log.dirs": str(tmp_path)})
    logs = LogManager([tmp_path])
    rec = Recorder()
    yield LocalTopicAdmin(config, TopicStore.open(tmp_path), logs, node_id=0, listener=rec), rec
    logs.close()


def test_listener_hears_every_change_after_the_store(admin) -> None:
    a, rec = admin
    a.create_topic("t", 2, now_ms=NOW)
    a.create_partitions(NewPartitions("t", 4), now_ms=NOW)
    a.alter_topic_configs("t", {"retention.ms": " 100 "})
    assert a.describe("t").configs == {"retention.ms": "100"}  # type: ignore[union-attr]
    a.delete_topic("t")
    assert rec.events == [
        ("created", "t", [0, 1]),
        ("created", "t", [2, 3]),
        ("configs", "t", {"retention.ms": "100"}),
        ("deleted", "t", 4),
    ]
    assert a.describe("t") is None and a.logs.all_logs() == {}


def test_create_topics_answers_per_topic(admin) -> None:
    a, rec = admin
    results = a.create_topics([NewTopic("x"), NewTopic("x"), NewTopic("bad name")], now_ms=NOW)
    assert isinstance(results[0], TopicInfo)
    assert isinstance(results[1], TopicExistsError)
    assert results[2].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION  # type: ignore[union-attr]
    assert [e[1] for e in rec.events] == ["x"]


def test_validate_only_changes_nothing(admin) -> None:
    a, rec = admin
    a.create_topic("v", 3, now_ms=NOW, validate_only=True)
    a.create_topic("w", 1, now_ms=NOW)
    a.create_partitions(NewPartitions("w", 5), now_ms=NOW, validate_only=True)
    a.alter_topic_configs("w", {"retention.ms": "5"}, validate_only=True)
    assert a.describe("v") is None and a.describe("w").partitions == 1  # type: ignore[union-attr]
    assert len(rec.events) == 1


def test_unknown_topic_for_create_partitions_has_no_message(admin) -> None:
    a, _ = admin
    with pytest.raises(UnknownTopicError) as info:
        a.create_partitions(NewPartitions("nope", 3), now_ms=NOW)
    assert str(info.value) == ""


def test_assignment_checks() -> None:
    assert check_new_topic_assignments([(0, [0]), (1, [0])], [0]) == (2, 1)
    with pytest.raises(InvalidReplicationAssignmentError, match="multiple manual"):
        check_new_topic_assignments([(0, [0]), (0, [0])], [0])
    with pytest.raises(InvalidReplicationAssignmentError, match="consecutive"):
        check_new_topic_assignments([(1, [0])], [0])
    with pytest.raises(InvalidReplicationAssignmentError, match="no such broker"):
        check_new_topic_assignments([(0, [3])], [0])


def test_a_failed_store_write_removes_the_new_logs(admin, monkeypatch) -> None:
    a, rec = admin

    def broken(info: TopicInfo) -> None:
        raise OSError("injected")

    monkeypatch.setattr(a.topics, "put", broken)
    with pytest.raises(OSError, match="injected"):
        a.create_topic("t", 3, now_ms=NOW)
    assert a.logs.all_logs() == {} and rec.events == []
