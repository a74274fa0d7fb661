from __future__ import annotations

from pathlib import Path

from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.producer_ids import ProducerIdManager


def test_ids_are_unique_and_never_reused_after_reopen(tmp_path: Path) -> None:
    manager = ProducerIdManager(TopicStore.open(tmp_path), block_size=4)
    first = [manager.next_id() for _ in range(6)]
    assert first == [0, 1, 2, 3, 4, 5]
    # "Crash": a new manager over a reopened store, without any shutdown step.
    again = ProducerIdManager(TopicStore.open(tmp_path), block_size=4)
    second = [again.next_id() for _ in range(3)]
    assert min(second) > max(first)
    assert second == [8, 9, 10]
    third = ProducerIdManager(TopicStore.open(tmp_path), block_size=4).next_id()
    assert third == 12


def test_reservation_is_durable_before_first_id(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    manager = ProducerIdManager(store, block_size=1000)
    assert manager.next_id() == 0
    assert TopicStore.open(tmp_path).next_producer_id == 1000
