"""SaslAuthenticate (key 36), versions 0-2, as Kafka's request handler answers it.

Advertised by ApiVersions on every listener, as Kafka does. While a SASL connection
authenticates, `wirebroker.net.sasl` serves these requests; one that reaches this handler came
on a listener without SASL or after the authentication: ILLEGAL_SASL_STATE with Kafka's text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.sasl_authenticate import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
    )


@handler(ApiKey.SASL_AUTHENTICATE)
async def handle(ctx: RequestContext, req: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
    return {
        "error_code": int(ErrorCode.ILLEGAL_SASL_STATE),
        "error_message": "SaslAuthenticate request received after successful authentication",
        "auth_bytes": b"",
        "session_lifetime_ms": 0,
    }
