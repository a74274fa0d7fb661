"""The transaction coordinator's handlers through the real codec: FindCoordinator key type 1,
InitProducerId (transactional), AddPartitionsToTxn v0-5 (v4+ batched, verify_only),
AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions. The runtime leads every
`__transaction_state` partition; markers go to a list."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

import wirebroker.handlers.add_offsets_to_txn
import wirebroker.handlers.add_partitions_to_txn
import wirebroker.handlers.describe_transactions
import wirebroker.handlers.end_txn
import wirebroker.handlers.find_coordinator
import wirebroker.handlers.init_producer_id
import wirebroker.handlers.list_transactions  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from tests.unit.local_metadata import lead_coordinator
from wirebroker.group.partitioning import partition_for
from wirebroker.handlers.context import Services
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.security.acls import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    NoAuthorizer,
    PatternType,
    ResourceType,
)
from wirebroker.security.authorizer import AclAuthorizer
from wirebroker.txn.effects import MarkerRequest
from wirebroker.txn.metadata import TopicPartition
from wirebroker.txn.runtime import TXN_TOPIC, TxnCoordinatorRuntime

TP = TopicPartition


class Sink:
    def __init__(self) -> None:
        self.sent: list[MarkerRequest] = []

    def send(self, request: MarkerRequest, partitions: Any) -> None:
        self.sent.append(request)


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {"transaction.state.log.num.partitions": "3", "transaction.max.timeout.ms": "60000"}


def _runtime(services: Services) -> TxnCoordinatorRuntime:
    """The coordinator of `services` (every `__transaction_state` partition its own, markers to
    a Sink), with topic "t" (2 partitions) created."""
    rt = TxnCoordinatorRuntime(
        services.config,
        services.replicas,
        admin=services.admin,
        producer_ids=services.producer_ids,
        clock=services.clock,
        markers=Sink(),
    )
    services.txn_coordinator = rt
    services.admin.create_topics([NewTopic("t", 2, 1)], now_ms=services.clock())
    return rt


@pytest.fixture
async def txn(services: Services) -> AsyncIterator[TxnCoordinatorRuntime]:
    rt = _runtime(services)
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.run)
        lead_coordinator(rt)
        await trio.testing.wait_all_tasks_blocked()
        yield rt
        nursery.cancel_scope.cancel()


async def _init(call: Any, tid: str = "tx", version: int = 4, **kw: Any) -> Any:
    body = {
        "transactional_id": tid,
        "transaction_timeout_ms": kw.pop("timeout", 30000),
        "producer_id": kw.pop("pid", -1),
        "producer_epoch": kw.pop("epoch", -1),
    }
    return await call(ApiKey.INIT_PRODUCER_ID, version, body)


def _add_v3(tid: str, pid: int, epoch: int, topics: dict[str, list[int]]) -> dict[str, Any]:
    return {
        "v3_and_below_transactional_id": tid,
        "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
    }


def _errors_v3(resp: Any) -> dict[tuple[str, int], int]:
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in resp.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


@pytest.mark.parametrize("version", [1, 4])
async def test_find_coordinator_for_a_transactional_id(
    call: Any, txn: TxnCoordinatorRuntime, services: Services, version: int
) -> None:
    if version < 4:
        resp = await call(ApiKey.FIND_COORDINATOR, version, {"key": "tx", "key_type": 1})
    else:
        body = {"key_type": 1, "coordinator_keys": ["tx"]}
        resp = (await call(ApiKey.FIND_COORDINATOR, version, body)).coordinators[0]
    assert (resp.error_code, resp.node_id, resp.host, resp.port) == (0, 0, "127.0.0.1", 9092)
    info = services.admin.describe(TXN_TOPIC)
    assert info is not None and info.partitions == 3


async def test_transaction_through_the_handlers(
    call: Any, txn: TxnCoordinatorRuntime, services: Services
) -> None:
    txn.ensure_topic()
    init = await _init(call)
    pid, epoch = init.producer_id, init.producer_epoch
    assert (init.error_code, epoch) == (0, 0)
    resp = await call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add_v3("tx", pid, epoch, {"t": [0, 1]}))
    assert _errors_v3(resp) == {("t", 0): 0, ("t", 1): 0}
    offsets = {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch}
    resp = await call(ApiKey.ADD_OFFSETS_TO_TXN, 3, {**offsets, "group_id": "g"})
    assert resp.error_code == 0
    described = await call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["tx", "no"]})
    d, missing = described.transaction_states
    assert (d.error_code, d.transaction_state, d.producer_id) == (0, "Ongoing", pid)
    group_partition = partition_for("g", txn.core.config.offsets_num_partitions)
    assert {(t.topic, tuple(t.partitions)) for t in d.topics} == {
        ("t", (0, 1)),
        ("__consumer_offsets", (group_partition,)),
    }
    assert missing.error_code == E.TRANSACTIONAL_ID_NOT_FOUND
    # under an authorizer only the partitions of topics the principal may describe are listed
    services.authorizer = AclAuthorizer()
    services.authorizer.add(
        AclBinding(int(rtype), name, int(PatternType.LITERAL), "User:ANONYMOUS", "*",
                   int(AclOperation.DESCRIBE), int(AclPermissionType.ALLOW))
        for rtype, name in ((ResourceType.TRANSACTIONAL_ID, "tx"), (ResourceType.TOPIC, "t"))
    )  # fmt: skip
    limited = await call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["tx"]})
    assert [(t.topic, list(t.partitions)) for t in limited.transaction_states[0].topics] == [
        ("t", [0, 1])
    ]
    services.authorizer = NoAuthorizer()
    # Kafka 4.4 answers an unknown id with zeroes, not -1 (tests/oracle/test_kafka_answers.py)
    assert (
        missing.transaction_state,
        missing.transaction_timeout_ms,
        missing.transaction_start_time_ms,
        missing.producer_id,
        missing.producer_epoch,
        list(missing.topics),
    ) == ("", 0, 0, 0, 0, [])
    listed = await call(
        ApiKey.LIST_TRANSACTIONS,
        1,
        {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": [], "duration_filter": -1},
    )
    assert [t.transactional_id for t in listed.transaction_states] == ["tx"]
    assert list(listed.unknown_state_filters) == ["Bogus"]
    end = await call(ApiKey.END_TXN, 3, {**offsets, "committed": True})
    assert end.error_code == 0
    [marker] = txn.markers.sent  # type: ignore[union-attr]
    assert marker.commit and TP("t", 0) in marker.partitions and len(marker.partitions) == 3


async def test_verify_only_and_batched_adds(call: Any, txn: TxnCoordinatorRuntime) -> None:
    txn.ensure_topic()
    init = await _init(call)
    pid, epoch = init.producer_id, init.producer_epoch

    def txn_entry(verify: bool, parts: list[int]) -> dict[str, Any]:
        return {
            "transactional_id": "tx",
            "producer_id": pid,
            "producer_epoch": epoch,
            "verify_only": verify,
            "topics": [{"name": "t", "partitions": parts}],
        }

    def errors(resp: Any) -> dict[int, int]:
        [result] = resp.results_by_transaction
        return {
            p.partition_index: p.partition_error_code
            for p in result.topic_results[0].results_by_partition
        }

    add = await call(ApiKey.ADD_PARTITIONS_TO_TXN, 4, {"transactions": [txn_entry(False, [0])]})
    assert add.error_code == 0 and errors(add) == {0: 0}
    verify = await call(
        ApiKey.ADD_PARTITIONS_TO_TXN, 5, {"transactions": [txn_entry(True, [0, 1])]}
    )
    assert errors(verify) == {0: E.NONE, 1: E.TRANSACTION_ABORTABLE}


async def test_errors(call: Any, txn: TxnCoordinatorRuntime) -> None:
    txn.ensure_topic()
    assert (await _init(call, timeout=60001)).error_code == E.INVALID_TRANSACTION_TIMEOUT
    assert (await _init(call, timeout=0)).error_code == E.INVALID_TRANSACTION_TIMEOUT
    init = await _init(call)
    pid, epoch = init.producer_id, init.producer_epoch
    unknown = await call(
        ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add_v3("tx", pid, epoch, {"t": [0, 5], "nope": [0]})
    )
    assert _errors_v3(unknown) == {
        ("t", 0): E.OPERATION_NOT_ATTEMPTED,
        ("t", 5): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    wrong_pid = await call(
        ApiKey.ADD_PARTITIONS_TO_TXN, 3, _add_v3("tx", pid + 1, epoch, {"t": [0]})
    )
    assert _errors_v3(wrong_pid) == {("t", 0): E.INVALID_PRODUCER_ID_MAPPING}
    # a second producer with the same id fences the first
    again = await _init(call)
    assert again.producer_epoch == epoch + 1
    stale = {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch}
    new_fenced = await call(ApiKey.END_TXN, 3, {**stale, "committed": True})
    old_fenced = await call(ApiKey.END_TXN, 1, {**stale, "committed": True})
    assert (new_fenced.error_code, old_fenced.error_code) == (
        E.PRODUCER_FENCED,
        E.INVALID_PRODUCER_EPOCH,
    )
    # v3+ InitProducerId with a stale producer id/epoch (KIP-360)
    zombie = await _init(call, version=4, pid=pid + 7, epoch=0)
    assert zombie.error_code == E.PRODUCER_FENCED
    zombie_v3 = await _init(call, version=3, pid=pid + 7, epoch=0)
    assert zombie_v3.error_code == E.INVALID_PRODUCER_EPOCH
    no_txn = await call(
        ApiKey.END_TXN,
        3,
        {
            "transactional_id": "tx",
            "producer_id": pid,
            "producer_epoch": epoch + 1,
            "committed": True,
        },
    )
    assert no_txn.error_code == E.INVALID_TXN_STATE


async def test_no_coordinator(call: Any) -> None:
    body = {"transactional_id": "tx", "producer_id": 1, "producer_epoch": 0}
    assert (await call(ApiKey.END_TXN, 3, {**body, "committed": True})).error_code == (
        E.COORDINATOR_NOT_AVAILABLE
    )
    assert (await call(ApiKey.ADD_OFFSETS_TO_TXN, 3, {**body, "group_id": "g"})).error_code == (
        E.COORDINATOR_NOT_AVAILABLE
    )
    listed = await call(
        ApiKey.LIST_TRANSACTIONS, 0, {"state_filters": [], "producer_id_filters": []}
    )
    assert listed.error_code == E.COORDINATOR_NOT_AVAILABLE


async def test_end_txn_v5_bumps_the_epoch(call: Any, txn: TxnCoordinatorRuntime) -> None:
    """KIP-890 part 2: AddPartitionsToTxn v5 (a leader adding for a TV2 producer), then
    EndTxn v5 answers the bumped epoch; the markers carry it and TransactionVersion 2."""
    txn.ensure_topic()
    init = await _init(call)
    pid, epoch = init.producer_id, init.producer_epoch
    add = {
        "transactions": [
            {
                "transactional_id": "tx",
                "producer_id": pid,
                "producer_epoch": epoch,
                "verify_only": False,
                "topics": [{"name": "t", "partitions": [0]}],
            }
        ]
    }
    resp = await call(ApiKey.ADD_PARTITIONS_TO_TXN, 5, add)
    [result] = resp.results_by_transaction
    codes = [p.partition_error_code for t in result.topic_results for p in t.results_by_partition]
    assert codes == [0]
    assert txn.core.txns["tx"].client_transaction_version == 2
    body = {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch}
    end = await call(ApiKey.END_TXN, 5, {**body, "committed": True})
    assert (end.error_code, end.producer_id, end.producer_epoch) == (0, pid, epoch + 1)
    [marker] = txn.markers.sent  # type: ignore[union-attr]
    assert (marker.producer_epoch, marker.transaction_version) == (epoch + 1, 2)
    # while the markers are being written, any EndTxn is CONCURRENT_TRANSACTIONS, before the
    # epoch is looked at (Kafka 4.4, checked against it: compat/kafka-tools FINDINGS); errors
    # answer producer id/epoch -1
    stale_body = {**body, "producer_epoch": epoch + 5, "committed": True}
    stale = await call(ApiKey.END_TXN, 5, stale_body)
    assert (stale.error_code, stale.producer_id, stale.producer_epoch) == (
        E.CONCURRENT_TRANSACTIONS,
        -1,
        -1,
    )
    for partition in marker.partitions:
        txn.marker_done(marker, partition)
    await trio.testing.wait_all_tasks_blocked()
    stale = await call(ApiKey.END_TXN, 5, stale_body)
    assert (stale.error_code, stale.producer_id, stale.producer_epoch) == (
        E.PRODUCER_FENCED,
        -1,
        -1,
    )


async def test_end_txn_v5_below_transaction_version_2_is_v4(
    make_services: Any, call_with: Any
) -> None:
    services = make_services(**{"transaction.version": "1"})
    rt = _runtime(services)
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.run)
        lead_coordinator(rt)
        rt.ensure_topic()
        await trio.testing.wait_all_tasks_blocked()
        init = await call_with(
            services,
            ApiKey.INIT_PRODUCER_ID,
            4,
            {
                "transactional_id": "tx",
                "transaction_timeout_ms": 30000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        pid, epoch = init.producer_id, init.producer_epoch
        add = _add_v3("tx", pid, epoch, {"t": [0]})
        assert _errors_v3(await call_with(services, ApiKey.ADD_PARTITIONS_TO_TXN, 3, add)) == {
            ("t", 0): 0
        }
        body = {"transactional_id": "tx", "producer_id": pid, "producer_epoch": epoch}
        end = await call_with(services, ApiKey.END_TXN, 5, {**body, "committed": True})
        assert (end.error_code, end.producer_epoch) == (0, -1)
        assert rt.core.txns["tx"].producer_epoch == epoch
        nursery.cancel_scope.cancel()
