"""The handler registry and what ApiVersions derives from it (no sockets)."""

from __future__ import annotations

import inspect
import pkgutil
import sys
from typing import Any

import pytest

import wirebroker.handlers as handlers_package
from protocol.api import SCHEMAS, ApiKey
from wirebroker.handlers.api_versions import advertised_api_keys, unsupported_version_body
from wirebroker.handlers.registry import HandlerSpec, api_name, handler, load_handlers


async def _noop(ctx: Any, req: Any) -> None:
    return None


def test_versions_default_to_the_schema(registry: dict[int, HandlerSpec]) -> None:
    registry.pop(ApiKey.METADATA, None)
    handler(ApiKey.METADATA)(_noop)
    spec = registry[ApiKey.METADATA]
    assert (spec.min_version, spec.max_version) == tuple(SCHEMAS[ApiKey.METADATA].VALID_VERSIONS)
    assert spec.advertised_min == spec.min_version
    assert spec.name == "Metadata" or "metadata" in spec.name.lower()
    assert spec.serves(spec.max_version) and not spec.serves(spec.max_version + 1)


def test_a_handler_may_narrow_its_versions(registry: dict[int, HandlerSpec]) -> None:
    registry.pop(ApiKey.METADATA, None)
    handler(ApiKey.METADATA, min_version=2, max_version=5)(_noop)
    spec = registry[ApiKey.METADATA]
    assert [v for v in range(0, 14) if spec.serves(v)] == [2, 3, 4, 5]
    assert {
        "api_key": int(ApiKey.METADATA),
        "min_version": 2,
        "max_version": 5,
    } in advertised_api_keys()


@pytest.mark.parametrize(("lo", "hi"), [(-1, 3), (0, 99), (5, 4)])
def test_versions_outside_the_schema_are_refused(
    registry: dict[int, HandlerSpec], lo: int, hi: int
) -> None:
    registry.pop(ApiKey.METADATA, None)
    with pytest.raises(ValueError):
        handler(ApiKey.METADATA, min_version=lo, max_version=hi)(_noop)
    assert ApiKey.METADATA not in registry


def test_a_second_handler_for_one_api_is_refused(registry: dict[int, HandlerSpec]) -> None:
    registry.pop(ApiKey.METADATA, None)
    handler(ApiKey.METADATA)(_noop)

    async def other(ctx: Any, req: Any) -> None:
        return None

    with pytest.raises(ValueError):
        handler(ApiKey.METADATA)(other)
    assert registry[ApiKey.METADATA].func is _noop


def test_produce_advertises_from_zero_but_serves_from_the_schema_minimum(
    registry: dict[int, HandlerSpec],
) -> None:
    registry.pop(ApiKey.PRODUCE, None)
    handler(ApiKey.PRODUCE)(_noop)
    spec = registry[ApiKey.PRODUCE]
    schema_min = SCHEMAS[ApiKey.PRODUCE].VALID_VERSIONS[0]
    assert spec.advertised_min == 0
    assert spec.min_version == schema_min > 0
    assert not spec.serves(schema_min - 1)


def test_load_handlers_imports_every_handler_module(registry: dict[int, HandlerSpec]) -> None:
    loaded = load_handlers()
    assert loaded is registry
    for info in pkgutil.iter_modules(handlers_package.__path__, "wirebroker.handlers."):
        if not info.name.rsplit(".", 1)[-1].startswith("_"):
            assert info.name in sys.modules
    assert ApiKey.API_VERSIONS in loaded
    for key, spec in loaded.items():
        assert spec.api_key == key
        assert inspect.iscoroutinefunction(spec.func)
        lo, hi = SCHEMAS[key].VALID_VERSIONS
        assert lo <= spec.min_version <= spec.max_version <= hi


def test_advertised_keys_are_exactly_the_registered_ones(registry: dict[int, HandlerSpec]) -> None:
    load_handlers()
    keys = [entry["api_key"] for entry in advertised_api_keys()]
    assert keys == sorted(registry)
    body = unsupported_version_body()
    assert body["error_code"] == 35
    # as Kafka: only ApiVersions' own range, so the client retries with its highest version
    assert body["api_keys"] == [k for k in advertised_api_keys() if k["api_key"] == 18]
    assert len(body["api_keys"]) == 1


def test_api_names_for_log_lines() -> None:
    assert "version" in api_name(int(ApiKey.API_VERSIONS)).lower()
    assert api_name(30000) == "unknown(30000)"
