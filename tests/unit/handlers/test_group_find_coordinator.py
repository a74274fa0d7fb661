"""FindCoordinator v0-6 through the codec, and what the first call does to Metadata/Produce."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

import wirebroker.handlers.find_coordinator
import wirebroker.handlers.metadata
import wirebroker.handlers.produce  # noqa: F401  (registers the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import build_batch
from wirebroker.group.runtime import OFFSETS_TOPIC, GroupCoordinatorRuntime
from wirebroker.handlers.context import Services

START_MS = 1_700_000_000_000


def trio_ms() -> int:
    try:
        return START_MS + round(trio.current_time() * 1000)
    except RuntimeError:
        return START_MS


@pytest.fixture
def broker_overrides() -> dict[str, str]:
    return {"offsets.topic.num.partitions": "4"}


@pytest.fixture
async def coordinator(
    services: Services, nursery: trio.Nursery
) -> AsyncIterator[GroupCoordinatorRuntime]:
    runtime = GroupCoordinatorRuntime(
        services.config, services.replicas, admin=services.admin, clock=trio_ms
    )
    services.group_coordinator = runtime
    await nursery.start(runtime.run)
    yield runtime
    runtime.shutdown()


FIND = ApiKey.FIND_COORDINATOR


@pytest.mark.parametrize("version", [0, 1, 2, 3])
async def test_group_key_before_v4(call: Any, coordinator: object, version: int) -> None:
    body: dict[str, Any] = {"key": "my-group"}
    if version >= 1:
        body["key_type"] = 0
    resp = await call(FIND, version, body)
    assert resp.error_code == 0
    assert (resp.node_id, resp.host, resp.port) == (0, "127.0.0.1", 9092)
    if version >= 1:
        assert resp.error_message == "NONE"  # Kafka sends Errors.NONE.message()


@pytest.mark.parametrize("version", [4, 5, 6])
async def test_batched_keys_from_v4(call: Any, coordinator: object, version: int) -> None:
    resp = await call(FIND, version, {"key_type": 0, "coordinator_keys": ["a", "b", ""]})
    assert [c.key for c in resp.coordinators] == ["a", "b", ""]
    for c in resp.coordinators:
        assert (c.error_code, c.node_id, c.host, c.port) == (0, 0, "127.0.0.1", 9092)
        assert c.error_message is None


async def test_first_call_creates_the_internal_offsets_topic(
    call: Any, services: Services, coordinator: object
) -> None:
    meta = await call(ApiKey.METADATA, 12, {"topics": [{"name": OFFSETS_TOPIC}]})
    assert meta.topics[0].error_code == E.UNKNOWN_TOPIC_OR_PARTITION
    everything = await call(ApiKey.METADATA, 12, {"topics": None})
    assert [t.name for t in everything.topics] == []

    assert (await call(FIND, 3, {"key": "g", "key_type": 0})).error_code == 0

    meta = await call(ApiKey.METADATA, 12, {"topics": [{"name": OFFSETS_TOPIC}]})
    topic = meta.topics[0]
    assert (topic.error_code, topic.is_internal, len(topic.partitions)) == (0, True, 4)
    info = services.topics.get(OFFSETS_TOPIC)
    assert info is not None
    assert info.configs == {
        "cleanup.policy": "compact",
        "segment.bytes": "104857600",
        "compression.type": "producer",
    }
    # Clients may not produce to it.
    batch = build_batch([(b"k", b"v")], base_timestamp=services.clock())
    produced = await call(
        ApiKey.PRODUCE,
        9,
        {
            "acks": -1,
            "timeout_ms": 1000,
            "topic_data": [
                {"name": OFFSETS_TOPIC, "partition_data": [{"index": 0, "records": batch}]}
            ],
        },
    )
    assert produced.responses[0].partition_responses[0].error_code == E.INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("version", [1, 3, 4, 6])
async def test_transaction_keys_are_refused(call: Any, coordinator: object, version: int) -> None:
    if version < 4:
        resp = await call(FIND, version, {"key": "txn", "key_type": 1})
        assert resp.error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert (resp.node_id, resp.host, resp.port) == (-1, "", -1)
        assert resp.error_message == "Transactional Id authorization failed."
    else:
        resp = await call(FIND, version, {"key_type": 1, "coordinator_keys": ["t1", "t2"]})
        assert [c.error_code for c in resp.coordinators] == [
            E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        ] * 2


async def test_share_and_unknown_key_types(call: Any, coordinator: object) -> None:
    share = await call(FIND, 6, {"key_type": 2, "coordinator_keys": ["s"]})
    assert share.coordinators[0].error_code == E.INVALID_REQUEST
    bogus = await call(FIND, 6, {"key_type": 7, "coordinator_keys": ["a", "b"]})
    assert [c.error_code for c in bogus.coordinators] == [E.INVALID_REQUEST] * 2
    assert bogus.coordinators[0].error_message is not None
    old = await call(FIND, 2, {"key": "a", "key_type": 9})
    assert old.error_code == E.INVALID_REQUEST and old.node_id == -1


async def test_without_an_active_coordinator(call: Any, services: Services) -> None:
    resp = await call(FIND, 0, {"key": "g"})
    assert resp.error_code == E.COORDINATOR_NOT_AVAILABLE  # no coordinator at all
    runtime = GroupCoordinatorRuntime(
        services.config, services.replicas, admin=services.admin, clock=trio_ms
    )
    services.group_coordinator = runtime  # not loaded yet
    resp = await call(FIND, 6, {"key_type": 0, "coordinator_keys": ["g"]})
    assert resp.coordinators[0].error_code == E.COORDINATOR_NOT_AVAILABLE
    assert services.topics.get(OFFSETS_TOPIC) is None
    await runtime.load()
    resp = await call(FIND, 6, {"key_type": 0, "coordinator_keys": ["g"]})
    assert resp.coordinators[0].error_code == 0
