"""Transactions: one whole transaction per version index (commit for even, abort for odd), and
the error paths of the transactional and idempotent producer.

Flow v uses AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn at min(v, their
newest version), so the flows together cover every version of those APIs. After EndTxn an
action waits until the coordinator has written its markers (DescribeTransactions says
CompleteCommit / CompleteAbort), so that what is compared next does not depend on timing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    DATA,
    batch,
    create,
    fetch_body,
    list_offsets_body,
    produce_body,
    step,
)
from compat.conformance.corpus.groups import clamp
from compat.conformance.script import Ctx, Do, Item, Scenario, Step

TXN_TIMEOUT_MS = 60000
DONE = {"CompleteCommit", "CompleteAbort", "Empty"}


def _pid(ctx: Ctx) -> tuple[int, int]:
    pid: tuple[int, int] = ctx.vars["pid"]
    return pid


def init_body(ctx: Ctx, txn: str | None, timeout_ms: int = TXN_TIMEOUT_MS) -> dict[str, Any]:
    return {
        "transactional_id": None if txn is None else ctx.name(txn),
        "transaction_timeout_ms": timeout_ms,
        "producer_id": -1,
        "producer_epoch": -1,
    }


def _keep_pid(ctx: Ctx, answer: Any) -> None:
    ctx.vars["pid"] = (answer.producer_id, answer.producer_epoch)


def add_partitions_body(
    ctx: Ctx, txn: str, topic: str, partitions: list[int], epoch_delta: int = 0
) -> dict[str, Any]:
    pid, epoch = _pid(ctx)
    topics = [{"name": ctx.name(topic), "partitions": partitions}]
    return {
        "transactions": [
            {
                "transactional_id": ctx.name(txn),
                "producer_id": pid,
                "producer_epoch": epoch + epoch_delta,
                "verify_only": False,
                "topics": topics,
            }
        ],
        "v3_and_below_transactional_id": ctx.name(txn),
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch + epoch_delta,
        "v3_and_below_topics": topics,
    }


def _txn_batch(ctx: Ctx, first: int, count: int, sequence: int) -> bytes:
    pid, epoch = _pid(ctx)
    return batch(
        count, first=first, producer_id=pid, epoch=epoch, sequence=sequence, transactional=True
    )


def _end(ctx: Ctx, txn: str, commit: bool) -> dict[str, Any]:
    pid, epoch = _pid(ctx)
    return {
        "transactional_id": ctx.name(txn),
        "producer_id": pid,
        "producer_epoch": epoch,
        "committed": commit,
    }


def _keep_end(ctx: Ctx, answer: Any) -> None:
    if answer.error_code == 0 and answer.get("producer_id", -1) >= 0:
        ctx.vars["pid"] = (answer.producer_id, answer.producer_epoch)


def describe(txn: str) -> Callable[[Ctx], dict[str, Any]]:
    return lambda ctx: {"transactional_ids": [ctx.name(txn)]}


def wait_complete(txn: str) -> Do:
    def run(ctx: Ctx) -> None:
        def done() -> bool:
            answer = ctx.call(API.DESCRIBE_TRANSACTIONS, 0, describe(txn)(ctx))
            return bool(answer.transaction_states[0].transaction_state in DONE)

        ctx.wait(f"transaction {txn} complete", done)

    return Do(f"wait until {txn} is complete", run)


def flow(v: int, versions: dict[str, list[int]]) -> Scenario:
    txn, topic, group, p = f"tx-v{v}", f"tx-v{v}-topic", f"tx-v{v}-group", f"txn-v{v}"
    add, offsets = clamp(v, versions["add_partitions"]), clamp(v, versions["add_offsets"])
    commit_v, end_v = clamp(v, versions["txn_offset_commit"]), clamp(v, versions["end"])
    commit = v % 2 == 0
    T: Callable[..., Step] = step
    items: list[Item] = [create(topic, 2, DATA)]
    items += [
        T(
            f"{p}.find_coordinator",
            API.FIND_COORDINATOR,
            3,
            lambda ctx: {"key": ctx.name(txn), "key_type": 1},
            "the transaction coordinator",
        ),
        T(
            f"{p}.init",
            API.INIT_PRODUCER_ID,
            4,
            lambda ctx: init_body(ctx, txn),
            "a transactional producer id",
            keep=_keep_pid,
        ),
        T(
            f"{p}.add_partitions",
            API.ADD_PARTITIONS_TO_TXN,
            add,
            lambda ctx: add_partitions_body(ctx, txn, topic, [0, 1]),
            "add both partitions",
        ),
        T(
            f"{p}.produce",
            API.PRODUCE,
            11,
            lambda ctx: produce_body(ctx, 11, topic, 0, _txn_batch(ctx, 0, 2, 0), txn=txn),
            "a transactional batch of 2 to partition 0",
        ),
        T(
            f"{p}.produce_p1",
            API.PRODUCE,
            11,
            lambda ctx: produce_body(ctx, 11, topic, 1, _txn_batch(ctx, 2, 1, 0), txn=txn),
            "a transactional batch of 1 to partition 1",
        ),
        T(
            f"{p}.add_offsets",
            API.ADD_OFFSETS_TO_TXN,
            offsets,
            lambda ctx: {
                "transactional_id": ctx.name(txn),
                "producer_id": _pid(ctx)[0],
                "producer_epoch": _pid(ctx)[1],
                "group_id": ctx.name(group),
            },
            "add the group's offsets",
        ),
        T(
            f"{p}.txn_offset_commit",
            API.TXN_OFFSET_COMMIT,
            commit_v,
            lambda ctx: _txn_commit(ctx, txn, group, topic),
            "commit offset 2 in the transaction",
        ),
        T(
            f"{p}.describe_ongoing",
            API.DESCRIBE_TRANSACTIONS,
            0,
            describe(txn),
            "the ongoing transaction",
        ),
        T(
            f"{p}.list_offsets_lso",
            API.LIST_OFFSETS,
            9,
            lambda ctx: list_offsets_body(ctx, topic, 0, -1, isolation=1),
            "latest offset, read_committed (the LSO) while open",
        ),
        T(
            f"{p}.end",
            API.END_TXN,
            end_v,
            lambda ctx: _end(ctx, txn, commit),
            "COMMIT" if commit else "ABORT",
            keep=_keep_end,
        ),
        wait_complete(txn),
        T(
            f"{p}.describe_complete",
            API.DESCRIBE_TRANSACTIONS,
            0,
            describe(txn),
            "the completed transaction",
        ),
        T(
            f"{p}.fetch_committed",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 0, isolation=1),
            "read_committed from 0 (markers, aborted list)",
        ),
        T(
            f"{p}.fetch_uncommitted",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 0),
            "read_uncommitted from 0",
        ),
        T(
            f"{p}.offset_fetch",
            API.OFFSET_FETCH,
            8,
            lambda ctx: {
                "groups": [
                    {
                        "group_id": ctx.name(group),
                        "member_id": None,
                        "member_epoch": -1,
                        "topics": None,
                    }
                ],
                "require_stable": True,
            },
            "the group's offsets after the transaction",
        ),
        T(
            f"{p}.describe_producers",
            API.DESCRIBE_PRODUCERS,
            0,
            lambda ctx: {"topics": [{"name": ctx.name(topic), "partition_indexes": [0]}]},
            "the producer's state on partition 0",
        ),
    ]
    return Scenario(f"transaction flow v{v}", tuple(items))


def _txn_commit(ctx: Ctx, txn: str, group: str, topic: str, partition: int = 0) -> dict[str, Any]:
    pid, epoch = _pid(ctx)
    return {
        "transactional_id": ctx.name(txn),
        "group_id": ctx.name(group),
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": ctx.name(topic),
                "partitions": [
                    {
                        "partition_index": partition,
                        "committed_offset": 2,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    }


def errors() -> Scenario:
    """Error paths of transactions, at versions both sides serve."""
    txn, topic, group, p = "tx-errors", "tx-errors-topic", "tx-errors-group", "txn-errors"
    T: Callable[..., Step] = step
    items: list[Item] = [create(topic, 2, DATA)]
    items += [
        T(
            f"{p}.find_coordinator",
            API.FIND_COORDINATOR,
            3,
            lambda ctx: {"key": ctx.name(txn), "key_type": 1},
            "the transaction coordinator",
        ),
        T(
            f"{p}.init_timeout_too_long",
            API.INIT_PRODUCER_ID,
            4,
            lambda ctx: init_body(ctx, txn, 10_000_000),
            "a transaction timeout above transaction.max.timeout.ms",
        ),
        T(
            f"{p}.describe_unknown",
            API.DESCRIBE_TRANSACTIONS,
            0,
            describe("tx-never"),
            "a transactional id never used",
        ),
        T(
            f"{p}.end_unknown",
            API.END_TXN,
            4,
            lambda ctx: {
                "transactional_id": ctx.name("tx-never"),
                "producer_id": 1234567,
                "producer_epoch": 0,
                "committed": True,
            },
            "EndTxn for a transactional id never used",
        ),
        T(
            f"{p}.init",
            API.INIT_PRODUCER_ID,
            4,
            lambda ctx: init_body(ctx, txn),
            "a transactional producer id",
            keep=_keep_pid,
        ),
        T(
            f"{p}.end_without_txn",
            API.END_TXN,
            4,
            lambda ctx: _end(ctx, txn, True),
            "COMMIT with no transaction open",
        ),
        T(
            f"{p}.produce_not_added",
            API.PRODUCE,
            11,
            lambda ctx: produce_body(ctx, 11, topic, 0, _txn_batch(ctx, 0, 1, 0), txn=txn),
            "a transactional batch to a partition not added",
        ),
        T(
            f"{p}.produce_not_added_v10",
            API.PRODUCE,
            10,
            lambda ctx: produce_body(ctx, 10, topic, 1, _txn_batch(ctx, 0, 1, 0), txn=txn),
            "the same at Produce v10 (to partition 1)",
        ),
        T(
            f"{p}.txn_offset_commit_not_added",
            API.TXN_OFFSET_COMMIT,
            3,
            lambda ctx: _txn_commit(ctx, txn, group, topic),
            "TxnOffsetCommit before AddOffsetsToTxn",
        ),
        T(
            f"{p}.add_partitions_future_epoch",
            API.ADD_PARTITIONS_TO_TXN,
            3,
            lambda ctx: add_partitions_body(ctx, txn, topic, [0], epoch_delta=1),
            "a producer epoch above the current one",
        ),
        T(
            f"{p}.add_partitions_unknown_pid",
            API.ADD_PARTITIONS_TO_TXN,
            3,
            lambda ctx: {
                **add_partitions_body(ctx, txn, topic, [0]),
                "v3_and_below_producer_id": 1234567,
            },
            "a producer id the transactional id does not have",
        ),
        T(
            f"{p}.add_partitions_unknown_partition",
            API.ADD_PARTITIONS_TO_TXN,
            3,
            lambda ctx: add_partitions_body(ctx, txn, topic, [0, 9]),
            "a partition that does not exist, beside one that does",
        ),
        T(
            f"{p}.add_partitions",
            API.ADD_PARTITIONS_TO_TXN,
            3,
            lambda ctx: add_partitions_body(ctx, txn, topic, [0]),
            "add partition 0",
        ),
        T(
            f"{p}.produce_bad_sequence",
            API.PRODUCE,
            11,
            lambda ctx: produce_body(ctx, 11, topic, 0, _txn_batch(ctx, 0, 1, 5), txn=txn),
            "a first transactional batch with sequence 5",
        ),
        T(
            f"{p}.init_again",
            API.INIT_PRODUCER_ID,
            4,
            lambda ctx: init_body(ctx, txn),
            "InitProducerId again while a transaction is open (it is aborted)",
        ),
        wait_complete(txn),
        T(
            f"{p}.add_partitions_fenced",
            API.ADD_PARTITIONS_TO_TXN,
            3,
            lambda ctx: add_partitions_body(ctx, txn, topic, [1]),
            "the old epoch after the bump",
        ),
        T(
            f"{p}.end_fenced",
            API.END_TXN,
            4,
            lambda ctx: _end(ctx, txn, True),
            "EndTxn with the old epoch",
        ),
        T(
            f"{p}.produce_fenced",
            API.PRODUCE,
            11,
            lambda ctx: produce_body(ctx, 11, topic, 1, _txn_batch(ctx, 0, 1, 0), txn=txn),
            "a transactional batch with the old epoch",
        ),
        T(
            f"{p}.describe_after_fencing",
            API.DESCRIBE_TRANSACTIONS,
            0,
            describe(txn),
            "the transaction after the fencing",
        ),
    ]
    return Scenario("transaction errors", tuple(items))


def idempotence() -> Scenario:
    """The idempotent producer's sequence checks."""
    topic, p = "idem-topic", "idempotent"
    T: Callable[..., Step] = step

    def produce(
        first: int, count: int, seq: int, epoch_delta: int = 0
    ) -> Callable[[Ctx], dict[str, Any]]:
        def body(ctx: Ctx) -> dict[str, Any]:
            pid, epoch = _pid(ctx)
            data = batch(
                count, first=first, producer_id=pid, epoch=epoch + epoch_delta, sequence=seq
            )
            return produce_body(ctx, 11, topic, 0, data)

        return body

    items: list[Item] = [create(topic, 1, DATA)]
    items += [
        T(
            f"{p}.init",
            API.INIT_PRODUCER_ID,
            4,
            lambda ctx: init_body(ctx, None),
            "an idempotent producer id",
            keep=_keep_pid,
        ),
        T(
            f"{p}.first_gap",
            API.PRODUCE,
            11,
            produce(0, 1, 3),
            "a new producer's first batch with sequence 3",
        ),
        T(f"{p}.seq0", API.PRODUCE, 11, produce(0, 2, 0), "sequence 0, 2 records"),
        T(f"{p}.duplicate", API.PRODUCE, 11, produce(0, 2, 0), "the same batch again (a retry)"),
        T(f"{p}.seq2", API.PRODUCE, 11, produce(2, 1, 2), "sequence 2"),
        T(f"{p}.gap", API.PRODUCE, 11, produce(3, 1, 5), "sequence 5 after 2 (a gap)"),
        T(
            f"{p}.old_duplicate",
            API.PRODUCE,
            11,
            produce(0, 2, 0),
            "sequence 0 again, after a newer batch",
        ),
        T(
            f"{p}.old_epoch",
            API.PRODUCE,
            11,
            produce(3, 1, 0, epoch_delta=-1),
            "epoch below the producer's",
        ),
        T(
            f"{p}.new_epoch",
            API.PRODUCE,
            11,
            produce(3, 1, 0, epoch_delta=1),
            "epoch above the producer's, sequence 0",
        ),
        T(
            f"{p}.new_epoch_bad_seq",
            API.PRODUCE,
            11,
            produce(4, 1, 7, epoch_delta=2),
            "epoch above again, sequence 7",
        ),
        T(
            f"{p}.unknown_producer",
            API.PRODUCE,
            11,
            lambda ctx: produce_body(
                ctx, 11, topic, 0, batch(1, producer_id=987654321, epoch=0, sequence=4)
            ),
            "a producer id never allocated, sequence 4",
        ),
        T(
            f"{p}.describe_producers",
            API.DESCRIBE_PRODUCERS,
            0,
            lambda ctx: {"topics": [{"name": ctx.name(topic), "partition_indexes": [0]}]},
            "the producers of the partition",
        ),
        T(f"{p}.fetch", API.FETCH, 12, lambda ctx: fetch_body(ctx, topic, 0, 0), "what was stored"),
    ]
    return Scenario("idempotent producer", tuple(items))
