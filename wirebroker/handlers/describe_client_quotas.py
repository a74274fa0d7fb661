"""DescribeClientQuotas (key 48): serves v0-1 (flexible from 1), as Apache Kafka 4.4 does.

The quota entities as this broker knows them (`Services.quota_configs`: in a cluster, its
mirror of ZooKeeper's `/config/users`, `/config/clients`, `/config/ips`), filtered as Kafka
filters them (wirebroker.security.client_quotas: EXACT / DEFAULT / SPECIFIED components,
`strict`), with Kafka's codes and texts for a bad filter (held to the oracle by
tests/oracle/test_client_quota_answers.py). A default entity's name is null.

With an authorizer the principal needs DESCRIBE_CONFIGS on the cluster, else the answer is
CLUSTER_AUTHORIZATION_FAILED with no entries (Kafka's getErrorResponse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.client_quotas import FilterComponent

if TYPE_CHECKING:
    from protocol.messages.describe_client_quotas import (
        DescribeClientQuotasRequest,
        DescribeClientQuotasResponse,
    )
    from wirebroker.handlers.context import RequestContext


@handler(ApiKey.DESCRIBE_CLIENT_QUOTAS)
async def handle(
    ctx: RequestContext, req: DescribeClientQuotasRequest
) -> DescribeClientQuotasResponse:
    if not _authz.cluster(ctx):  # DESCRIBE_CONFIGS
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            "error_message": _authz.CLUSTER_DENIED,
            "entries": None,
        }
    components = [
        FilterComponent(c["entity_type"], int(c["match_type"]), c["match"])
        for c in req["components"]
    ]
    code, message, found = ctx.services.quota_configs.quotas.describe(
        components, bool(req["strict"])
    )
    if found is None:
        return {
            "throttle_time_ms": 0,
            "error_code": int(code),
            "error_message": message,
            "entries": None,
        }
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": "",
        "entries": [
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
            }
            for entity, values in found
        ],
    }
