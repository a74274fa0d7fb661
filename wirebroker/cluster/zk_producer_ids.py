"""Producer id blocks shared by every broker of a ZooKeeper cluster (Kafka's ZkProducerIdManager).

Every broker answers InitProducerId, so the ids must come from one cluster-wide sequence:
two producers holding the same id would share sequence numbers at a partition leader, which
then takes the second producer's first batch for a retry of the first producer's batch,
acknowledges it and stores nothing (an acknowledged write lost).

The sequence lives in Kafka's znode (created at start-up, empty, with the other persistent
paths):

    /latest_producer_id_block   {"version":1,"broker":<id>,"block_start":"<n>","block_end":"<m>"}

the last block handed out, both ends inclusive, as decimal strings (Kafka's format). To take
the next block of `count` ids a broker reads the znode (data and version), computes
`start = block_end + 1` (0 when the znode is empty) and writes its own block with
setData(version = the version read); a concurrent writer makes that fail with BadVersion and
the broker reads again. A block is durable in ZooKeeper before its first id is handed out, so
no id is ever issued twice, whichever broker issues it and whatever crashes (a crash skips at
most the rest of a block).

`ZkProducerIdBlocks(coord, node_id).reserve(count)` is the `reserve` of
`wirebroker.replication.producer_ids.ProducerIdManager` in a cluster.
"""

from __future__ import annotations

import json

from wirebroker.coordination.api import BadVersionError, Coordination, NodeExistsError, NoNodeError

__all__ = [
    "PRODUCER_ID_BLOCK",
    "ZkProducerIdBlocks",
    "decode_producer_id_block",
    "encode_producer_id_block",
]

PRODUCER_ID_BLOCK = "/latest_producer_id_block"
MAX_PRODUCER_ID = (1 << 63) - 1


class ProducerIdBlockError(ValueError):
    """The znode holds something that is not Kafka's producer id block document."""


def encode_producer_id_block(broker_id: int, start: int, end: int) -> bytes:
    doc = {"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end)}
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_producer_id_block(data: bytes | None) -> tuple[int, int] | None:
    """(block_start, block_end) of the last block, or None for an empty znode (no block yet)."""
    if not data:
        return None
    try:
        doc = json.loads(data)
        start, end = int(doc["block_start"]), int(doc["block_end"])
    except (ValueError, TypeError, KeyError, UnicodeDecodeError) as exc:
        raise ProducerIdBlockError(f"{PRODUCER_ID_BLOCK}: {data!r}") from exc
    if not 0 <= start <= end:
        raise ProducerIdBlockError(f"{PRODUCER_ID_BLOCK}: bad block {start}..{end}")
    return start, end


class ZkProducerIdBlocks:
    """Takes blocks of producer ids from /latest_producer_id_block (see the module doc)."""

    def __init__(self, coord: Coordination, node_id: int) -> None:
        self.coord = coord
        self.node_id = node_id

    async def reserve(self, count: int) -> int:
        """Reserve the next `count` ids of the cluster; returns the first."""
        if count <= 0:
            raise ValueError("count must be positive")
        while True:
            try:
                data, stat = await self.coord.get(PRODUCER_ID_BLOCK)
            except NoNodeError:
                try:
                    await self.coord.create(
                        PRODUCER_ID_BLOCK, encode_producer_id_block(self.node_id, 0, count - 1)
                    )
                except NodeExistsError:
                    continue
                return 0
            last = decode_producer_id_block(data)
            start = 0 if last is None else last[1] + 1
            end = start + count - 1
            if end > MAX_PRODUCER_ID:
                raise ProducerIdBlockError("producer ids exhausted")
            block = encode_producer_id_block(self.node_id, start, end)
            try:
                await self.coord.set(PRODUCER_ID_BLOCK, block, version=stat.version)
            except BadVersionError:
                continue  # another broker took a block meanwhile: read again
            return start
