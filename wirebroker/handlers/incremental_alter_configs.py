"""IncrementalAlterConfigs (key 44), versions 0-1.

Each config carries an operation: SET (0), DELETE (1), APPEND (2), SUBTRACT (3). Per resource
(Kafka 4.x: the broker's ConfigAdminManager.preprocess, then the controller's
ConfigurationControlManager.incrementalAlterConfigs and its validator):

    (type, name) twice            INVALID_REQUEST "Each resource must appear at most once."
    a config name twice           INVALID_REQUEST "Error due to duplicate config keys"
    null value (not DELETE)       INVALID_REQUEST "Null value not supported for : a, b"
    TOPIC (2)                     ops apply to the topic's current overrides: SET replaces,
                                  DELETE removes (a key not set, even an unknown one, is a
                                  no-op), APPEND/SUBTRACT add/remove comma-separated items of
                                  a LIST config (starting from its default when not set) --
                                  on another type INVALID_CONFIG "Can't APPEND to key k
                                  because its type is not LIST."; an unknown operation:
                                  INVALID_REQUEST. Then the resulting overrides are validated
                                  (INVALID_CONFIG, Kafka's messages) and the topic must exist
                                  (UNKNOWN_TOPIC_OR_PARTITION "The topic 't' does not
                                  exist."). Name checks as AlterConfigs.
    BROKER (4)                    name "" (the cluster-wide default) or this node id
                                  (INVALID_REQUEST otherwise). The ops apply to that level's
                                  dynamic configs: SET, DELETE (a no-op for a key not set),
                                  APPEND/SUBTRACT on a LIST key from its effective value
                                  (INVALID_CONFIG "Config value append is not allowed for
                                  config key: k" otherwise); read-only keys and bad values are
                                  refused as Kafka refuses them (INVALID_REQUEST "Cannot update
                                  these configs dynamically: [k]"; wirebroker.handlers.
                                  _broker_configs); applied before the answer.
    BROKER_LOGGER (8)             name must be this node id; SET a logger's level (FATAL,
                                  ERROR, WARN, INFO, DEBUG, TRACE) or DELETE it (inherit; not
                                  for "root"); Python loggers stand in for log4j's. APPEND /
                                  SUBTRACT: INVALID_REQUEST. Unknown logger: INVALID_CONFIG
                                  "Logger x does not exist!".
    GROUP (32)                    a group's config overrides (wirebroker.handlers.
                                  _group_configs): SET / DELETE, then the result is checked
                                  (INVALID_CONFIG, Kafka's texts); APPEND / SUBTRACT refused;
                                  empty name: INVALID_REQUEST "Default group resources are not
                                  allowed."; applied on this broker before the answer.
    CLIENT_METRICS (16), other types
                                  INVALID_REQUEST "Unknown resource type 16" (wirebroker has no
                                  such configs; Kafka answers unknown types with
                                  UNSUPPORTED_VERSION once past its broker-side checks, which
                                  already refuse them with this message)

`validate_only` checks everything and changes nothing. Applied topic configs take effect on
the live logs at once (TopicAdmin.alter_topic_configs). Results in request order.

Skipped: authorization, AlterConfigPolicy, throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._broker_configs import incremental_compute
from wirebroker.handlers._configs import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    ConfigRequestError,
    alter_loggers,
    alter_resources,
    apply_incremental,
    apply_topic_overrides,
    check_broker_resource_name,
    check_config_list,
    check_topic_resource_name,
    settle_topic_changes,
    update_broker_configs,
)
from wirebroker.handlers._group_configs import alter_group_configs, check_group_name
from wirebroker.handlers._group_configs import incremental_compute as group_incremental_compute
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.incremental_alter_configs import (
        AlterConfigsResource,
        IncrementalAlterConfigsRequest,
        IncrementalAlterConfigsResponse,
    )


async def _alter(ctx: RequestContext, resource: AlterConfigsResource, validate_only: bool) -> None:
    services = ctx.services
    configs = list(resource["configs"] or [])
    check_config_list(configs, null_allowed_for_delete=True)
    ops = [(c["name"], int(c["config_operation"]), c["value"]) for c in configs]
    rtype = int(resource["resource_type"])
    name = resource["resource_name"]
    if rtype == RESOURCE_BROKER_LOGGER:
        check_broker_resource_name(name, services.node_id, allow_empty=False, describe=False)
        alter_loggers(ops, validate_only=validate_only)
        return
    if rtype == RESOURCE_BROKER:
        check_broker_resource_name(name, services.node_id, allow_empty=True, describe=False)
        compute = incremental_compute(services.config, ops, name == "")
        await update_broker_configs(services, name, compute, validate_only)
        return
    if rtype == RESOURCE_GROUP:
        name = check_group_name(name)
        compute = group_incremental_compute(services.config, ops)
        await alter_group_configs(services, name, compute, validate_only)
        return
    if rtype != RESOURCE_TOPIC:
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {rtype}")
    name = check_topic_resource_name(name)
    info = services.admin.describe(name)
    current = dict(info.configs) if info is not None else {}
    apply_topic_overrides(services.admin, name, apply_incremental(current, ops), validate_only)


async def _authorized_alter(
    ctx: RequestContext, resource: AlterConfigsResource, validate_only: bool
) -> None:
    """`_alter`, once the principal may ALTER_CONFIGS the resource."""
    refusal = _authz.config_refusal(ctx, int(resource["resource_type"]), resource["resource_name"])
    if refusal is not None:
        raise ConfigRequestError(*refusal)
    await _alter(ctx, resource, validate_only)


@handler(ApiKey.INCREMENTAL_ALTER_CONFIGS)
async def handle(
    ctx: RequestContext, req: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    validate_only = bool(req["validate_only"])
    response = await alter_resources(
        req["resources"],
        validate_only,
        lambda resource, validate_only: _authorized_alter(ctx, resource, validate_only),
    )
    if not validate_only:
        await settle_topic_changes(ctx.services.admin, response)
    return response
