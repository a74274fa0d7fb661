"""The partition and group side of transactions through the codec: transactional Produce with
KIP-890 verification, WriteTxnMarkers (incl. fencing), TxnOffsetCommit with OffsetFetch
require_stable, replay of pending offsets at load, DescribeProducers."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
import trio
from groupcoordkit import running_group_coordinator, trio_ms

import wirebroker.handlers.describe_producers
import wirebroker.handlers.join_group
import wirebroker.handlers.offset_fetch
import wirebroker.handlers.produce
import wirebroker.handlers.txn_offset_commit
import wirebroker.handlers.write_txn_markers  # noqa: F401  (registers the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import build_batch
from tests.unit.local_metadata import LocalClusterView, coordinate_every_partition
from wirebroker.group.runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime
from wirebroker.handlers.context import Services
from wirebroker.replication.txn_verify import TxnOperation, TxnVerifier, producer_answer
from wirebroker.txn.partitioning import partition_for

START_MS = 1_700_000_000_000
PID, EPOCH = 4000, 3


class FakeVerifier(TxnVerifier):
    """The real cache; the coordinator's answer scripted (`answer`), requests recorded."""

    def __init__(self, services: Services, answer: E = E.NONE) -> None:
        super().__init__(services.cluster, partition_for, node_id=0)
        self.answer = answer
        self.asked: list[tuple[str, int, int, list[tuple[str, int]]]] = []
        self.adds: list[bool] = []

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable,
        *,
        operation: TxnOperation = TxnOperation.DEFAULT_ERROR,
    ) -> dict[tuple[str, int], E]:
        tps = sorted(partitions)
        self.asked.append((transactional_id, producer_id, producer_epoch, tps))
        self.adds.append(operation.adds)
        if self.answer is E.NONE:
            for tp in tps:
                self._verified[(producer_id, *tp)] = producer_epoch
        return dict.fromkeys(tps, self.answer)


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {"offsets.topic.num.partitions": "4"}


@pytest.fixture
async def coordinator(
    services: Services, nursery: trio.Nursery
) -> AsyncIterator[GroupCoordinatorRuntime]:
    services.admin.create_topic("t", 2, now_ms=START_MS)
    async with running_group_coordinator(services, nursery) as runtime:
        yield runtime


def txn_batch(n: int = 2, seq: int = 0, pid: int = PID, epoch: int = EPOCH) -> bytes:
    return build_batch(
        [(b"k%d" % i, b"v%d" % i) for i in range(n)],
        base_timestamp=START_MS,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=True,
    )


def produce_body(batches: dict[int, bytes], tid: str | None = "tx") -> dict[str, Any]:
    return {
        "transactional_id": tid,
        "acks": -1,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": "t",
                "partition_data": [{"index": i, "records": r} for i, r in batches.items()],
            }
        ],
    }


def produce_codes(resp: Any) -> dict[int, int]:
    return {p.index: p.error_code for t in resp.responses for p in t.partition_responses}


def produce_messages(resp: Any) -> dict[int, str | None]:
    return {p.index: p.error_message for t in resp.responses for p in t.partition_responses}


def marker_body(
    topic: str, partitions: list[int], *, commit: bool, coordinator_epoch: int = 0, **kw: int
) -> dict[str, Any]:
    return {
        "markers": [
            {
                "producer_id": kw.get("pid", PID),
                "producer_epoch": kw.get("epoch", EPOCH),
                "transaction_result": commit,
                "coordinator_epoch": coordinator_epoch,
                "topics": [{"name": topic, "partition_indexes": partitions}],
            }
        ]
    }


def marker_codes(resp: Any) -> dict[int, int]:
    return {
        p.partition_index: p.error_code
        for m in resp.markers
        for t in m.topics
        for p in t.partitions
    }


# -- transactional Produce -------------------------------------------------------------------


async def test_transactional_produce_verified_once_then_lso_held_until_commit(
    call, services: Services
) -> None:
    services.admin.create_topic("t", 2, now_ms=START_MS)
    verifier = services.txn_verifier = FakeVerifier(services)
    resp = await call(ApiKey.PRODUCE, 9, produce_body({0: txn_batch(), 1: txn_batch()}))
    assert produce_codes(resp) == {0: 0, 1: 0}
    assert verifier.asked == [("tx", PID, EPOCH, [("t", 0), ("t", 1)])]
    part = services.replicas.partition("t", 0)
    assert part is not None
    assert part.log_end_offset == 2 and part.last_stable_offset == 0
    # the next batch of the same transaction is not verified again (the log has it open)
    verifier._verified.clear()
    resp = await call(ApiKey.PRODUCE, 9, produce_body({0: txn_batch(seq=2)}))
    assert produce_codes(resp) == {0: 0}
    assert len(verifier.asked) == 1
    resp = await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body("t", [0, 1], commit=True))
    assert marker_codes(resp) == {0: 0, 1: 0}
    assert part.last_stable_offset == part.log_end_offset == 5


async def test_transactional_produce_not_in_transaction_is_invalid_txn_state(
    call, services: Services
) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS)
    services.txn_verifier = FakeVerifier(services, answer=E.INVALID_TXN_STATE)
    resp = await call(ApiKey.PRODUCE, 9, produce_body({0: txn_batch()}))
    assert produce_codes(resp) == {0: E.INVALID_TXN_STATE}
    assert produce_messages(resp) == {0: "Partition was not added to the transaction"}
    part = services.replicas.partition("t", 0)
    assert part is not None and part.log_end_offset == 0


async def test_no_transaction_coordinator_answers_retriable(call, services: Services) -> None:
    """The real verifier: no `__transaction_state` yet -> NOT_ENOUGH_REPLICAS (retriable),
    with Kafka's text naming the coordinator's unavailability."""
    services.admin.create_topic("t", 1, now_ms=START_MS)
    services.txn_verifier = TxnVerifier(services.cluster, partition_for, node_id=0)
    resp = await call(ApiKey.PRODUCE, 9, produce_body({0: txn_batch()}))
    assert produce_codes(resp) == {0: E.NOT_ENOUGH_REPLICAS}
    assert produce_messages(resp) == {
        0: "Unable to verify the partition has been added to the transaction. Underlying "
        "error: COORDINATOR_NOT_AVAILABLE"
    }


async def test_verification_disabled_appends_at_once(make_services, call_with) -> None:
    services = make_services(**{"transaction.partition.verification.enable": "false"})
    services.admin.create_topic("t", 1, now_ms=START_MS)
    services.txn_verifier = TxnVerifier(
        services.cluster,
        partition_for,
        node_id=0,
        enabled=services.config.get_bool("transaction.partition.verification.enable"),
    )
    resp = await call_with(services, ApiKey.PRODUCE, 9, produce_body({0: txn_batch()}))
    assert produce_codes(resp) == {0: 0}


def test_verifier_finds_the_coordinator_by_java_hash(services: Services) -> None:
    services.admin.create_topic("__transaction_state", 5, now_ms=START_MS)
    assert isinstance(services.cluster, LocalClusterView)
    verifier = TxnVerifier(services.cluster, partition_for, node_id=0)
    assert verifier.coordinator("my-txn") == ("127.0.0.1", 9092)
    assert partition_for("my-txn", 5) == abs(_java_hash("my-txn")) % 5


def _java_hash(s: str) -> int:
    h = 0
    for ch in s:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


# -- WriteTxnMarkers -------------------------------------------------------------------------


async def test_abort_marker_and_fencing_of_an_old_coordinator(call, services: Services) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS)
    await call(ApiKey.PRODUCE, 9, produce_body({0: txn_batch()}))
    resp = await call(
        ApiKey.WRITE_TXN_MARKERS, 1, marker_body("t", [0], commit=False, coordinator_epoch=5)
    )
    assert marker_codes(resp) == {0: 0}
    part = services.replicas.partition("t", 0)
    assert part is not None
    assert [(a.producer_id, a.first_offset) for a in part.log.aborted_transactions(0, 10)] == [
        (PID, 0)
    ]
    # a zombie coordinator (older coordinator epoch) is fenced; nothing is written
    end = part.log_end_offset
    resp = await call(
        ApiKey.WRITE_TXN_MARKERS, 2, marker_body("t", [0], commit=True, coordinator_epoch=4)
    )
    assert marker_codes(resp) == {0: E.TRANSACTION_COORDINATOR_FENCED}
    assert part.log_end_offset == end
    # an older producer epoch
    resp = await call(
        ApiKey.WRITE_TXN_MARKERS,
        1,
        marker_body("t", [0], commit=True, coordinator_epoch=5, epoch=EPOCH - 1),
    )
    assert marker_codes(resp) == {0: E.INVALID_PRODUCER_EPOCH}


async def test_marker_for_unknown_partition_and_non_leader(call, services: Services) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS)
    resp = await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body("t", [0, 7], commit=True))
    assert marker_codes(resp) == {0: 0, 7: E.UNKNOWN_TOPIC_OR_PARTITION}
    resp = await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body("nope", [0], commit=True))
    assert marker_codes(resp) == {0: E.UNKNOWN_TOPIC_OR_PARTITION}
    part = services.replicas.partition("t", 0)
    assert part is not None
    part.become_follower(
        leader_id=1,
        leader_epoch=part.leader_epoch + 1,
        partition_epoch=99,
        isr=[1, 0],
        replicas=[1, 0],
    )
    resp = await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body("t", [0], commit=True))
    assert marker_codes(resp) == {0: E.NOT_LEADER_OR_FOLLOWER}


async def test_marker_clears_the_verification_cache(call, services: Services) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS)
    verifier = services.txn_verifier = FakeVerifier(services)
    await call(ApiKey.PRODUCE, 9, produce_body({0: txn_batch()}))
    assert verifier.verified_count() == 1
    await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body("t", [0], commit=True))
    assert verifier.verified_count() == 0
    # the next transaction of the producer is verified again
    await call(ApiKey.PRODUCE, 9, produce_body({0: txn_batch(seq=2)}))
    assert len(verifier.asked) == 2


# -- TxnOffsetCommit, OffsetFetch require_stable, markers on __consumer_offsets ----------------


def txn_commit_body(offset: int, **kw: Any) -> dict[str, Any]:
    return {
        "transactional_id": "tx",
        "group_id": kw.get("group", "g"),
        "producer_id": kw.get("pid", PID),
        "producer_epoch": EPOCH,
        "generation_id_or_member_epoch": kw.get("generation", -1),
        "member_id": kw.get("member", ""),
        "group_instance_id": None,
        "topics": [
            {
                "name": kw.get("topic", "t"),
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "m",
                    }
                ],
            }
        ],
    }


def txn_commit_codes(resp: Any) -> list[int]:
    return [p.error_code for t in resp.topics for p in t.partitions]


async def fetch(call, *, stable: bool) -> tuple[int, int]:
    resp = await call(
        ApiKey.OFFSET_FETCH,
        7,
        {
            "group_id": "g",
            "topics": [{"name": "t", "partition_indexes": [0]}],
            "require_stable": stable,
        },
    )
    [p] = resp.topics[0].partitions
    return p.committed_offset, p.error_code


async def test_txn_offsets_visible_after_commit_only(call, services, coordinator) -> None:
    for version in range(5):
        resp = await call(ApiKey.TXN_OFFSET_COMMIT, version, txn_commit_body(10 + version))
        assert txn_commit_codes(resp) == [0], version
    assert await fetch(call, stable=False) == (-1, 0)
    assert await fetch(call, stable=True) == (-1, E.UNSTABLE_OFFSET_COMMIT)
    offsets_partition = coordinator.partition_for("g")
    other = (offsets_partition + 1) % 4
    # a marker on another __consumer_offsets partition changes nothing
    await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body(OFFSETS_TOPIC, [other], commit=True))
    assert await fetch(call, stable=True) == (-1, E.UNSTABLE_OFFSET_COMMIT)
    resp = await call(
        ApiKey.WRITE_TXN_MARKERS, 1, marker_body(OFFSETS_TOPIC, [offsets_partition], commit=True)
    )
    assert marker_codes(resp) == {offsets_partition: 0}
    assert await fetch(call, stable=True) == (14, 0)


async def test_txn_offsets_dropped_on_abort(call, services, coordinator) -> None:
    await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(7))
    p = coordinator.partition_for("g")
    await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body(OFFSETS_TOPIC, [p], commit=False))
    assert await fetch(call, stable=True) == (-1, 0)


async def test_txn_offset_commit_errors(call, services, coordinator) -> None:
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(1, topic="nope"))
    assert txn_commit_codes(resp) == [E.UNKNOWN_TOPIC_OR_PARTITION]
    # KIP-447: an unknown group with a generation; an unknown member of a known group
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(1, generation=2, member="m"))
    assert txn_commit_codes(resp) == [E.ILLEGAL_GENERATION]
    await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(1))  # makes the simple group
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(1, generation=1, member="m"))
    assert txn_commit_codes(resp) == [E.UNKNOWN_MEMBER_ID]
    # verification: the __consumer_offsets partition is not in the transaction
    services.txn_verifier = FakeVerifier(services, answer=E.INVALID_TXN_STATE)
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(2, pid=PID + 1))
    assert txn_commit_codes(resp) == [E.INVALID_TXN_STATE]
    services.txn_verifier = FakeVerifier(services, answer=E.NETWORK_EXCEPTION)
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(2, pid=PID + 1))
    assert txn_commit_codes(resp) == [E.COORDINATOR_NOT_AVAILABLE]


async def test_txn_offset_commit_v6_by_topic_id(call, services, coordinator) -> None:
    """KIP-1319 (compared with Apache Kafka in tests/oracle/test_new_versions.py): topics by
    id, errors found before the coordinator first, GROUP_ID_NOT_FOUND from v6."""
    topic_id, unknown = services.cluster.topic("t").topic_id, uuid.uuid4()

    def body(topics: list[tuple[uuid.UUID, list[int]]], **kw: Any) -> dict[str, Any]:
        base = txn_commit_body(4, **kw)
        partition = base["topics"][0]["partitions"][0]
        base["topics"] = [
            {"topic_id": tid, "partitions": [{**partition, "partition_index": i} for i in ps]}
            for tid, ps in topics
        ]
        return base

    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 6, body([(topic_id, [0, 5]), (unknown, [0])]))
    assert [
        (t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in resp.topics
    ] == [
        (topic_id, [(5, E.UNKNOWN_TOPIC_OR_PARTITION), (0, E.NONE)]),
        (unknown, [(0, E.UNKNOWN_TOPIC_ID)]),
    ]
    assert "name" not in resp.topics[0]
    resp = await call(
        ApiKey.TXN_OFFSET_COMMIT, 6, body([(topic_id, [1])], group="g6", generation=2, member="m")
    )
    assert txn_commit_codes(resp) == [E.GROUP_ID_NOT_FOUND]
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 5, txn_commit_body(1, group="g6", generation=2))
    assert txn_commit_codes(resp) == [E.ILLEGAL_GENERATION]


async def test_txn_offsets_replayed_at_load(call, services, coordinator, nursery) -> None:
    """Open transaction: pending again after a reload; a committed one: visible; an aborted
    one: gone."""
    p = coordinator.partition_for("g")
    await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(5, pid=PID))
    await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body(OFFSETS_TOPIC, [p], commit=True, pid=PID))
    await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(6, pid=PID + 1))
    await call(
        ApiKey.WRITE_TXN_MARKERS, 1, marker_body(OFFSETS_TOPIC, [p], commit=False, pid=PID + 1)
    )
    await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(9, pid=PID + 2))
    coordinator.shutdown()
    reloaded = GroupCoordinatorRuntime(
        services.config, services.replicas, admin=services.admin, clock=trio_ms
    )
    services.group_coordinator = reloaded
    await nursery.start(reloaded.run)
    await coordinate_every_partition(reloaded)
    assert await fetch(call, stable=False) == (5, 0)
    assert await fetch(call, stable=True) == (-1, E.UNSTABLE_OFFSET_COMMIT)
    await call(
        ApiKey.WRITE_TXN_MARKERS, 1, marker_body(OFFSETS_TOPIC, [p], commit=True, pid=PID + 2)
    )
    assert await fetch(call, stable=True) == (9, 0)
    reloaded.shutdown()


# -- DescribeProducers -----------------------------------------------------------------------


async def test_describe_producers(call, services: Services) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS)
    await call(ApiKey.PRODUCE, 9, produce_body({0: txn_batch(3)}))
    resp = await call(
        ApiKey.DESCRIBE_PRODUCERS, 0, {"topics": [{"name": "t", "partition_indexes": [0, 4]}]}
    )
    parts = {p.partition_index: p for p in resp.topics[0].partitions}
    assert parts[4].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    [state] = parts[0].active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (PID, EPOCH, 2)
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, 0)


async def test_txn_offset_commit_of_an_older_producer_epoch(call, services, coordinator) -> None:
    await call(ApiKey.TXN_OFFSET_COMMIT, 3, txn_commit_body(5))
    old = {**txn_commit_body(6), "producer_epoch": EPOCH - 1}
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 3, old)
    assert txn_commit_codes(resp) == [E.INVALID_PRODUCER_EPOCH]
    # the rejected offset is not pending: the COMMIT makes the first one visible
    p = coordinator.partition_for("g")
    await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body(OFFSETS_TOPIC, [p], commit=True))
    assert await fetch(call, stable=True) == (5, 0)


async def test_marker_below_min_isr_is_not_written(call, services: Services) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS, configs={"min.insync.replicas": "2"})
    services.replicas.make_leader(
        "t", 0, leader_epoch=1, isr=[0], replicas=[0, 1], partition_epoch=1, now_ms=START_MS
    )
    part = services.replicas.partition("t", 0)
    assert part is not None
    resp = await call(ApiKey.WRITE_TXN_MARKERS, 1, marker_body("t", [0], commit=True))
    assert marker_codes(resp) == {0: E.NOT_ENOUGH_REPLICAS}
    assert part.log_end_offset == 0


def test_verifier_maps_the_coordinator_answer(services: Services) -> None:
    from types import SimpleNamespace as NS

    verifier = TxnVerifier(services.cluster, partition_for, node_id=0)
    wanted = [("t", 0), ("t", 1), ("t", 2), ("t", 3)]

    def answer(codes: dict[int, int], top: int = 0) -> NS:
        parts = [NS(partition_index=p, partition_error_code=c) for p, c in codes.items()]
        topic = NS(name="t", results_by_partition=parts)
        txn = NS(transactional_id="tx", topic_results=[topic])
        return NS(error_code=top, results_by_transaction=[txn])

    codes = {0: 0, 1: E.TRANSACTION_ABORTABLE, 2: E.PRODUCER_FENCED}
    got = verifier._results(answer(codes), "tx", PID, EPOCH, wanted)
    assert got == {
        ("t", 0): E.NONE,
        ("t", 1): E.INVALID_TXN_STATE,  # what a client before KIP-890 knows
        ("t", 2): E.INVALID_PRODUCER_EPOCH,
        ("t", 3): E.INVALID_TXN_STATE,  # missing from the answer
    }
    generic = TxnOperation.GENERIC_ERROR
    got = verifier._results(answer(codes), "tx", PID, EPOCH, wanted, operation=generic)
    assert got[("t", 1)] == E.TRANSACTION_ABORTABLE
    assert not verifier.needs_verification(PID, EPOCH, ("t", 0), ongoing_epoch=-1)
    assert verifier.needs_verification(PID, EPOCH + 1, ("t", 0), ongoing_epoch=-1)
    assert verifier.needs_verification(PID, EPOCH, ("t", 1), ongoing_epoch=-1)
    got = verifier._results(answer({}, top=E.NOT_COORDINATOR), "tx", PID, EPOCH, [("t", 5)])
    assert got == {("t", 5): E.NOT_COORDINATOR}
    got = verifier._results(
        answer({}, top=E.CLUSTER_AUTHORIZATION_FAILED), "tx", PID, EPOCH, wanted
    )
    assert set(got.values()) == {E.INVALID_TXN_STATE}


def test_producer_answers_of_verification_errors() -> None:
    """Kafka's ReplicaManager: the Produce error and error_message per verification error."""
    unverified = "Unable to verify the partition has been added to the transaction. Underlying "
    default, add = TxnOperation.DEFAULT_ERROR, TxnOperation.ADD_PARTITION
    assert producer_answer(E.INVALID_TXN_STATE, default) == (
        E.INVALID_TXN_STATE,
        "Partition was not added to the transaction",
    )
    for code in (E.NETWORK_EXCEPTION, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR):
        assert producer_answer(code, add) == (
            E.NOT_ENOUGH_REPLICAS,
            f"{unverified}error: {code.name}",
        )
    assert producer_answer(E.CONCURRENT_TRANSACTIONS, default) == (
        E.NOT_ENOUGH_REPLICAS,
        f"{unverified}error: CONCURRENT_TRANSACTIONS",
    )
    assert producer_answer(E.CONCURRENT_TRANSACTIONS, add) == (E.CONCURRENT_TRANSACTIONS, None)
    assert producer_answer(E.TRANSACTION_ABORTABLE, add) == (E.TRANSACTION_ABORTABLE, None)
    assert producer_answer(E.INVALID_PRODUCER_EPOCH, default) == (E.INVALID_PRODUCER_EPOCH, None)
    assert TxnOperation.of(10, 12, tv2_level=True) is default
    assert TxnOperation.of(11, 12, tv2_level=True) is TxnOperation.GENERIC_ERROR
    assert TxnOperation.of(12, 12, tv2_level=True) is add
    assert TxnOperation.of(12, 12, tv2_level=False) is TxnOperation.GENERIC_ERROR


# -- KIP-890 part 2 (transaction version 2) ---------------------------------------------------


async def test_tv2_produce_adds_the_partition_through_the_coordinator(
    call, services: Services
) -> None:
    services.admin.create_topic("t", 1, now_ms=START_MS)
    verifier = services.txn_verifier = FakeVerifier(services)
    resp = await call(ApiKey.PRODUCE, 12, produce_body({0: txn_batch()}))
    assert produce_codes(resp) == {0: 0}
    assert verifier.adds == [True]  # AddPartitionsToTxn v5, verify_only=false
    # COMMIT marker with the bumped epoch (EndTxn v5): accepted, the producer moves to it
    body = marker_body("t", [0], commit=True, epoch=EPOCH + 1)
    body["markers"][0]["transaction_version"] = 2
    resp = await call(ApiKey.WRITE_TXN_MARKERS, 2, body)
    assert marker_codes(resp) == {0: 0}
    # the old epoch is fenced; the new epoch's transaction starts at sequence 0
    resp = await call(ApiKey.PRODUCE, 12, produce_body({0: txn_batch(seq=2)}))
    assert produce_codes(resp) == {0: E.INVALID_PRODUCER_EPOCH}
    resp = await call(ApiKey.PRODUCE, 12, produce_body({0: txn_batch(epoch=EPOCH + 1)}))
    assert produce_codes(resp) == {0: 0}
    # the zombie was refused by the log before the coordinator was asked (Kafka's
    # maybeStartTransactionVerification checks the epoch first)
    assert verifier.adds == [True, True]
    # a marker of the old epoch (a zombie coordinator's) is refused
    resp = await call(ApiKey.WRITE_TXN_MARKERS, 2, marker_body("t", [0], commit=False))
    assert marker_codes(resp) == {0: E.INVALID_PRODUCER_EPOCH}


async def test_tv1_produce_and_level_0_only_verify(make_services, call_with) -> None:
    for level, version, add in (("2", 11, False), ("0", 12, False), ("2", 12, True)):
        services = make_services(**{"transaction.version": level})
        services.admin.create_topic("t", 1, now_ms=START_MS)
        verifier = services.txn_verifier = FakeVerifier(services)
        resp = await call_with(services, ApiKey.PRODUCE, version, produce_body({0: txn_batch()}))
        assert produce_codes(resp) == {0: 0}
        assert verifier.adds == [add], (level, version)


async def test_tv2_produce_adds_even_with_verification_disabled(make_services, call_with) -> None:
    services = make_services(**{"transaction.partition.verification.enable": "false"})
    services.admin.create_topic("t", 1, now_ms=START_MS)
    verifier = services.txn_verifier = FakeVerifier(services)
    verifier.enabled = False
    await call_with(services, ApiKey.PRODUCE, 9, produce_body({0: txn_batch()}))
    assert verifier.adds == []
    resp = await call_with(services, ApiKey.PRODUCE, 12, produce_body({0: txn_batch(pid=PID + 1)}))
    assert produce_codes(resp) == {0: 0}
    assert verifier.adds == [True]


async def test_tv2_txn_offset_commit_adds_the_offsets_partition(
    call, services, coordinator
) -> None:
    verifier = services.txn_verifier = FakeVerifier(services)
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 5, txn_commit_body(21))
    assert txn_commit_codes(resp) == [0]
    assert verifier.adds == [True]
    assert verifier.asked[0][3] == [(OFFSETS_TOPIC, coordinator.partition_for("g"))]
    resp = await call(ApiKey.TXN_OFFSET_COMMIT, 4, txn_commit_body(22, pid=PID + 1))
    assert verifier.adds == [True, False]


class BusyCoordinator(TxnVerifier):
    """The real verifier, the transaction coordinator's AddPartitionsToTxn answer scripted: it
    still completes the producer's previous transaction (markers under way)."""

    def coordinator(self, transactional_id: str) -> tuple[str, int] | None:
        return ("127.0.0.1", 9)  # never connected to: `_request` answers

    async def _request(self, address: tuple[str, int], body: dict[str, Any], version: int = 4):
        from types import SimpleNamespace as NS

        [txn] = body["transactions"]
        topics = [
            NS(
                name=t["name"],
                results_by_partition=[
                    NS(partition_index=p, partition_error_code=E.CONCURRENT_TRANSACTIONS)
                    for p in t["partitions"]
                ],
            )
            for t in txn["topics"]
        ]
        answer = NS(transactional_id=txn["transactional_id"], topic_results=topics)
        return NS(error_code=0, results_by_transaction=[answer])


async def test_busy_coordinator_answers_a_tv2_producer_concurrent_transactions(
    call, services, coordinator
) -> None:
    """Kafka's ReplicaManager turns the coordinator's CONCURRENT_TRANSACTIONS into
    NOT_ENOUGH_REPLICAS for producers before KIP-890 part 2 only; a TV2 producer (Produce v12+)
    gets CONCURRENT_TRANSACTIONS and retries it (the Java client 4.x does, right after a commit)."""
    services.txn_verifier = BusyCoordinator(services.cluster, partition_for, node_id=0)
    resp = await call(ApiKey.PRODUCE, 12, produce_body({0: txn_batch()}))
    assert produce_codes(resp) == {0: E.CONCURRENT_TRANSACTIONS}
    assert produce_messages(resp) == {0: None}
    resp = await call(ApiKey.PRODUCE, 11, produce_body({1: txn_batch()}))
    assert produce_codes(resp) == {1: E.NOT_ENOUGH_REPLICAS}
    assert produce_messages(resp)[1].endswith("Underlying error: CONCURRENT_TRANSACTIONS")
    for p in (0, 1):
        part = services.replicas.partition("t", p)
        assert part is not None and part.log_end_offset == 0
    # TxnOffsetCommit, TV2 or not: the coordinator's answer stays COORDINATOR_NOT_AVAILABLE
    for version in (5, 3):
        resp = await call(ApiKey.TXN_OFFSET_COMMIT, version, txn_commit_body(3))
        assert txn_commit_codes(resp) == [E.COORDINATOR_NOT_AVAILABLE], version
