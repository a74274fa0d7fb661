"""`admin.listeners`: where the admin HTTP listener binds.

The value is a comma-separated list of `HOST:PORT` (an optional `http://` prefix and a
bracketed IPv6 host are accepted; an empty host means loopback, not a wildcard: the admin plane
is for the local machine unless asked otherwise). Empty (the default): no admin listener.
"""

from __future__ import annotations

__all__ = ["parse_admin_listeners"]


def parse_admin_listeners(items: list[str]) -> list[tuple[str, int]]:
    """(host, port) pairs from the config's list items; ValueError on a malformed one."""
    out = []
    for item in items:
        text = item.strip()
        if text.lower().startswith("http://"):
            text = text[len("http://") :]
        text = text.rstrip("/")
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = "", text
        host = host.strip("[]") or "127.0.0.1"
        try:
            port = int(port_text)
        except ValueError:
            raise ValueError(f"admin.listeners: {item!r}: expected HOST:PORT") from None
        if not 0 <= port <= 65535:
            raise ValueError(f"admin.listeners: {item!r}: port out of range")
        out.append((host, port))
    return out
