"""SaslHandshake (key 17), versions 0-1, as Kafka's request handler answers it.

Advertised by ApiVersions on every listener, as Kafka does. Before authentication a SASL
listener's connection never reaches a handler: `wirebroker.net.sasl` (over
`wirebroker.security.sasl_server`) serves the handshake. What reaches this handler is a
handshake on a PLAINTEXT / SSL listener, or on an authenticated SASL connection without
re-authentication (`connections.max.reauth.ms` 0) or within a second of its last
re-authentication's start (Kafka's limit): Kafka answers ILLEGAL_SASL_STATE with no mechanisms,
and so does this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.sasl_handshake import SaslHandshakeRequest, SaslHandshakeResponse


@handler(ApiKey.SASL_HANDSHAKE)
async def handle(ctx: RequestContext, req: SaslHandshakeRequest) -> SaslHandshakeResponse:
    return {"error_code": int(ErrorCode.ILLEGAL_SASL_STATE), "mechanisms": []}
