"""Authentication counters per listener and SASL mechanism, as Kafka's listener metrics
`successful-authentication-total` and `failed-authentication-total` (re-authentications
included here; Kafka counts them apart). The SASL gate of each connection
(wirebroker/net/sasl.py) counts; the admin plane reads `rows()` at scrape time (/metrics,
/api/state, the web view). Plain integer adds: nothing locks (one trio thread)."""

from __future__ import annotations

from typing import Any

__all__ = ["AuthenticationStats"]

#: the mechanism label of a handshake that named no enabled mechanism (a client's free text
#: never becomes a label)
UNSUPPORTED = "unsupported"


class AuthenticationStats:
    def __init__(self) -> None:
        #: (listener, mechanism) -> [successful, failed]
        self.counts: dict[tuple[str, str], list[int]] = {}

    def _slot(self, listener: str, mechanism: str) -> list[int]:
        return self.counts.setdefault((listener, mechanism or UNSUPPORTED), [0, 0])

    def success(self, listener: str, mechanism: str) -> None:
        self._slot(listener, mechanism)[0] += 1

    def failure(self, listener: str, mechanism: str) -> None:
        self._slot(listener, mechanism)[1] += 1

    def rows(self) -> list[dict[str, Any]]:
        """One JSON-ready row per (listener, mechanism) seen, sorted."""
        return [
            {"listener": listener, "mechanism": mechanism, "successful": ok, "failed": failed}
            for (listener, mechanism), (ok, failed) in sorted(self.counts.items())
        ]
