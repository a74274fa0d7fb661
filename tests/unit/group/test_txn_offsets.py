"""Transactional offsets in the group coordinator: the pending store, the log fold that
replays them (COMMIT folds at the marker, ABORT drops, open stays pending), the KIP-447
checks of TxnOffsetCommit, and a marker that lands while the partition loads. MockClock, no
sockets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import trio
import trio.testing
from runtimekit import Member, Node, commit, fetched, running, trio_ms

import wirebroker.coordinator.runtime as runtime_module
from protocol.errors import ErrorCode as E
from wirebroker.group.messages import CommitPartition, CommitTopic, TxnCommitRequest
from wirebroker.group.offsets import OffsetAndMetadata
from wirebroker.group.offsets_log import Entry, OffsetsFold
from wirebroker.group.partitioning import partition_for
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.group.txn_offsets import PendingTxnOffsets

PID, EPOCH = 77, 1


def group_in(partition: int, prefix: str = "g") -> str:
    return next(
        f"{prefix}{i}" for i in range(1000) if partition_for(f"{prefix}{i}", 4) == partition
    )


def test_pending_store() -> None:
    pending = PendingTxnOffsets()
    pending.add(1, "a", "t", 0, OffsetAndMetadata(5))
    pending.add(1, "a", "t", 0, OffsetAndMetadata(6))  # same txn, same partition: replaced
    pending.add(2, "b", "t", 0, OffsetAndMetadata(9))
    assert pending.has_pending("a", "t", 0) and not pending.has_pending("a", "t", 1)
    assert pending.count() == 2
    assert list(pending.take(1, lambda g: g == "a")) == [("a", "t", 0, OffsetAndMetadata(6))]
    assert not pending.has_pending("a", "t", 0) and pending.producers() == [2]
    pending.drop_groups(lambda g: g == "b")
    assert pending.count() == 0 and pending.producers() == []


def test_fold_commit_abort_open() -> None:
    fold = OffsetsFold()
    fold.add(
        [
            Entry(b"k1", b"plain", offset=0),
            Entry(b"k1", b"txn-a", producer_id=1, offset=1),
            Entry(b"k2", b"txn-b", producer_id=2, offset=2),
            Entry(b"k3", b"txn-c", producer_id=3, offset=3),
            Entry(None, None, producer_id=2, commit=False),  # ABORT of 2
            Entry(None, None, producer_id=1, commit=True),  # COMMIT of 1
        ]
    )
    assert fold.latest == {b"k1": b"txn-a"}
    assert fold.pending == {3: [(b"k3", b"txn-c", 3)]}


def test_fold_a_commit_marker_keeps_a_later_plain_commit() -> None:
    """Kafka keeps the commit whose record comes later in the log: a plain commit written
    between a transaction's offset record and its COMMIT marker stays; one written before
    it, or deleted (tombstone) after it, gives way to the transaction's."""
    fold = OffsetsFold()
    fold.add(
        [
            Entry(b"a", b"plain-a-old", offset=0),
            Entry(b"a", b"txn-a", producer_id=1, offset=1),
            Entry(b"b", b"txn-b", producer_id=1, offset=2),
            Entry(b"b", b"plain-b-new", offset=3),
            Entry(b"c", b"txn-c", producer_id=1, offset=4),
            Entry(b"c", None, offset=5),  # the plain offset deleted after the txn's record
            Entry(None, None, producer_id=1, commit=True, offset=6),
        ]
    )
    assert fold.latest == {b"b": b"plain-b-new", b"a": b"txn-a", b"c": b"txn-c"}
    assert fold.positions == {b"a": 1, b"b": 3, b"c": 4}


async def test_a_plain_commit_after_the_transactions_record_survives_its_marker(
    tmp_path: Path, autojump_clock: object
) -> None:
    """The same rule live and after a restart (the load replays the log): TxnOffsetCommit 3,
    then a plain OffsetCommit 10 of the same partition, then the COMMIT marker: 10 stays."""
    group = group_in(1)
    overrides = {"offsets.topic.num.partitions": "4"}
    async with running(tmp_path, **overrides) as node:
        node.create_topic("t")
        assert errors(await node.runtime.txn_commit_offsets(txn_request(group, 3))) == [E.NONE]
        await plain_commit(node, group, 10)
        commit_marker(node, 1)
        assert fetched(node.runtime, group)[1] == {("t", 0): 10}
    async with running(tmp_path, **overrides) as node:
        await trio.testing.wait_all_tasks_blocked()
        assert fetched(node.runtime, group) == (E.NONE, {("t", 0): 10})
        # the other order: the transaction's record is the later one, it wins
        await plain_commit(node, group, 20)
        assert errors(await node.runtime.txn_commit_offsets(txn_request(group, 30))) == [E.NONE]
        commit_marker(node, 1)
        assert fetched(node.runtime, group)[1] == {("t", 0): 30}
    async with running(tmp_path, **overrides) as node:
        await trio.testing.wait_all_tasks_blocked()
        assert fetched(node.runtime, group) == (E.NONE, {("t", 0): 30})


async def plain_commit(node: Node, group: str, offset: int) -> None:
    """OffsetCommit of t-0 by a simple consumer of `group` (no membership)."""
    resp = await commit(node.runtime, {("t", 0): offset}, group=group)
    assert resp["topics"][0]["partitions"][0]["error_code"] == E.NONE


def commit_marker(node: Node, partition: int) -> None:
    """The transaction coordinator's COMMIT marker of PID: in the `__consumer_offsets`
    partition's log, then applied by the group coordinator (what WriteTxnMarkers does)."""
    part = node.replicas.partition(OFFSETS_TOPIC, partition)
    assert part is not None
    node.replicas.append_marker(
        part, PID, EPOCH, commit=True, coordinator_epoch=0, now_ms=trio_ms()
    )
    node.runtime.complete_txn(PID, partition, commit=True)


def txn_request(group: str, offset: int, **kw: Any) -> TxnCommitRequest:
    return TxnCommitRequest(
        group,
        kw.get("pid", PID),
        EPOCH,
        [CommitTopic("t", [CommitPartition(0, offset)])],
        generation_id=kw.get("generation", -1),
        member_id=kw.get("member", ""),
    )


def errors(result: Any) -> list[E]:
    return list(result.errors().values())


async def test_kip447_checks_against_a_stable_group(tmp_path: Path, autojump_clock: object) -> None:
    async with running(tmp_path, **{"offsets.topic.num.partitions": "4"}) as node:
        node.create_topic("t")
        rt = node.runtime
        member = Member(rt, "c1")
        await member.join()
        await member.sync()
        ok = txn_request("g", 3, generation=member.generation, member=member.member_id)
        assert errors(await rt.txn_commit_offsets(ok)) == [E.NONE]
        stale = txn_request("g", 3, generation=member.generation + 1, member=member.member_id)
        assert errors(await rt.txn_commit_offsets(stale)) == [E.ILLEGAL_GENERATION]
        unknown = txn_request("g", 3, generation=member.generation, member="nobody")
        assert errors(await rt.txn_commit_offsets(unknown)) == [E.UNKNOWN_MEMBER_ID]
        # v0-2 carry no member: accepted in a Stable group (not so for OffsetCommit)
        assert errors(await rt.txn_commit_offsets(txn_request("g", 4))) == [E.NONE]
        assert rt.has_pending_txn_offset("g", "t", 0)
        assert fetched(rt, "g")[1] == {}
        rt.complete_txn(PID, rt.partition_for("g"), commit=True)
        assert not rt.has_pending_txn_offset("g", "t", 0)
        assert fetched(rt, "g")[1] == {("t", 0): 4}


async def test_marker_while_the_partition_loads(
    tmp_path: Path, autojump_clock: object, monkeypatch: Any
) -> None:
    """The load read the log before the marker was appended: the marker is applied once the
    load has replayed, so the offset does not stay pending for ever."""
    group = group_in(1)
    overrides = {"offsets.topic.num.partitions": "4"}
    async with running(tmp_path, **overrides) as node:
        node.create_topic("t")
        assert errors(await node.runtime.txn_commit_offsets(txn_request(group, 8))) == [E.NONE]
    async with running(tmp_path, lead=False, **overrides) as node:
        rt = node.runtime
        part = node.replicas.partition(OFFSETS_TOPIC, 1)
        assert part is not None
        real = runtime_module.keyed_records

        def scripted(p: Any) -> Iterator[list[Entry]]:
            chunks = list(real(p))  # the log as the load reads it: no marker yet
            node.replicas.append_marker(
                part, PID, EPOCH, commit=True, coordinator_epoch=0, now_ms=trio_ms()
            )
            rt.complete_txn(PID, 1, commit=True)
            yield from chunks

        monkeypatch.setattr(runtime_module, "keyed_records", scripted)
        rt.on_became_leader(1, 3)
        await trio.testing.wait_all_tasks_blocked()
        assert fetched(rt, group)[0] == E.NONE
        assert fetched(rt, group)[1] == {("t", 0): 8}
        assert not rt.has_pending_txn_offset(group, "t", 0)
