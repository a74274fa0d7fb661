"""DescribeClientQuotas / AlterClientQuotas through the real dispatcher and handlers, and the
throttling the Dispatcher applies (wirebroker/handlers/throttle.py): the user is the
principal's name, throttle_time_ms is answered and the reply mutes the channel (after sending
for clients new enough for KIP-219, before for older ones); ApiVersions and follower fetches
are never throttled; a store that cannot be written is answered for every entity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from tests.unit.net.netwire import stub_services
from wirebroker.handlers.context import Services
from wirebroker.handlers.dispatcher import Dispatcher, Reply
from wirebroker.handlers.registry import load_handlers
from wirebroker.security.client_quotas import (
    AlterEntry,
    EntityResult,
    LocalQuotaConfigs,
    QuotaStoreError,
)
from wirebroker.security.quota_manager import ClientQuotas
from wirebroker.security.session import ConnectionSession

ALICE = ConnectionSession(principal="User:alice")


async def dispatch(
    services: Services,
    api: ApiKey,
    version: int,
    body: dict[str, Any],
    session: ConnectionSession | None = None,
    client_id: str = "app",
) -> tuple[Reply, Any]:
    dispatcher = Dispatcher(services, load_handlers())
    frame = encode_request(api, version, 7, client_id, body)[4:]
    reply = await dispatcher.dispatch(frame, "198.51.100.7", "198.51.100.7:4000", session)
    assert not reply.close and isinstance(reply.response, bytes)
    correlation_id, answer = decode_response(api, version, reply.response[4:])
    assert correlation_id == 7
    return reply, answer


def quota_services(
    *entries: tuple[tuple[tuple[str, str | None], ...], str, float],
    services: Services | None = None,
) -> Services:
    services = services or stub_services()
    configs = LocalQuotaConfigs()
    configs.quotas.alter([AlterEntry(e, ((k, v, False),)) for e, k, v in entries])
    services.quota_configs = configs
    services.client_quotas = ClientQuotas(configs.quotas)
    return services


def test_both_apis_are_advertised_at_v0_to_1() -> None:
    handlers = load_handlers()
    for api in (ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.ALTER_CLIENT_QUOTAS):
        spec = handlers[int(api)]
        assert (spec.advertised_min, spec.max_version) == (0, 1)


async def test_alter_then_describe() -> None:
    services = quota_services()
    _reply, answer = await dispatch(
        services,
        ApiKey.ALTER_CLIENT_QUOTAS,
        1,
        {
            "entries": [
                {
                    "entity": [{"entity_type": "user", "entity_name": None}],
                    "ops": [{"key": "producer_byte_rate", "value": 10.0, "remove": False}],
                }
            ],
            "validate_only": False,
        },
    )
    assert [(e.error_code, e.error_message) for e in answer.entries] == [(0, None)]
    _reply, answer = await dispatch(
        services,
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        0,
        {"components": [{"entity_type": "user", "match_type": 1, "match": None}], "strict": True},
    )
    assert (answer.error_code, answer.error_message) == (0, "")
    (entry,) = answer.entries
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("user", None)]
    assert [(v.key, v.value) for v in entry["values"]] == [("producer_byte_rate", 10.0)]


async def test_a_store_that_cannot_be_written_answers_every_entity() -> None:
    class Broken(LocalQuotaConfigs):
        async def alter(
            self, entries: Sequence[AlterEntry], *, validate_only: bool = False
        ) -> list[EntityResult]:
            raise QuotaStoreError(7, "The change was not applied within 30 s")  # type: ignore[arg-type]

    services = stub_services()
    services.quota_configs = Broken()
    entity = [{"entity_type": "client-id", "entity_name": "c"}]
    ops = [{"key": "consumer_byte_rate", "value": 1.0, "remove": False}]
    _reply, answer = await dispatch(
        services,
        ApiKey.ALTER_CLIENT_QUOTAS,
        1,
        {"entries": [{"entity": entity, "ops": ops}] * 2, "validate_only": False},
    )
    assert [(e.error_code, e.error_message) for e in answer.entries] == [
        (7, "The change was not applied within 30 s")
    ]


def produce(records: bytes) -> dict[str, Any]:
    return {
        "acks": 1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "nope", "partition_data": [{"index": 0, "records": records}]}],
    }


async def test_a_produce_over_the_users_byte_rate_is_throttled(services: Services) -> None:
    services = quota_services(((("user", "alice"),), "producer_byte_rate", 100), services=services)
    # 5000 bytes over Kafka's ten-window minimum: 500 B/s, five times the quota
    reply, answer = await dispatch(services, ApiKey.PRODUCE, 9, produce(b"x" * 5000), ALICE)
    assert answer.throttle_time_ms == reply.throttle_ms > 0
    assert not reply.delay_response  # v9 clients back off themselves: muted after sending
    # another user (ANONYMOUS) is not covered by alice's quota
    reply, answer = await dispatch(services, ApiKey.PRODUCE, 9, produce(b"x" * 5000))
    assert (reply.throttle_ms, answer.throttle_time_ms) == (0, 0)
    # a client older than KIP-219 (Produce v5) gets its answer delayed instead
    reply, _answer = await dispatch(services, ApiKey.PRODUCE, 5, produce(b"x"), ALICE)
    assert reply.throttle_ms > 0 and reply.delay_response


async def test_api_versions_and_follower_fetches_are_never_throttled(services: Services) -> None:
    services = quota_services(
        ((("user", None),), "request_percentage", 1e-9),
        ((("user", None),), "consumer_byte_rate", 1),
        services=services,
    )
    reply, _answer = await dispatch(services, ApiKey.API_VERSIONS, 3, {}, ALICE)
    assert reply.throttle_ms == 0
    fetch = {
        "replica_id": 1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "topics": [],
    }
    reply, _answer = await dispatch(services, ApiKey.FETCH, 12, fetch, ALICE)
    assert reply.throttle_ms == 0
    # a consumer's fetch is (request_percentage: any handling time is over 1e-9 %)
    reply, answer = await dispatch(services, ApiKey.FETCH, 12, fetch | {"replica_id": -1}, ALICE)
    assert answer.throttle_time_ms == reply.throttle_ms > 0
