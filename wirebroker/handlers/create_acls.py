"""CreateAcls (key 30): serves v1-3, as Apache Kafka 4.4 does.

Each creation (`handlers._acls.binding`: an UNKNOWN code closes the connection, as Kafka) goes
to the broker's authorizer (`Services.authorizer`, wirebroker.security.acls), which answers
each one: created (NONE, message "", as Kafka 4.4) or refused. Without an authorizer
(`NoAuthorizer`, Kafka's default) every creation gets SECURITY_DISABLED "No Authorizer is
configured."; no creations, no results. With an authorizer the principal needs ALTER on the
cluster, else CLUSTER_AUTHORIZATION_FAILED for each creation. Skipped: throttling
(throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers._acls import binding, error_fields
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclError

if TYPE_CHECKING:
    from protocol.messages.create_acls import (
        AclCreationResult,
        CreateAclsRequest,
        CreateAclsResponse,
    )
    from wirebroker.handlers.context import RequestContext


@handler(ApiKey.CREATE_ACLS)
async def handle(ctx: RequestContext, req: CreateAclsRequest) -> CreateAclsResponse:
    bindings = [binding(c) for c in req.get("creations") or []]
    if not _authz.cluster(ctx):  # ALTER
        denied = AclError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _authz.CLUSTER_DENIED)
        outcomes: list[AclError | None] = [denied] * len(bindings)
    else:
        outcomes = await ctx.services.authorizer.create_acls(bindings)
    # a creation's success carries "" as Kafka 4.4 sends it (DeleteAcls: null)
    results = [cast("AclCreationResult", error_fields(e, success="")) for e in outcomes]
    return {"throttle_time_ms": 0, "results": results}
