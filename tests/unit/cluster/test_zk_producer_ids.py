"""Producer ids from one cluster-wide sequence (cluster/zk_producer_ids.py) over the in-memory
ZooKeeper: every broker of a cluster hands out distinct ids, in Kafka's znode format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from wirebroker.cluster.zk_producer_ids import (
    PRODUCER_ID_BLOCK,
    ProducerIdBlockError,
    ZkProducerIdBlocks,
    decode_producer_id_block,
    encode_producer_id_block,
)
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.producer_ids import ProducerIdManager


def test_block_document_is_kafkas() -> None:
    data = encode_producer_id_block(2, 1000, 1999)
    assert json.loads(data) == {
        "version": 1,
        "broker": 2,
        "block_start": "1000",
        "block_end": "1999",
    }
    assert decode_producer_id_block(data) == (1000, 1999)
    assert decode_producer_id_block(b"") is None
    with pytest.raises(ProducerIdBlockError):
        decode_producer_id_block(b'{"version":1}')
    with pytest.raises(ProducerIdBlockError):
        decode_producer_id_block(encode_producer_id_block(0, 5, 4))


async def test_brokers_take_consecutive_blocks_from_one_znode(tmp_path: Path) -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        coords = [MemoryCoordination(server) for _ in range(3)]
        for coord in coords:
            await nursery.start(coord.run)
        await coords[0].ensure_path(PRODUCER_ID_BLOCK)  # empty, as brokers create it at start
        blocks = [ZkProducerIdBlocks(c, i) for i, c in enumerate(coords)]
        assert await blocks[1].reserve(10) == 0
        assert await blocks[0].reserve(10) == 10
        assert await blocks[2].reserve(5) == 20
        data, _ = await coords[0].get(PRODUCER_ID_BLOCK)
        assert json.loads(data)["broker"] == 2
        assert decode_producer_id_block(data) == (20, 24)
        nursery.cancel_scope.cancel()


async def test_missing_znode_is_created_with_the_first_block() -> None:
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        coord = MemoryCoordination(server)
        await nursery.start(coord.run)
        blocks = ZkProducerIdBlocks(coord, 7)
        assert await blocks.reserve(3) == 0
        assert await blocks.reserve(3) == 3
        nursery.cancel_scope.cancel()


async def test_managers_of_three_brokers_never_issue_an_id_twice(tmp_path: Path) -> None:
    """The bug this fixes: each broker's own TopicStore started its ids at 0, so producers
    that asked different brokers shared producer ids (and sequence numbers)."""
    server = MemoryZooKeeper()
    issued: list[int] = []
    async with trio.open_nursery() as nursery:
        managers = []
        for i in range(3):
            coord = MemoryCoordination(server)
            await nursery.start(coord.run)
            reserve = ZkProducerIdBlocks(coord, i).reserve
            store = TopicStore.open(tmp_path / f"b{i}")
            managers.append(ProducerIdManager(store, block_size=4, reserve=reserve))

        async def take(manager: ProducerIdManager) -> None:
            for _ in range(9):
                issued.append(await manager.allocate())

        async with trio.open_nursery() as takers:
            for manager in managers:
                for _ in range(2):  # two concurrent requests per broker
                    takers.start_soon(take, manager)
        nursery.cancel_scope.cancel()
    assert len(issued) == 54
    assert len(set(issued)) == 54, sorted(issued)


async def test_without_reserve_allocate_is_the_local_sequence(tmp_path: Path) -> None:
    manager = ProducerIdManager(TopicStore.open(tmp_path), block_size=4)
    assert [await manager.allocate() for _ in range(5)] == [0, 1, 2, 3, 4]
