"""AlterUserScramCredentials (key 51): serves v0, as Apache Kafka 4.4 does.

Any broker answers (Kafka's brokers forward it to the controller; here every broker writes
ZooKeeper's `/config/users/<user>` itself, conditionally, through `Services.scram_users`), and
answers once the change is stored and applied on this broker, so a describe or a SCRAM
authentication on it right after sees it (the other brokers once their watches fire). Per user
Kafka's codes and texts (wirebroker.security.credentials: duplicates, empty names, unknown
mechanisms, iteration bounds, missing credentials; held to the oracle by
tests/oracle/test_scram_credentials.py). The salted password is turned into StoredKey and
ServerKey at once; no password or salted password is kept. When the store cannot be written
(ZooKeeper unreachable, not applied in time) every user of the request gets that error
(UNKNOWN_SERVER_ERROR, REQUEST_TIMED_OUT) with its message.

Authorization (with an authorizer): ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED
for every user, nothing stored. Skipped: throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.credentials import ScramDeletion, ScramUpsertion, UserAlterResult
from wirebroker.security.scram_users import ScramStoreError

if TYPE_CHECKING:
    from protocol.messages.alter_user_scram_credentials import (
        AlterUserScramCredentialsRequest,
        AlterUserScramCredentialsResponse,
    )
    from wirebroker.handlers.context import RequestContext


@handler(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
async def handle(
    ctx: RequestContext, req: AlterUserScramCredentialsRequest
) -> AlterUserScramCredentialsResponse:
    deletions = [ScramDeletion(d["name"], d["mechanism"]) for d in req["deletions"]]
    upsertions = [
        ScramUpsertion(
            u["name"],
            u["mechanism"],
            u["iterations"],
            bytes(u["salt"]),
            bytes(u["salted_password"]),
        )
        for u in req["upsertions"]
    ]
    names = dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions])
    try:
        if not _authz.cluster(ctx):  # ALTER
            raise ScramStoreError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _authz.CLUSTER_DENIED)
        results = await ctx.services.scram_users.alter(deletions, upsertions)
    except ScramStoreError as exc:
        results = [UserAlterResult(name, exc.code, exc.message) for name in names]
    return {
        "throttle_time_ms": 0,
        "results": [
            {"user": r.user, "error_code": int(r.error_code), "error_message": r.error_message}
            for r in results
        ],
    }
