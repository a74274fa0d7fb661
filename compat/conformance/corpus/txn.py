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
from compat.conformance.script import Ctx, Do, Item, Scenario

Body = Callable[[Ctx], dict[str, Any]]
TXN_TIMEOUT_MS = 60000
DONE = {"CompleteCommit", "CompleteAbort", "Empty"}
APT, AOT, TOC, END = (
    API.ADD_PARTITIONS_TO_TXN,
    API.ADD_OFFSETS_TO_TXN,
    API.TXN_OFFSET_COMMIT,
    API.END_TXN,
)
IPI, DT, PR = API.INIT_PRODUCER_ID, API.DESCRIBE_TRANSACTIONS, API.PRODUCE


def _pid(ctx: Ctx) -> tuple[int, int]:
    pid: tuple[int, int] = ctx.vars["pid"]
    return pid


def init(txn: str | None, timeout_ms: int = TXN_TIMEOUT_MS) -> Body:
    return lambda ctx: {
        "transactional_id": None if txn is None else ctx.name(txn),
        "transaction_timeout_ms": timeout_ms,
        "producer_id": -1,
        "producer_epoch": -1,
    }


def _keep_pid(ctx: Ctx, answer: Any) -> None:
    ctx.vars["pid"] = (answer.producer_id, answer.producer_epoch)


def add_partitions(
    txn: str, topic: str, partitions: list[int], epoch_delta: int = 0, **over: Any
) -> Body:
    """AddPartitionsToTxn in both layouts (v3 and below; v4+ batched)."""

    def body(ctx: Ctx) -> dict[str, Any]:
        pid, epoch = _pid(ctx)
        topics = [{"name": ctx.name(topic), "partitions": partitions}]
        one = {
            "transactional_id": ctx.name(txn),
            "producer_id": pid,
            "producer_epoch": epoch + epoch_delta,
            "verify_only": False,
            "topics": topics,
        }
        return {
            "transactions": [one],
            "v3_and_below_transactional_id": ctx.name(txn),
            "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch + epoch_delta,
            "v3_and_below_topics": topics,
            **over,
        }

    return body


def txn_produce(
    txn: str, topic: str, partition: int, first: int, count: int, sequence: int, version: int = 11
) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        pid, epoch = _pid(ctx)
        data = batch(
            count, first=first, producer_id=pid, epoch=epoch, sequence=sequence, transactional=True
        )
        return produce_body(ctx, version, topic, partition, data, txn=txn)

    return body


def end(txn: str, commit: bool) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        pid, epoch = _pid(ctx)
        return {
            "transactional_id": ctx.name(txn),
            "producer_id": pid,
            "producer_epoch": epoch,
            "committed": commit,
        }

    return body


def _keep_end(ctx: Ctx, answer: Any) -> None:
    if answer.error_code == 0 and answer.get("producer_id", -1) >= 0:
        ctx.vars["pid"] = (answer.producer_id, answer.producer_epoch)


def describe(txn: str) -> Body:
    return lambda ctx: {"transactional_ids": [ctx.name(txn)]}


def wait_complete(txn: str) -> Do:
    def run(ctx: Ctx) -> None:
        def done() -> bool:
            answer = ctx.call(DT, 0, describe(txn)(ctx))
            return bool(answer.transaction_states[0].transaction_state in DONE)

        ctx.wait(f"transaction {txn} complete", done)

    return Do(f"wait until {txn} is complete", run)


def txn_commit(txn: str, group: str, topic: str) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        pid, epoch = _pid(ctx)
        partition = {
            "partition_index": 0,
            "committed_offset": 2,
            "committed_leader_epoch": -1,
            "committed_metadata": "",
        }
        return {
            "transactional_id": ctx.name(txn),
            "group_id": ctx.name(group),
            "producer_id": pid,
            "producer_epoch": epoch,
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [{"name": ctx.name(topic), "partitions": [partition]}],
        }

    return body


def add_offsets(txn: str, group: str) -> Body:
    def body(ctx: Ctx) -> dict[str, Any]:
        pid, epoch = _pid(ctx)
        return {
            "transactional_id": ctx.name(txn),
            "producer_id": pid,
            "producer_epoch": epoch,
            "group_id": ctx.name(group),
        }

    return body


def _open(v: int, versions: dict[str, list[int]]) -> list[Item]:
    """Flow v up to its EndTxn: coordinator, producer id, partitions, records, offsets."""
    txn, topic, group, p = f"tx-v{v}", f"tx-v{v}-topic", f"tx-v{v}-group", f"txn-v{v}"
    add, offsets = clamp(v, versions["add_partitions"]), clamp(v, versions["add_offsets"])
    commit_v = clamp(v, versions["txn_offset_commit"])
    return [
        create(topic, 2, DATA),
        step(
            f"{p}.find_coordinator",
            API.FIND_COORDINATOR,
            3,
            lambda ctx: {"key": ctx.name(txn), "key_type": 1},
            "the transaction coordinator",
        ),
        step(f"{p}.init", IPI, 4, init(txn), "a transactional producer id", keep=_keep_pid),
        step(
            f"{p}.add_partitions",
            APT,
            add,
            add_partitions(txn, topic, [0, 1]),
            "add both partitions",
        ),
        step(
            f"{p}.produce",
            PR,
            11,
            txn_produce(txn, topic, 0, 0, 2, 0),
            "a transactional batch of 2 to partition 0",
        ),
        step(
            f"{p}.produce_p1",
            PR,
            11,
            txn_produce(txn, topic, 1, 2, 1, 0),
            "a transactional batch of 1 to partition 1",
        ),
        step(f"{p}.add_offsets", AOT, offsets, add_offsets(txn, group), "add the group's offsets"),
        step(
            f"{p}.txn_offset_commit",
            TOC,
            commit_v,
            txn_commit(txn, group, topic),
            "commit offset 2 in the transaction",
        ),
        step(f"{p}.describe_ongoing", DT, 0, describe(txn), "the ongoing transaction"),
        step(
            f"{p}.list_offsets_lso",
            API.LIST_OFFSETS,
            9,
            lambda ctx: list_offsets_body(ctx, topic, 0, -1, isolation=1),
            "latest offset, read_committed (the LSO) while open",
        ),
    ]


def _close(v: int, versions: dict[str, list[int]]) -> list[Item]:
    """Flow v from its EndTxn: the outcome as the coordinator, a consumer and a group see it."""
    txn, topic, group, p = f"tx-v{v}", f"tx-v{v}-topic", f"tx-v{v}-group", f"txn-v{v}"
    commit = v % 2 == 0

    def offsets_of_group(ctx: Ctx) -> dict[str, Any]:
        asked = {"group_id": ctx.name(group), "member_id": None, "member_epoch": -1, "topics": None}
        return {"groups": [asked], "require_stable": True}

    return [
        step(
            f"{p}.end",
            END,
            clamp(v, versions["end"]),
            end(txn, commit),
            "COMMIT" if commit else "ABORT",
            keep=_keep_end,
        ),
        wait_complete(txn),
        step(f"{p}.describe_complete", DT, 0, describe(txn), "the completed transaction"),
        step(
            f"{p}.fetch_committed",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 0, isolation=1),
            "read_committed from 0 (markers, aborted list)",
        ),
        step(
            f"{p}.fetch_uncommitted",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 0),
            "read_uncommitted from 0",
        ),
        step(
            f"{p}.offset_fetch",
            API.OFFSET_FETCH,
            8,
            offsets_of_group,
            "the group's offsets after the transaction",
        ),
        step(
            f"{p}.describe_producers",
            API.DESCRIBE_PRODUCERS,
            0,
            lambda ctx: {"topics": [{"name": ctx.name(topic), "partition_indexes": [0]}]},
            "the producer's state on partition 0",
        ),
    ]


def flow(v: int, versions: dict[str, list[int]]) -> Scenario:
    return Scenario(f"transaction flow v{v}", (*_open(v, versions), *_close(v, versions)))


TXN, TOPIC, GROUP, NEVER = "tx-errors", "tx-errors-topic", "tx-errors-group", "tx-never"

TXN_ERRORS: tuple[Item, ...] = (
    step(
        "txn-errors.find_coordinator",
        API.FIND_COORDINATOR,
        3,
        lambda ctx: {"key": ctx.name(TXN), "key_type": 1},
        "the transaction coordinator",
    ),
    step(
        "txn-errors.init_timeout_too_long",
        IPI,
        4,
        init(TXN, 10_000_000),
        "a transaction timeout above transaction.max.timeout.ms",
    ),
    step("txn-errors.describe_unknown", DT, 0, describe(NEVER), "a transactional id never used"),
    step(
        "txn-errors.end_unknown",
        END,
        4,
        lambda ctx: {
            "transactional_id": ctx.name(NEVER),
            "producer_id": 1234567,
            "producer_epoch": 0,
            "committed": True,
        },
        "EndTxn for a transactional id never used",
    ),
    step("txn-errors.init", IPI, 4, init(TXN), "a transactional producer id", keep=_keep_pid),
    step("txn-errors.end_without_txn", END, 4, end(TXN, True), "COMMIT with no transaction open"),
    step(
        "txn-errors.produce_not_added",
        PR,
        11,
        txn_produce(TXN, TOPIC, 0, 0, 1, 0),
        "a transactional batch to a partition not added",
    ),
    step(
        "txn-errors.produce_not_added_v10",
        PR,
        10,
        txn_produce(TXN, TOPIC, 1, 0, 1, 0, version=10),
        "the same at Produce v10 (to partition 1)",
    ),
    step(
        "txn-errors.txn_offset_commit_not_added",
        TOC,
        3,
        txn_commit(TXN, GROUP, TOPIC),
        "TxnOffsetCommit before AddOffsetsToTxn",
    ),
    step(
        "txn-errors.add_partitions_future_epoch",
        APT,
        3,
        add_partitions(TXN, TOPIC, [0], epoch_delta=1),
        "a producer epoch above the current one",
    ),
    step(
        "txn-errors.add_partitions_unknown_pid",
        APT,
        3,
        add_partitions(TXN, TOPIC, [0], v3_and_below_producer_id=1234567),
        "a producer id the transactional id does not have",
    ),
    step(
        "txn-errors.add_partitions_unknown_partition",
        APT,
        3,
        add_partitions(TXN, TOPIC, [0, 9]),
        "a partition that does not exist, beside one that does",
    ),
    step("txn-errors.add_partitions", APT, 3, add_partitions(TXN, TOPIC, [0]), "add partition 0"),
    step(
        "txn-errors.produce_bad_sequence",
        PR,
        11,
        txn_produce(TXN, TOPIC, 0, 0, 1, 5),
        "a first transactional batch with sequence 5",
    ),
    step(
        "txn-errors.init_again",
        IPI,
        4,
        init(TXN),
        "InitProducerId again while a transaction is open (it is aborted)",
    ),
    wait_complete(TXN),
    step(
        "txn-errors.add_partitions_fenced",
        APT,
        3,
        add_partitions(TXN, TOPIC, [1]),
        "the old epoch after the bump",
    ),
    step("txn-errors.end_fenced", END, 4, end(TXN, True), "EndTxn with the old epoch"),
    step(
        "txn-errors.produce_fenced",
        PR,
        11,
        txn_produce(TXN, TOPIC, 1, 0, 1, 0),
        "a transactional batch with the old epoch",
    ),
    step(
        "txn-errors.describe_after_fencing",
        DT,
        0,
        describe(TXN),
        "the transaction after the fencing",
    ),
)


def errors() -> Scenario:
    """Error paths of transactions, at versions both sides serve."""
    return Scenario("transaction errors", (create(TOPIC, 2, DATA), *TXN_ERRORS))


IDEM = "idem-topic"


def idem(first: int, count: int, seq: int, epoch_delta: int = 0) -> Body:
    """Produce v11 of an idempotent batch of the scenario's producer."""

    def body(ctx: Ctx) -> dict[str, Any]:
        pid, epoch = _pid(ctx)
        data = batch(count, first=first, producer_id=pid, epoch=epoch + epoch_delta, sequence=seq)
        return produce_body(ctx, 11, IDEM, 0, data)

    return body


IDEMPOTENCE: tuple[Item, ...] = (
    step("idempotent.init", IPI, 4, init(None), "an idempotent producer id", keep=_keep_pid),
    step(
        "idempotent.first_gap",
        PR,
        11,
        idem(0, 1, 3),
        "a new producer's first batch with sequence 3",
    ),
    step("idempotent.seq0", PR, 11, idem(0, 2, 0), "sequence 0, 2 records"),
    step("idempotent.duplicate", PR, 11, idem(0, 2, 0), "the same batch again (a retry)"),
    step("idempotent.seq2", PR, 11, idem(2, 1, 2), "sequence 2"),
    step("idempotent.gap", PR, 11, idem(3, 1, 5), "sequence 5 after 2 (a gap)"),
    step(
        "idempotent.old_duplicate", PR, 11, idem(0, 2, 0), "sequence 0 again, after a newer batch"
    ),
    step(
        "idempotent.old_epoch", PR, 11, idem(3, 1, 0, epoch_delta=-1), "epoch below the producer's"
    ),
    step(
        "idempotent.new_epoch",
        PR,
        11,
        idem(3, 1, 0, epoch_delta=1),
        "epoch above the producer's, sequence 0",
    ),
    step(
        "idempotent.new_epoch_bad_seq",
        PR,
        11,
        idem(4, 1, 7, epoch_delta=2),
        "epoch above again, sequence 7",
    ),
    step(
        "idempotent.unknown_producer",
        PR,
        11,
        lambda ctx: produce_body(
            ctx, 11, IDEM, 0, batch(1, producer_id=987654321, epoch=0, sequence=4)
        ),
        "a producer id never allocated, sequence 4",
    ),
    step(
        "idempotent.describe_producers",
        API.DESCRIBE_PRODUCERS,
        0,
        lambda ctx: {"topics": [{"name": ctx.name(IDEM), "partition_indexes": [0]}]},
        "the producers of the partition",
    ),
    step(
        "idempotent.fetch",
        API.FETCH,
        12,
        lambda ctx: fetch_body(ctx, IDEM, 0, 0),
        "what was stored",
    ),
)


def idempotence() -> Scenario:
    """The idempotent producer's sequence checks."""
    return Scenario("idempotent producer", (create(IDEM, 1, DATA), *IDEMPOTENCE))
