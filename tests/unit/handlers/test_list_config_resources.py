"""ListConfigResources (key 74) on one broker: Kafka 4.1's types per version, its order, the
empty filter, and UNSUPPORTED_VERSION for a type the version does not list (KIP-1142).

Found by kafka-python's own integration suite (`test_list_config_resources`): the API was not
served, so `KafkaAdminClient.list_config_resources()` got a closed connection."""

from __future__ import annotations

import pytest

import wirebroker.handlers.list_config_resources  # noqa: F401  (register the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


@pytest.fixture
def topics(services):
    now = services.clock()
    services.admin.create_topic("b", 1, 1, {}, now_ms=now)
    services.admin.create_topic("a", 2, 1, {}, now_ms=now)


def listed(resp):
    return [(r.resource_name, r.resource_type) for r in resp.config_resources]


async def test_every_type_in_kafkas_order(call, services, topics):
    resp = await call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": []})
    assert resp.error_code == ErrorCode.NONE
    node = str(services.config.node_id)
    got = listed(resp)
    assert got[:2] == [(node, BROKER_LOGGER), (node, BROKER)]
    assert sorted(got[2:]) == [("a", TOPIC), ("b", TOPIC)]


async def test_a_filter_lists_those_types_only(call, services, topics):
    resp = await call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [TOPIC, GROUP]})
    assert resp.error_code == ErrorCode.NONE
    assert sorted(listed(resp)) == [("a", TOPIC), ("b", TOPIC)]
    resp = await call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": [CLIENT_METRICS]})
    assert (resp.error_code, listed(resp)) == (ErrorCode.NONE, [])


@pytest.mark.parametrize("types", [[3], [TOPIC, 64], [-1]])
async def test_an_unsupported_type_fails_the_whole_request(call, topics, types):
    resp = await call(ApiKey.LIST_CONFIG_RESOURCES, 1, {"resource_types": types})
    assert resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert resp.config_resources == []


async def test_version_0_lists_client_metrics_resources_only(call, topics):
    resp = await call(ApiKey.LIST_CONFIG_RESOURCES, 0, {})
    assert resp.error_code == ErrorCode.NONE
    assert resp.config_resources == []
