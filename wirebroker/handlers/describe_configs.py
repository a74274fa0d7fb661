"""DescribeConfigs (key 32), versions 1-4.

Per resource (Kafka 4.x ConfigHelper.describeConfigs; values, sources and synonyms are
computed by `wirebroker.handlers._configs`, whose docstring gives the rules):

    TOPIC (2)          illegal name: INVALID_TOPIC_EXCEPTION (message says why); unknown
                       topic: UNKNOWN_TOPIC_OR_PARTITION (no message); else every topic config
    BROKER (4)         name = this node id: every broker config; "" : the cluster-wide dynamic
                       defaults set (wirebroker.handlers._broker_configs); another id:
                       INVALID_REQUEST "Unexpected broker id, expected 0 or empty string, but
                       received 5"; not a number: "Broker id must be an integer, but it is: x"
    BROKER_LOGGER (8)  name = this node id: every logger with its level; "" : INVALID_REQUEST
                       "Broker id must not be empty"; another id: "Unexpected broker id,
                       expected 0 but received 5"
    GROUP (32)         any name, an existing group or not: every group config, the group's
                       overrides with source DYNAMIC_GROUP_CONFIG (8), in Kafka's order (not
                       sorted; wirebroker.handlers._group_configs); "": INVALID_REQUEST
                       "Group name must not be empty"
    CLIENT_METRICS (16)
                       INVALID_REQUEST "Unsupported resource type: CLIENT_METRICS" (Kafka
                       serves them; wirebroker has no client-metrics subscriptions)
    any other type     Kafka fails the whole request: every resource gets INVALID_REQUEST
                       with Kafka's generic message

`configuration_keys` null or empty: every config; else only those named (unknown names are
left out silently). `include_synonyms` adds the synonyms, `include_documentation` (v3+) the
doc string; `config_type` is sent from v3. Entries are sorted by name (a group's: in Kafka's
order). A result's error_message is Kafka's text of its error, "" when there is none (success,
or an error such as UNKNOWN_TOPIC_OR_PARTITION that Kafka sends without a message).

Skipped: authorization (everything is describable), throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._broker_configs import describe_broker_configs, describe_default_configs
from wirebroker.handlers._configs import (
    INVALID_REQUEST_MESSAGE,
    KNOWN_RESOURCE_TYPES,
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    RESOURCE_TYPE_NAMES,
    ConfigEntry,
    ConfigRequestError,
    as_request_error,
    check_broker_resource_name,
    describe_loggers,
    describe_topic_configs,
    filter_entries,
)
from wirebroker.handlers._group_configs import describe_group_configs
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler
from wirebroker.metadata.names import validate_topic_name

if TYPE_CHECKING:
    from protocol.messages.describe_configs import (
        DescribeConfigsRequest,
        DescribeConfigsResource,
        DescribeConfigsResourceResult,
        DescribeConfigsResponse,
        DescribeConfigsResult,
    )


def _entries(ctx: RequestContext, resource: DescribeConfigsResource) -> list[ConfigEntry]:
    services = ctx.services
    rtype = int(resource["resource_type"])
    name = resource["resource_name"]
    if rtype == RESOURCE_TOPIC:
        with as_request_error():
            validate_topic_name(name)
        info = services.admin.describe(name)
        if info is None:
            raise ConfigRequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        return describe_topic_configs(services.config, info.configs)
    if rtype == RESOURCE_BROKER:
        check_broker_resource_name(name, services.node_id, allow_empty=True, describe=True)
        if not name:
            return describe_default_configs(services.config)
        return describe_broker_configs(services.config)
    if rtype == RESOURCE_BROKER_LOGGER:
        check_broker_resource_name(name, services.node_id, allow_empty=False, describe=True)
        return describe_loggers()
    if rtype == RESOURCE_GROUP:
        return describe_group_configs(services, name)
    raise ConfigRequestError(
        ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {RESOURCE_TYPE_NAMES[rtype]}"
    )


@handler(ApiKey.DESCRIBE_CONFIGS)
async def handle(ctx: RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse:
    resources = list(req["resources"] or [])
    include_synonyms = bool(req.get("include_synonyms", False))
    include_documentation = bool(req.get("include_documentation", False))
    if any(int(r["resource_type"]) not in KNOWN_RESOURCE_TYPES for r in resources):
        return {
            "throttle_time_ms": 0,
            "results": [
                {
                    "error_code": ErrorCode.INVALID_REQUEST,
                    "error_message": INVALID_REQUEST_MESSAGE,
                    "resource_type": int(r["resource_type"]),
                    "resource_name": r["resource_name"],
                    "configs": [],
                }
                for r in resources
            ],
        }
    results: list[DescribeConfigsResult] = []
    for resource in resources:
        configs: list[DescribeConfigsResourceResult] = []
        try:
            refusal = _authz.config_refusal(
                ctx, int(resource["resource_type"]), resource["resource_name"]
            )
            if refusal is not None:
                raise ConfigRequestError(*refusal)
            entries = filter_entries(_entries(ctx, resource), resource["configuration_keys"])
        except ConfigRequestError as exc:
            code, message = exc.error_code, exc.message or ""
        else:
            code, message = ErrorCode.NONE, ""
            configs = [
                e.describe_dict(
                    include_synonyms=include_synonyms,
                    include_documentation=include_documentation,
                )
                for e in entries
            ]
        results.append(
            {
                "resource_type": int(resource["resource_type"]),
                "resource_name": resource["resource_name"],
                "error_code": code,
                "error_message": message,
                "configs": configs,
            }
        )
    return {"throttle_time_ms": 0, "results": results}
