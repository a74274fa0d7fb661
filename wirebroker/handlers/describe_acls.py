"""DescribeAcls (key 29): serves v1-3, as Apache Kafka 4.4 does.

The filter (`handlers._acls.acl_filter`: an UNKNOWN code closes the connection, as Kafka) goes
to the broker's authorizer (`Services.authorizer`, wirebroker.security.acls). Without one
(`NoAuthorizer`, Kafka's default) the answer is SECURITY_DISABLED "No Authorizer is configured
on the broker" with no resources; an authorizer's bindings are answered grouped by resource
pattern, error_code NONE and error_message "" (as Kafka 4.4 sends it). With an authorizer the
principal needs DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED with no
resources. Skipped: throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._acls import acl_filter, resources
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclError

if TYPE_CHECKING:
    from protocol.messages.describe_acls import (
        DescribeAclsRequest,
        DescribeAclsResource,
        DescribeAclsResponse,
    )
    from wirebroker.handlers.context import RequestContext


@handler(ApiKey.DESCRIBE_ACLS)
async def handle(ctx: RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse:
    wanted = acl_filter(req)
    if not _authz.cluster(ctx):  # DESCRIBE
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            "error_message": _authz.CLUSTER_DENIED,
            "resources": [],
        }
    try:
        bindings = await ctx.services.authorizer.describe_acls(wanted)
    except AclError as exc:
        return {
            "throttle_time_ms": 0,
            "error_code": int(exc.code),
            "error_message": exc.message,
            "resources": [],
        }
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": "",  # Kafka 4.4 sends "" (tests/oracle/test_acl_authorizer.py)
        "resources": cast("list[DescribeAclsResource]", resources(bindings)),
    }
