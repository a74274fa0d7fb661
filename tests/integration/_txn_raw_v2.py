"""A transaction version 2 (KIP-890 part 2) producer as raw Kafka requests, for tests: no
AddPartitionsToTxn / AddOffsetsToTxn (the partition leaders add the partitions), EndTxn v5
moves the producer to the epoch it answers. Built on `_txn_raw.RawTxn`.

    produce_v12(topic, p, values, seq=0, address=None)   Produce v12 -> error (coordinator
                                                         busy answers retried)
    commit_offsets_v5(group, topic, {p: offset})         TxnOffsetCommit v5 -> [errors]
    end_v5(commit, epoch=None)                           EndTxn v5 -> (error, pid, epoch)
and read_committed(address, topic, p) -> (committed values from offset 0, LSO).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _txn_raw import RawTxn, find_group_coordinator, retry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
import _wire

from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import decode_records, iter_batches


class RawTxnV2(RawTxn):
    """A TV2 producer: no AddPartitionsToTxn / AddOffsetsToTxn; EndTxn v5 moves the epoch."""

    def produce_v12(
        self,
        topic: str,
        partition: int,
        values: Sequence[bytes],
        *,
        seq: int = 0,
        address: str | None = None,
    ) -> int:
        body = self.produce_body(topic, partition, values, seq)

        def send() -> tuple[int, None]:
            resp = _wire.request(address or self.address, ApiKey.PRODUCE, 12, body, timeout=20)
            code = resp.responses[0].partition_responses[0].error_code
            # a busy coordinator (markers under way): CONCURRENT_TRANSACTIONS, as Kafka answers a
            # TV2 producer; an unreachable one: NOT_ENOUGH_REPLICAS
            return (E.CONCURRENT_TRANSACTIONS if code == E.NOT_ENOUGH_REPLICAS else code), None

        return int(retry(send)[0])

    def commit_offsets_v5(self, group: str, topic: str, offsets: dict[int, int]) -> list[int]:
        code, address = retry(lambda: find_group_coordinator(self.address, group))
        assert code == 0
        body = self.offset_commit_body(group, topic, offsets)

        def commit() -> tuple[int, list[int]]:
            resp = _wire.request(address, ApiKey.TXN_OFFSET_COMMIT, 5, body)
            codes = [p.error_code for t in resp.topics for p in t.partitions]
            return max(codes), codes

        return list(retry(commit)[1])

    def end_v5(self, commit: bool, epoch: int | None = None) -> tuple[int, int, int]:
        """EndTxn v5 -> (error, producer id, epoch); on success the producer moves to them."""

        def end() -> tuple[int, Any]:
            resp = _wire.request(
                self.coordinator,
                ApiKey.END_TXN,
                5,
                {
                    "transactional_id": self.tid,
                    "producer_id": self.producer_id,
                    "producer_epoch": self.epoch if epoch is None else epoch,
                    "committed": commit,
                },
            )
            return resp.error_code, resp

        code, resp = retry(end)
        if code == 0 and epoch is None:
            self.producer_id, self.epoch = resp.producer_id, resp.producer_epoch
        return code, resp.producer_id, resp.producer_epoch


def read_committed(address: str, topic: str, partition: int) -> tuple[list[bytes], int]:
    """Fetch v12 read_committed from 0: (values of the committed data records, LSO)."""
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 24,
        "isolation_level": 1,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 24,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    p = _wire.request(address, ApiKey.FETCH, 12, body).responses[0].partitions[0]
    assert p.error_code == 0
    aborted = {a.producer_id: a.first_offset for a in p.aborted_transactions or []}
    values: list[bytes] = []
    for pos, h in iter_batches(p.records or b""):
        if h.is_control or (h.producer_id in aborted and h.base_offset >= aborted[h.producer_id]):
            continue
        values += [r.value or b"" for r in decode_records(p.records, pos)]
    return values, int(p.last_stable_offset)
