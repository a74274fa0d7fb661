"""ApiVersions over a real socket: every version 0-5, newer versions, invalid client software,
v5's cluster and node check."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from netwire import (
    RunningServer,
    StartServer,
    WireClient,
    frame,
    request_header_v1,
    request_header_v2,
)

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from wirebroker.handlers.api_versions import advertised_api_keys, valid_software_field
from wirebroker.handlers.registry import HandlerSpec, handler


def _request(version: int) -> Any:
    if version >= 3:
        return ApiVersionsRequest[version](
            client_software_name="netwire", client_software_version="1.0.0"
        )
    return ApiVersionsRequest[version]()


def _as_tuples(api_keys: Any) -> list[tuple[int, int, int]]:
    return [(k.api_key, k.min_version, k.max_version) for k in api_keys]


def _expected(registry: dict[int, HandlerSpec]) -> list[tuple[int, int, int]]:
    return sorted((s.api_key, s.advertised_min, s.max_version) for s in registry.values())


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
async def test_every_version_lists_exactly_the_registered_apis(
    running: RunningServer, registry: dict[int, HandlerSpec], version: int
) -> None:
    client = await WireClient.connect(running.address)
    response = await client.call(_request(version), correlation_id=100 + version)
    assert response.error_code == ErrorCode.NONE
    assert _as_tuples(response.api_keys) == _expected(registry)
    assert (ApiKey.API_VERSIONS, 0, 5) in _as_tuples(response.api_keys)
    if version >= 1:
        assert response.throttle_time_ms == 0


async def _call_v5(client: WireClient, correlation_id: int, **fields: Any) -> Any:
    """ApiVersions v5 with our codec (kafka-python 3.0.12 stops at v4)."""
    body = {"client_software_name": "netwire", "client_software_version": "1.0.0", **fields}
    await client.send_raw(encode_request(ApiKey.API_VERSIONS, 5, correlation_id, "netwire", body))
    data = await client.read_frame()
    assert data is not None
    got_id, response = decode_response(ApiKey.API_VERSIONS, 5, data)
    assert got_id == correlation_id
    return response


async def test_v5_lists_exactly_the_registered_apis(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    client = await WireClient.connect(running.address)
    response = await _call_v5(client, 7)
    assert response.error_code == ErrorCode.NONE
    assert _as_tuples(response.api_keys) == _expected(registry)


async def test_v5_checks_the_cluster_and_node_the_client_means(running: RunningServer) -> None:
    """KIP-1242 (compared with Apache Kafka in tests/oracle/test_new_versions.py)."""
    client = await WireClient.connect(running.address)
    cluster, node = "test-cluster", 0  # netwire.stub_services()
    for fields, expected in [
        ({"cluster_id": cluster, "node_id": node}, ErrorCode.NONE),
        ({"cluster_id": cluster + "x", "node_id": node}, ErrorCode.REBOOTSTRAP_REQUIRED),
        ({"cluster_id": cluster, "node_id": node + 1}, ErrorCode.REBOOTSTRAP_REQUIRED),
        ({"cluster_id": cluster}, ErrorCode.INVALID_REQUEST),
        ({"node_id": node}, ErrorCode.INVALID_REQUEST),
    ]:
        response = await _call_v5(client, 8, **fields)  # the connection stays usable
        assert response.error_code == expected, fields
        assert bool(response.api_keys) == (expected is ErrorCode.NONE)


@pytest.mark.parametrize("version", [3, 4])
async def test_v3_response_carries_the_transaction_version_feature(
    running: RunningServer, version: int
) -> None:
    """KIP-584 tagged fields of v3+: transaction.version finalized at 2 (the default level);
    supported 0..2 listed from v4 only (KIP-1022: as Kafka, a v3 answer leaves out supported
    ranges starting at 0); kcat 1.7.1 / librdkafka 2.0.2 parses them (tests/integration)."""
    client = await WireClient.connect(running.address)
    request = _request(version)
    await client.send(request, correlation_id=5)
    data = await client.read_frame()
    assert data is not None
    assert data[:4] == struct.pack(">i", 5)
    decoded = ApiVersionsResponse.decode(data, version=version, header=True)
    supported = [(f.name, f.min_version, f.max_version) for f in decoded.supported_features]
    assert supported == ([] if version == 3 else [("transaction.version", 0, 2)])
    assert decoded.finalized_features_epoch == 0
    assert [
        (f.name, f.min_version_level, f.max_version_level) for f in decoded.finalized_features
    ] == [("transaction.version", 2, 2)]


async def test_an_api_added_to_the_registry_is_advertised(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    registry.pop(ApiKey.METADATA, None)

    @handler(ApiKey.METADATA, min_version=1, max_version=9)
    async def metadata(ctx: Any, req: Any) -> dict[str, Any]:
        raise AssertionError("not called")

    client = await WireClient.connect(running.address)
    response = await client.call(_request(4))
    assert (ApiKey.METADATA, 1, 9) in _as_tuples(response.api_keys)


async def test_produce_is_advertised_from_version_zero(
    running: RunningServer, registry: dict[int, HandlerSpec]
) -> None:
    registry.pop(ApiKey.PRODUCE, None)

    @handler(ApiKey.PRODUCE)
    async def produce(ctx: Any, req: Any) -> None:
        return None

    spec = registry[ApiKey.PRODUCE]
    assert spec.advertised_min == 0 and spec.min_version == 3
    client = await WireClient.connect(running.address)
    response = await client.call(_request(0))
    assert (ApiKey.PRODUCE, 0, spec.max_version) in _as_tuples(response.api_keys)


@pytest.mark.parametrize("version", [6, 127])
async def test_newer_version_gets_a_v0_unsupported_version_answer(
    running: RunningServer, registry: dict[int, HandlerSpec], version: int
) -> None:
    client = await WireClient.connect(running.address)
    # a body this broker cannot know how to parse: it must not be parsed at all
    await client.send_raw(
        frame(request_header_v2(ApiKey.API_VERSIONS, version, 77) + b"\x05future\x00\x01\x02")
    )
    data = await client.read_frame()
    assert data is not None
    response = ApiVersionsResponse.decode(data, version=0, header=True)
    assert response.header.correlation_id == 77
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    # as Kafka: ApiVersions' own range only, the versions the client may retry with
    [own] = [e for e in _expected(registry) if e[0] == ApiKey.API_VERSIONS]
    assert _as_tuples(response.api_keys) == [own]
    # the client retries lower on the same connection
    retry = await client.call(_request(4), correlation_id=78)
    assert retry.error_code == ErrorCode.NONE


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("", "1.0"),
        ("bad name", "1.0"),
        ("-lead", "1.0"),
        ("trail.", "1.0"),
        ("ok", ""),
        ("ok", "1.0_rc1"),
    ],
)
async def test_invalid_client_software_is_invalid_request(
    running: RunningServer, name: str, version: str
) -> None:
    client = await WireClient.connect(running.address)
    request = ApiVersionsRequest[3](client_software_name=name, client_software_version=version)
    await client.send(request, correlation_id=9)
    data = await client.read_frame()
    assert data is not None
    # Kafka answers in the request's version (kafka-python would read any error as v0)
    correlation_id, response = decode_response(ApiKey.API_VERSIONS, 3, data)
    assert correlation_id == 9
    assert response.error_code == ErrorCode.INVALID_REQUEST
    assert list(response.api_keys) == []
    # the connection stays usable
    assert (await client.call(_request(3), correlation_id=10)).error_code == ErrorCode.NONE


@pytest.mark.parametrize(
    "value", ["librdkafka", "kafka-python", "2.16.1-rdkafka-2.16.0", "a", "A.b-9"]
)
def test_valid_software_fields(value: str) -> None:
    assert valid_software_field(value)


@pytest.mark.parametrize("value", ["", "-x", "x-", ".x", "x y", "x_y", "é", None])
def test_invalid_software_fields(value: str | None) -> None:
    assert not valid_software_field(value)


async def test_old_header_v1_request_for_v0(running: RunningServer) -> None:
    client = await WireClient.connect(running.address)
    await client.send_raw(frame(request_header_v1(ApiKey.API_VERSIONS, 0, 3)))
    data = await client.read_frame()
    assert data is not None
    response = ApiVersionsResponse.decode(data, version=0, header=True)
    assert response.header.correlation_id == 3
    assert _as_tuples(response.api_keys) == [
        (k["api_key"], k["min_version"], k["max_version"]) for k in advertised_api_keys()
    ]


async def test_start_server_fixture_is_isolated(start_server: StartServer) -> None:
    first = await start_server()
    second = await start_server()
    assert first.address != second.address
