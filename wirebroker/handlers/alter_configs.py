"""AlterConfigs (key 33), versions 0-2 (the legacy, replace-everything API).

Per resource (Kafka 4.x: the broker's ConfigAdminManager.preprocess, then the controller's
ConfigurationControlManager.legacyAlterConfigs and its validator):

    (type, name) twice            INVALID_REQUEST "Each resource must appear at most once."
    a config name twice           INVALID_REQUEST "Error due to duplicate config keys"
    null values                   INVALID_REQUEST "Null value not supported for : a, b"
    TOPIC (2)                     the given configs *replace* all the topic's overrides (a
                                  key left out returns to its default). Empty name:
                                  INVALID_REQUEST "Default topic resources are not allowed.";
                                  illegal name: INVALID_TOPIC_EXCEPTION; unknown or bad
                                  configs: INVALID_CONFIG (Kafka's messages, see _configs);
                                  then unknown topic: UNKNOWN_TOPIC_OR_PARTITION "The topic
                                  't' does not exist."
    BROKER (4)                    name must be "" (the cluster-wide default) or this node id
                                  ("Node id must be an integer, but it is: x" / "Unexpected
                                  broker id, expected 0, but received 5", INVALID_REQUEST).
                                  The configs replace all the dynamic configs of that level
                                  (an empty list clears them); read-only keys and bad values
                                  refused as Kafka refuses them (wirebroker.handlers.
                                  _broker_configs); applied to the running broker(s) before
                                  the answer (wirebroker.dynamic_configs).
    GROUP (32)                    the configs given replace all the group's overrides
                                  (wirebroker.handlers._group_configs; Kafka's checks and
                                  texts); empty name: INVALID_REQUEST "Default group resources
                                  are not allowed."
    any other type                INVALID_REQUEST "Unknown resource type 8" (legacy
                                  AlterConfigs never served BROKER_LOGGER; CLIENT_METRICS
                                  configs do not exist in wirebroker)

`validate_only` checks everything and changes nothing. Applied topic configs take effect on
the live logs at once (TopicAdmin.alter_topic_configs). Results: `error_code`,
`error_message`, `resource_type`, `resource_name`, in request order.

Skipped: authorization, AlterConfigPolicy, throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._broker_configs import legacy_compute
from wirebroker.handlers._configs import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ConfigRequestError,
    alter_resources,
    apply_topic_overrides,
    check_broker_resource_name,
    check_config_list,
    check_topic_resource_name,
    settle_topic_changes,
    update_broker_configs,
)
from wirebroker.handlers._group_configs import alter_group_configs, check_group_name
from wirebroker.handlers._group_configs import legacy_compute as group_legacy_compute
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.alter_configs import (
        AlterConfigsRequest,
        AlterConfigsResource,
        AlterConfigsResponse,
    )


async def _alter(ctx: RequestContext, resource: AlterConfigsResource, validate_only: bool) -> None:
    services = ctx.services
    configs = list(resource["configs"] or [])
    check_config_list(configs, null_allowed_for_delete=False)
    rtype = int(resource["resource_type"])
    if rtype == RESOURCE_BROKER:
        name = resource["resource_name"]
        check_broker_resource_name(name, services.node_id, allow_empty=True, describe=False)
        compute = legacy_compute(
            services.config, {c["name"]: str(c["value"]) for c in configs}, name == ""
        )
        await update_broker_configs(services, name, compute, validate_only)
        return
    if rtype == RESOURCE_GROUP:
        name = check_group_name(resource["resource_name"])
        compute = group_legacy_compute(
            services.config, {c["name"]: str(c["value"]) for c in configs}
        )
        await alter_group_configs(services, name, compute, validate_only)
        return
    if rtype != RESOURCE_TOPIC:
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {rtype}")
    name = check_topic_resource_name(resource["resource_name"])
    apply_topic_overrides(
        services.admin, name, {c["name"]: c["value"] for c in configs}, validate_only
    )


async def _authorized_alter(
    ctx: RequestContext, resource: AlterConfigsResource, validate_only: bool
) -> None:
    """`_alter`, once the principal may ALTER_CONFIGS the resource."""
    refusal = _authz.config_refusal(ctx, int(resource["resource_type"]), resource["resource_name"])
    if refusal is not None:
        raise ConfigRequestError(*refusal)
    await _alter(ctx, resource, validate_only)


@handler(ApiKey.ALTER_CONFIGS)
async def handle(ctx: RequestContext, req: AlterConfigsRequest) -> AlterConfigsResponse:
    validate_only = bool(req["validate_only"])
    response = await alter_resources(
        req["resources"],
        validate_only,
        lambda resource, validate_only: _authorized_alter(ctx, resource, validate_only),
    )
    if not validate_only:
        await settle_topic_changes(ctx.services.admin, response)
    return response
