"""DeleteAcls (key 31): serves v1-3, as Apache Kafka 4.4 does.

Each filter (`handlers._acls.acl_filter`: an UNKNOWN code closes the connection, as Kafka) goes
to the broker's authorizer (`Services.authorizer`, wirebroker.security.acls), which answers
each one: the ACLs it deleted (NONE, message null, each deleted ACL with NONE) or a refusal
with no matching ACLs. Without an authorizer (`NoAuthorizer`, Kafka's default) every filter
gets SECURITY_DISABLED "No Authorizer is configured."; no filters, no results. With an
authorizer the principal needs ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for
each filter. Skipped: throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._acls import acl_fields, acl_filter, error_fields
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclDeleteResult, AclError

if TYPE_CHECKING:
    from protocol.messages.delete_acls import (
        DeleteAclsFilterResult,
        DeleteAclsRequest,
        DeleteAclsResponse,
    )
    from wirebroker.handlers.context import RequestContext
    from wirebroker.security.acls import AclBinding, AclDeleteResult


def _matching(b: AclBinding) -> dict[str, Any]:
    return {
        **error_fields(None),
        "resource_type": b.resource_type,
        "resource_name": b.resource_name,
        "pattern_type": b.pattern_type,
        **acl_fields(b),
    }


def _result(outcome: AclDeleteResult) -> DeleteAclsFilterResult:
    return cast(
        "DeleteAclsFilterResult",
        {**error_fields(outcome.error), "matching_acls": [_matching(b) for b in outcome.deleted]},
    )


@handler(ApiKey.DELETE_ACLS)
async def handle(ctx: RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse:
    filters = [acl_filter(f) for f in req.get("filters") or []]
    if not _authz.cluster(ctx):  # ALTER
        denied = AclDeleteResult(
            AclError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _authz.CLUSTER_DENIED)
        )
        outcomes = [denied] * len(filters)
    else:
        outcomes = await ctx.services.authorizer.delete_acls(filters)
    return {"throttle_time_ms": 0, "filter_results": [_result(o) for o in outcomes]}
