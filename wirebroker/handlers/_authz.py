"""The handlers' authorization checks: the request's principal and host asked of the broker's
authorizer (`Services.authorizer`) for the operation the API needs on a resource
(wirebroker.security.checks, the table). Without an authorizer (`NoAuthorizer`) every check
passes, at no cost but a call.

    if not allowed(ctx, ResourceType.GROUP, group_id): answer GROUP_AUTHORIZATION_FAILED
    if not cluster(ctx): answer CLUSTER_AUTHORIZATION_FAILED
    denied = denied_names(ctx, ResourceType.TOPIC, names)   # the names refused
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from wirebroker.security.acls import AclOperation, ResourceType
from wirebroker.security.authorizer import CLUSTER_NAME
from wirebroker.security.checks import DENIED, operation

if TYPE_CHECKING:
    from wirebroker.handlers.context import RequestContext

__all__ = [
    "CLUSTER_DENIED",
    "FOLLOWER_ACTION",
    "allowed",
    "allowed_by_type",
    "cluster",
    "config_refusal",
    "denied_code",
    "denied_names",
    "enabled",
    "operations_bits",
]

#: every refusal, one DEBUG line (`wirebroker.authorizer`, as Kafka's authorizer logger)
denied_log = logging.getLogger("wirebroker.authorizer")

FOLLOWER_ACTION = AclOperation.CLUSTER_ACTION
#: the message of a CLUSTER_AUTHORIZATION_FAILED answered with one (Kafka's default text for
#: the error; Kafka's own answers to the ACL APIs carry "Request Request(processor=...) is
#: not authorized.", naming its internal request object)
CLUSTER_DENIED = "Cluster authorization failed."


def enabled(ctx: RequestContext) -> bool:
    """Whether an authorizer is configured (checks can refuse)."""
    return bool(ctx.services.authorizer.enabled)


def allowed(
    ctx: RequestContext,
    resource_type: ResourceType,
    name: str,
    op: AclOperation | None = None,
) -> bool:
    """May this request's principal do `op` (default: the API's, from the table) on it?"""
    authorizer = ctx.services.authorizer
    if not authorizer.enabled:
        return True
    if op is None:
        op = operation(int(ctx.header.api_key), resource_type)
    principal = ctx.session.principal
    if authorizer.authorize(principal, ctx.client_host, int(op), int(resource_type), name):
        return True
    # Kafka's authorizer log line (its kafka.authorizer.logger), at DEBUG here
    denied_log.debug(
        "Principal = %s is Denied operation = %s from host = %s on resource = %s:%s",
        principal,
        AclOperation(op).name,
        ctx.client_host,
        ResourceType(resource_type).name,
        name,
    )
    return False


def cluster(ctx: RequestContext, op: AclOperation | None = None) -> bool:
    """`allowed` on the CLUSTER resource."""
    return allowed(ctx, ResourceType.CLUSTER, CLUSTER_NAME, op)


def allowed_by_type(ctx: RequestContext, resource_type: ResourceType, op: AclOperation) -> bool:
    """KIP-679: may the principal do `op` on some resource of the type?"""
    authorizer = ctx.services.authorizer
    if not authorizer.enabled:
        return True
    return authorizer.authorize_by_resource_type(
        ctx.session.principal, ctx.client_host, int(op), int(resource_type)
    )


def denied_names(
    ctx: RequestContext,
    resource_type: ResourceType,
    names: Iterable[str],
    op: AclOperation | None = None,
) -> set[str]:
    """The names of `names` the principal may not do `op` (the API's) on."""
    if not enabled(ctx):
        return set()
    return {n for n in set(names) if not allowed(ctx, resource_type, n, op)}


def operations_bits(
    ctx: RequestContext, resource_type: ResourceType, name: str, supported: int
) -> int:
    """The authorized-operations bit set (bit n: AclOperation n) of `supported` this
    principal may do on the resource (all of them without an authorizer)."""
    if not enabled(ctx):
        return supported
    bits = 0
    for code in range(supported.bit_length()):
        if supported >> code & 1 and allowed(ctx, resource_type, name, AclOperation(code)):
            bits |= 1 << code
    return bits


#: Kafka's default text of each refusal (Errors.<code>.message())
DENIED_TEXT = {
    ResourceType.TOPIC: "Topic authorization failed.",
    ResourceType.GROUP: "Group authorization failed.",
    ResourceType.CLUSTER: "Cluster authorization failed.",
    ResourceType.TRANSACTIONAL_ID: "Transactional Id authorization failed.",
}
#: config resource type (DescribeConfigs & co: TOPIC 2, BROKER 4, BROKER_LOGGER 8,
#: CLIENT_METRICS 16, GROUP 32) -> the ACL resource its configs belong to
_CONFIG_RESOURCES = {
    2: ResourceType.TOPIC,
    4: ResourceType.CLUSTER,
    8: ResourceType.CLUSTER,
    16: ResourceType.CLUSTER,
    32: ResourceType.GROUP,
}


def config_refusal(
    ctx: RequestContext, config_resource_type: int, name: str
) -> tuple[ErrorCode, str] | None:
    """DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: (error, text) when the
    principal may not DESCRIBE_CONFIGS / ALTER_CONFIGS the resource, else None."""
    rtype = _CONFIG_RESOURCES.get(config_resource_type)
    if rtype is None:
        return None
    if rtype == ResourceType.CLUSTER:
        name = CLUSTER_NAME
    # the API's operation (DESCRIBE_CONFIGS / ALTER_CONFIGS) is the same on every resource
    op = operation(int(ctx.header.api_key), ResourceType.TOPIC)
    if allowed(ctx, rtype, name, op):
        return None
    return DENIED[rtype], DENIED_TEXT[rtype]


def denied_code(resource_type: ResourceType) -> ErrorCode:
    """Kafka's error for a denied operation on a resource of the type."""
    return DENIED[resource_type]
