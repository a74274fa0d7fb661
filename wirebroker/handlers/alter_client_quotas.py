"""AlterClientQuotas (key 49): serves v0-1 (flexible from 1), as Apache Kafka 4.4 does.

Any broker answers (Kafka's brokers forward it to the controller; here every broker writes
ZooKeeper's `/config/users/...`, `/config/clients/...`, `/config/ips/...` itself,
conditionally, through `Services.quota_configs`), once the change is stored and applied on
this broker, so a describe or the quota enforcement on it right after sees it (the other
brokers once their watches fire). One result per entity with Kafka's codes and texts
(wirebroker.security.client_quotas: entity checks, keys per entity type, whole and positive
values, duplicates; held to the oracle by tests/oracle/test_client_quota_answers.py);
`validate_only` answers the same and changes nothing. When the store cannot be written every
entity gets that error (UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT) with its message.

With an authorizer the principal needs ALTER_CONFIGS on the cluster, else every entity is
answered CLUSTER_AUTHORIZATION_FAILED and nothing changes (Kafka's getErrorResponse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.client_quotas import (
    AlterEntry,
    EntityResult,
    QuotaStoreError,
    make_entity,
)

if TYPE_CHECKING:
    from protocol.messages.alter_client_quotas import (
        AlterClientQuotasRequest,
        AlterClientQuotasResponse,
    )
    from wirebroker.handlers.context import RequestContext


@handler(ApiKey.ALTER_CLIENT_QUOTAS)
async def handle(ctx: RequestContext, req: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
    entries = [
        AlterEntry(
            tuple((e["entity_type"], e["entity_name"]) for e in entry["entity"]),
            tuple((op["key"], float(op["value"]), bool(op["remove"])) for op in entry["ops"]),
        )
        for entry in req["entries"]
    ]
    if not _authz.cluster(ctx):  # ALTER_CONFIGS
        entities = dict.fromkeys(make_entity(entry.components) for entry in entries)
        results = [
            EntityResult(entity, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _authz.CLUSTER_DENIED)
            for entity in entities
        ]
        return _response(results)
    try:
        results = await ctx.services.quota_configs.alter(
            entries, validate_only=bool(req["validate_only"])
        )
    except QuotaStoreError as exc:
        entities = dict.fromkeys(make_entity(entry.components) for entry in entries)
        results = [EntityResult(entity, exc.code, exc.message) for entity in entities]
    return _response(results)


def _response(results: list[EntityResult]) -> AlterClientQuotasResponse:
    return {
        "throttle_time_ms": 0,
        "entries": [
            {
                "error_code": int(r.error_code),
                "error_message": r.error_message,
                "entity": [{"entity_type": t, "entity_name": n} for t, n in r.entity],
            }
            for r in results
        ],
    }
