"""DescribeUserScramCredentials (key 50): serves v0, as Apache Kafka 4.4 does.

The users' credentials as this broker knows them (`Services.scram_users`: in a cluster, its
mirror of ZooKeeper's `/config/users`), in Kafka's answer: per user the mechanisms (1
SCRAM-SHA-256, 2 SCRAM-SHA-512) and iteration counts, never a salt or key; no users (null or
[]) describes every user with a credential; an unknown user RESOURCE_NOT_FOUND, a user named
twice DUPLICATE_RESOURCE, with Kafka's texts (wirebroker.security.credentials, held to the
oracle by tests/oracle/test_scram_credentials.py). The top-level error is NONE with an empty
message, as Kafka sends it.

Authorization (with an authorizer): DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED
at the top and for each user asked. Skipped: throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.describe_user_scram_credentials import (
        DescribeUserScramCredentialsRequest,
        DescribeUserScramCredentialsResponse,
    )
    from wirebroker.handlers.context import RequestContext


def _denied(users: list[Any] | None) -> DescribeUserScramCredentialsResponse:
    """Without DESCRIBE on the cluster: the error at the top and for each user asked."""
    code = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return {
        "throttle_time_ms": 0,
        "error_code": code,
        "error_message": _authz.CLUSTER_DENIED,
        "results": [
            {
                "user": u["name"],
                "error_code": code,
                "error_message": _authz.CLUSTER_DENIED,
                "credential_infos": [],
            }
            for u in users or []
        ],
    }


@handler(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
async def handle(
    ctx: RequestContext, req: DescribeUserScramCredentialsRequest
) -> DescribeUserScramCredentialsResponse:
    users = req["users"]
    if not _authz.cluster(ctx):  # DESCRIBE
        return _denied(users)
    described = ctx.services.scram_users.describe(
        None if users is None else [u["name"] for u in users]
    )
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": "",
        "results": [
            {
                "user": d.user,
                "error_code": int(d.error_code),
                "error_message": d.error_message,
                "credential_infos": [
                    {"mechanism": mechanism, "iterations": iterations}
                    for mechanism, iterations in d.credentials
                ],
            }
            for d in described
        ],
    }
