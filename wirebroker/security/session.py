"""What a connection knows about its client beyond the bytes: the listener it came in on, that
listener's security protocol, and the authenticated principal (Kafka's KafkaPrincipal, as
"User:<name>"). Made by `wirebroker.net` per connection, read by the handlers
(`RequestContext.session`): Metadata answers with the addresses of `listener`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

ANONYMOUS = "User:ANONYMOUS"

log = logging.getLogger(__name__)


@dataclass
class ConnectionSession:
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    principal: str = ANONYMOUS
    #: called once when the connection closes (a share session is released then, as Kafka's
    #: ShareSessionCache does on disconnect); sync, never raising into the connection
    closers: list[Callable[[], None]] = field(default_factory=list, repr=False, compare=False)

    def on_close(self, closer: Callable[[], None]) -> None:
        self.closers.append(closer)

    def closed(self) -> None:
        """The connection closed: run the closers once."""
        closers, self.closers = self.closers, []
        for closer in closers:
            try:
                closer()
            except Exception:
                log.exception("a connection close callback failed")
