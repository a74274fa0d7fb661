"""ListConfigResources (API key 74; v0 was ListClientMetricsResources, KIP-1000): serves v0-1.

The config resources a client may describe, as Kafka 4.1+ lists them (KIP-1142):

    supported types     v0: CLIENT_METRICS (16) only; v1: TOPIC (2), BROKER (4),
                        BROKER_LOGGER (8), CLIENT_METRICS (16), GROUP (32)
    resource_types      (v1) the types wanted; empty: every supported type. A type the
                        version does not support fails the whole request with
                        UNSUPPORTED_VERSION and no resources.
    order               Kafka's: GROUP, CLIENT_METRICS, BROKER_LOGGER, BROKER, TOPIC
    GROUP               every group with config overrides (existing as a group or not), by
                        name (Kafka's order is its hash map's; kafka-configs --entity-type
                        groups --describe looks a group up here)
    CLIENT_METRICS      client metrics subscriptions (KIP-714): none here
    BROKER_LOGGER,      each live broker's id (a single broker: itself), once per type
    BROKER
    TOPIC               every topic, internal ones included (what Metadata lists)

Skipped: authorization (Kafka answers CLUSTER_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS
on the cluster); throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers._configs import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
)
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.list_config_resources import (
        ListConfigResourcesRequest,
        ListConfigResourcesResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["handle", "supported_types"]

_V1_TYPES = (
    RESOURCE_GROUP,
    RESOURCE_CLIENT_METRICS,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
)


def supported_types(version: int) -> tuple[int, ...]:
    """The resource types `version` lists, in the order of the answer."""
    return _V1_TYPES if version >= 1 else (RESOURCE_CLIENT_METRICS,)


@handler(ApiKey.LIST_CONFIG_RESOURCES)
async def handle(
    ctx: RequestContext, req: ListConfigResourcesRequest
) -> ListConfigResourcesResponse:
    supported = supported_types(ctx.api_version)
    wanted = {int(t) for t in req.get("resource_types") or ()} or set(supported)
    if not wanted <= set(supported):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "config_resources": [],
        }
    services = ctx.services
    brokers = [str(b.node_id) for b in services.cluster.live_brokers()]
    names: dict[int, list[str]] = {
        RESOURCE_BROKER_LOGGER: brokers,
        RESOURCE_BROKER: brokers,
        RESOURCE_TOPIC: [info.name for info in services.cluster.all_topics()],
        RESOURCE_GROUP: sorted(services.group_configs.all()),
    }
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "config_resources": [
            {"resource_name": name, "resource_type": kind}
            for kind in supported
            if kind in wanted
            for name in names.get(kind, ())
        ],
    }
