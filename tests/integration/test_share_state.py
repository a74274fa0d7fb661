"""The share coordinator over real sockets against a broker process: FindCoordinator key type 2,
then InitializeShareGroupState -> WriteShareGroupState -> ReadShareGroupState, the broker
restarted on its data, ReadShareGroupState again gives the same state (replayed from
`__share_group_state`), and the summary agrees; and the persister's remote path (the state
RPCs sent to the broker leading the key's partition, here that process)."""

from __future__ import annotations

import time
import uuid
from typing import Any, cast

import trio
from _broker import BrokerProcess

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from wirebroker.share_coordinator.keys import SharePartitionKey
from wirebroker.share_coordinator.persister import (
    CoordinatorPersister,
    PartitionState,
    StateBatch,
)

FAST = {"share.coordinator.state.topic.num.partitions": "3"}
_LOADING = (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR)


def _state(w: Wire, api: ApiKey, version: int, key: SharePartitionKey, **fields: Any) -> Any:
    """One state RPC for `key` (after FindCoordinator key type 2), retried while loading."""
    deadline = time.monotonic() + 30
    body = {
        "group_id": key.group_id,
        "topics": [
            {"topic_id": key.topic_id, "partitions": [{"partition": key.partition, **fields}]}
        ],
    }
    while True:
        find = {"key_type": 2, "coordinator_keys": [key.coordinator_key]}
        [entry] = w.call(ApiKey.FIND_COORDINATOR, 6, find).coordinators
        if entry.error_code == 0:
            [result] = w.call(api, version, body).results
            [partition] = result.partitions
            if partition.error_code not in _LOADING:
                return partition
        assert time.monotonic() < deadline, entry
        time.sleep(0.05)


def _topic_id(w: Wire, name: str) -> uuid.UUID:
    meta = w.call(ApiKey.METADATA, 12, {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}]})
    topic_id: uuid.UUID = meta.topics[0].topic_id
    return topic_id


def _batches(read: Any) -> list[tuple[int, int, int, int]]:
    return [
        (b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
        for b in read.state_batches
    ]


def test_state_written_survives_a_restart(broker_factory: Any) -> None:
    broker: BrokerProcess = broker_factory(**FAST)
    with Wire(broker.bootstrap) as w:
        w.create_topic("orders", 2)
        key = SharePartitionKey("sg", _topic_id(w, "orders"), 1)
        init = _state(w, ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, key, state_epoch=1, start_offset=0)
        assert init.error_code == 0
        batches = [
            {"first_offset": 0, "last_offset": 4, "delivery_state": 2, "delivery_count": 1},
            {"first_offset": 5, "last_offset": 9, "delivery_state": 0, "delivery_count": 2},
        ]
        write = _state(
            w,
            ApiKey.WRITE_SHARE_GROUP_STATE,
            1,
            key,
            state_epoch=1,
            leader_epoch=0,
            start_offset=2,
            delivery_complete_count=3,
            state_batches=batches,
        )
        assert write.error_code == 0
        before = _state(w, ApiKey.READ_SHARE_GROUP_STATE, 0, key, leader_epoch=0)
        assert (before.error_code, before.state_epoch, before.start_offset) == (0, 1, 2)
        assert _batches(before) == [(2, 4, 2, 1), (5, 9, 0, 2)]
    broker.restart()
    with Wire(broker.bootstrap) as w:
        after = _state(w, ApiKey.READ_SHARE_GROUP_STATE, 0, key, leader_epoch=0)
        assert (after.error_code, after.state_epoch, after.start_offset) == (0, 1, 2)
        assert _batches(after) == _batches(before)
        summary = _state(w, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 1, key, leader_epoch=0)
        assert (summary.error_code, summary.start_offset, summary.state_epoch) == (0, 2, 1)
        assert summary.delivery_complete_count == 3
        stale = _state(
            w,
            ApiKey.WRITE_SHARE_GROUP_STATE,
            0,
            key,
            state_epoch=0,
            leader_epoch=0,
            start_offset=2,
            state_batches=[],
        )
        assert stale.error_code == E.FENCED_STATE_EPOCH


class _Elsewhere:
    """The local side of a persister whose keys are all led by another broker."""

    def ensure_topic(self) -> E:
        return E.NONE

    def partition_for(self, key: SharePartitionKey) -> int:
        del key
        return 0


async def test_persister_sends_the_state_rpcs_to_the_leader(broker_factory: Any) -> None:
    broker: BrokerProcess = broker_factory(**FAST)
    with Wire(broker.bootstrap) as w:
        w.create_topic("events", 1)
        topic = _topic_id(w, "events")
        key = SharePartitionKey("remote", topic, 0)
        _state(w, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 1, key, leader_epoch=0)  # loaded
    host, port = broker.bootstrap.rsplit(":", 1)
    persister = CoordinatorPersister(
        cast(Any, _Elsewhere()), lambda p: (7, host, int(port)), node_id=0, backoff_s=0.05
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(persister.run)
        assert await persister.read_state("remote", topic, 0, 0) is E.INVALID_REQUEST
        assert await persister.initialize_state("remote", topic, 0, 2, 10) is E.NONE
        state = PartitionState(2, 12, 1, (StateBatch(12, 20, 2, 1),))
        assert await persister.write_state("remote", topic, 0, state) is E.NONE
        assert await persister.read_state("remote", topic, 0, 1) == state
        summary = await persister.read_summary("remote", topic, 0, 1)
        assert summary == PartitionState(2, 12, 1, ())
        assert await persister.delete_state("remote", topic, 0) is E.NONE
        unknown = await persister.initialize_state("remote", uuid.uuid4(), 0, 0, 0)
        assert unknown is E.UNKNOWN_TOPIC_OR_PARTITION
        nursery.cancel_scope.cancel()
