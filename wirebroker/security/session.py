"""What a connection knows about its client beyond the bytes: the listener it came in on, that
listener's security protocol, and the authenticated principal (Kafka's KafkaPrincipal, as
"User:<name>"). Made by `wirebroker.net` per connection, read by the handlers
(`RequestContext.session`): Metadata answers with the addresses of `listener`."""

from __future__ import annotations

from dataclasses import dataclass

ANONYMOUS = "User:ANONYMOUS"


@dataclass
class ConnectionSession:
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    principal: str = ANONYMOUS
