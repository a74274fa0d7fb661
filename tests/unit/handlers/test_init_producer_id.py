"""InitProducerId handler: fresh ids, KIP-360 fields; transactional ids without a coordinator
(the transactional branch: tests/unit/handlers/test_txn_coordinator_api.py)."""

from __future__ import annotations

import pytest

import wirebroker.handlers.init_producer_id  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.metadata.topic_store import TopicStore
from wirebroker.replication.producer_ids import ProducerIdManager

KEY = ApiKey.INIT_PRODUCER_ID


def body(txn=None, pid=-1, epoch=-1):
    return {
        "transactional_id": txn,
        "transaction_timeout_ms": 60000,
        "producer_id": pid,
        "producer_epoch": epoch,
    }


@pytest.mark.parametrize("version", range(0, 6))
async def test_new_ids_every_version(call, version):
    a = await call(KEY, version, body())
    b = await call(KEY, version, body())
    assert (a.error_code, a.producer_epoch) == (ErrorCode.NONE, 0)
    assert b.producer_id > a.producer_id >= 0


async def test_existing_id_gets_a_fresh_one_as_kafka(call):
    a = await call(KEY, 4, body())
    b = await call(KEY, 4, body(pid=a.producer_id, epoch=a.producer_epoch))
    assert b.error_code == ErrorCode.NONE
    assert b.producer_id != a.producer_id and b.producer_epoch == 0


@pytest.mark.parametrize(("pid", "epoch"), [(-1, 0), (5, -1)])
async def test_half_set_producer_id_is_invalid(call, pid, epoch):
    r = await call(KEY, 4, body(pid=pid, epoch=epoch))
    assert (r.error_code, r.producer_id, r.producer_epoch) == (ErrorCode.INVALID_REQUEST, -1, -1)


async def test_transactional_ids_without_a_coordinator(call):
    r = await call(KEY, 4, body(txn="my-txn"))
    assert (r.error_code, r.producer_id, r.producer_epoch) == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        -1,
        -1,
    )
    r = await call(KEY, 4, body(txn=""))
    assert r.error_code == ErrorCode.INVALID_REQUEST


async def test_ids_not_reused_after_restart(call, services):
    issued = [(await call(KEY, 4, body())).producer_id for _ in range(3)]
    services.producer_ids = ProducerIdManager(TopicStore.open(services.cluster.topic_store.path))
    after = (await call(KEY, 4, body())).producer_id
    assert after > max(issued)
