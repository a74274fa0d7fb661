"""ApiVersions (key 18), versions 0-5.

Every connection starts with this request: aiokafka sends v0, kafkajs v2, librdkafka v3,
kafka-python v4, the Java client 4.4 v5. The answer lists every API that has a registered
handler with the versions it advertises (`wirebroker.handlers.registry`), so the broker never
claims an API it cannot serve.

Request
    v3+ carries `client_software_name` / `client_software_version`. Kafka checks both against
    `[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?` (ApiVersionsRequest.isValid); when either does
    not match, the answer is INVALID_REQUEST (42) with an empty API list, as Kafka's.
    v5+ (KIP-1242) carries `cluster_id` (nullable) and `node_id` (-1): the broker the client
    means to reach. One without the other is INVALID_REQUEST (also isValid); both given and
    either differing from this broker's is REBOOTSTRAP_REQUIRED (129), empty API list, so the
    client drops its stale metadata and bootstraps again. Neither given: no check.
Response
    `error_code`, `api_keys` [(`api_key`, `min_version`, `max_version`)], `throttle_time_ms` (v1+,
    always 0). v3+ tagged fields: SupportedFeatures lists `transaction.version` 0..2 from v4 on
    (KIP-1022: a v3 client may not read a supported range starting at 0, so Kafka leaves such
    features out of a v3 answer; it lists them from v4), and,
    when the broker's `transaction.version` is above 0, FinalizedFeaturesEpoch and
    FinalizedFeatures carry the finalized level (`wirebroker.txn.version`; clients use
    KIP-890 part 2 at level 2). Below level 2, Produce is capped at v11 and EndTxn /
    TxnOffsetCommit at v4 (the TV2 versions). ZkMigrationReady stays at its default.
Newer version than served (v6+)
    Not a handler call: `wirebroker.handlers.dispatcher` answers with `unsupported_version_body()`
    encoded as a v0 response (header v0): UNSUPPORTED_VERSION (35) listing only ApiVersions'
    own range, as Kafka's, so the client retries with the highest version listed (KIP-511).

Skipped: features other than transaction.version (KIP-584); throttling does not exist.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import HANDLERS, handler
from wirebroker.txn import version as txn_version

if TYPE_CHECKING:
    from protocol.messages.api_versions import (
        ApiVersion,
        ApiVersionsRequest,
        ApiVersionsResponse,
        SupportedFeatureKey,
    )

#: Kafka's ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN (whole-string match).
_SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
#: From v5 the request names the cluster and node it means (KIP-1242).
_CLUSTER_CHECK_VERSION = 5
#: Below v4, supported features whose range starts at 0 are left out (KIP-1022).
_ZERO_MIN_FEATURES_VERSION = 4


def valid_software_field(value: str | None) -> bool:
    """True when a client_software_name/version is acceptable to Kafka."""
    return value is not None and _SOFTWARE_NAME_VERSION.fullmatch(value) is not None


def advertised_api_keys(transaction_version: int = txn_version.MAX_LEVEL) -> list[ApiVersion]:
    """The `api_keys` array: every registered API, by key, with its advertised range (the
    TV2 versions left out below transaction.version 2)."""
    caps = txn_version.TV1_MAX_VERSIONS if transaction_version < txn_version.MAX_LEVEL else {}
    return [
        {
            "api_key": spec.api_key,
            "min_version": spec.advertised_min,
            "max_version": min(spec.max_version, caps.get(spec.api_key, spec.max_version)),
        }
        for spec in sorted(HANDLERS.values(), key=lambda s: s.api_key)
    ]


def _features(response: ApiVersionsResponse, level: int, version: int) -> None:
    """KIP-584 features of a v3+ answer: transaction.version supported 0..2 (from v4 on: its
    range starts at 0, KIP-1022), finalized at `level` (not listed at 0, as Kafka omits
    level-0 features)."""
    supported: list[SupportedFeatureKey] = [
        {"name": txn_version.FEATURE, "min_version": 0, "max_version": txn_version.MAX_LEVEL}
    ]
    response["supported_features"] = [
        f for f in supported if version >= _ZERO_MIN_FEATURES_VERSION or f["min_version"] > 0
    ]
    if level > 0:
        response["finalized_features_epoch"] = txn_version.FINALIZED_FEATURES_EPOCH
        response["finalized_features"] = [
            {"name": txn_version.FEATURE, "max_version_level": level, "min_version_level": level}
        ]


def unsupported_version_body() -> ApiVersionsResponse:
    """The v0 body answering an ApiVersions request of a version newer than served: the error
    and ApiVersions' own range only (Kafka's ApiVersionsRequest.getErrorResponse)."""
    own = [k for k in advertised_api_keys() if k["api_key"] == ApiKey.API_VERSIONS]
    return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": own}


def _request_error(ctx: RequestContext, req: ApiVersionsRequest) -> ErrorCode:
    """INVALID_REQUEST / REBOOTSTRAP_REQUIRED / NONE, in Kafka's order (isValid first)."""
    version = ctx.api_version
    cluster_id, node_id = req.get("cluster_id"), int(req.get("node_id", -1))
    if version >= _CLUSTER_CHECK_VERSION and (cluster_id is None) != (node_id == -1):
        return ErrorCode.INVALID_REQUEST
    if version >= 3 and not (
        valid_software_field(req.get("client_software_name"))
        and valid_software_field(req.get("client_software_version"))
    ):
        return ErrorCode.INVALID_REQUEST
    services = ctx.services
    if (
        version >= _CLUSTER_CHECK_VERSION
        and cluster_id is not None
        and (cluster_id != services.cluster_id or node_id != services.node_id)
    ):
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return ErrorCode.NONE


@handler(ApiKey.API_VERSIONS)
async def handle(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    error = _request_error(ctx, req)
    if error is not ErrorCode.NONE:
        return {"error_code": error, "api_keys": [], "throttle_time_ms": 0}
    level = txn_version.level(ctx.services.config)
    response: ApiVersionsResponse = {
        "error_code": ErrorCode.NONE,
        "api_keys": advertised_api_keys(level),
        "throttle_time_ms": 0,
    }
    if ctx.api_version >= 3:
        _features(response, level, ctx.api_version)
    return response
