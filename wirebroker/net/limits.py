"""Connection limits: Kafka's connection quotas and the process's open-file limit.

`ConnectionQuotas` is pure bookkeeping (no trio, no sockets); `wirebroker.net.server` applies
it around `accept`. Kafka's semantics (core `SocketServer.ConnectionQuotas`):

    max.connections          broker-wide (default 2**31-1). When reached the acceptor stops: the
                             connection just accepted waits, and newer ones queue in the kernel's
                             listen backlog, until some connection closes. Nothing is refused.
    max.connections.per.ip   per client address (default 2**31-1). A connection beyond it is
                             accepted and closed at once (Kafka logs "Rejected connection from
                             <ip>, address already has the configured maximum of <n>
                             connections") without reading a byte from it.

Not implemented: `max.connections.per.ip.overrides`, per-listener `max.connections`.
Connection creation rates (KIP-612): wirebroker.security.connection_rates.

`raise_nofile_limit` raises the soft RLIMIT_NOFILE to the hard limit at start-up (what the JVM
does for Kafka by default, -XX:+MaxFDLimit), so a broker started from a shell with the usual
soft limit of 1024 can hold thousands of connections.
"""

from __future__ import annotations

from dataclasses import dataclass, field

try:  # POSIX only; elsewhere the limit is left alone
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

#: Used as the target when the hard limit is "unlimited" (Linux refuses a soft limit above
#: fs.nr_open, 1048576 by default).
_UNLIMITED_TARGET = 1 << 20


@dataclass
class ConnectionQuotas:
    """Counts open connections, in total and per client address (see the module docstring)."""

    max_connections: int
    max_connections_per_ip: int
    total: int = 0
    per_ip: dict[str, int] = field(default_factory=dict)

    def slot_available(self) -> bool:
        """True when one more connection fits under `max.connections`."""
        return self.total < self.max_connections

    def try_acquire(self, host: str) -> bool:
        """Count a new connection from `host`; False (nothing counted) if its per-IP quota is
        full. The caller has waited for `slot_available()` first, as Kafka's acceptor does."""
        count = self.per_ip.get(host, 0)
        if count >= self.max_connections_per_ip:
            return False
        self.per_ip[host] = count + 1
        self.total += 1
        return True

    def release(self, host: str) -> None:
        """Forget a closed connection counted by `try_acquire`."""
        count = self.per_ip.get(host, 0)
        if count <= 1:
            self.per_ip.pop(host, None)
        else:
            self.per_ip[host] = count - 1
        self.total = max(self.total - 1, 0)


def raise_nofile_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; returns (before, after).

    Never raises: where the limit cannot be read or changed, `after` is the unchanged value
    (-1 where there is no `resource` module).
    """
    if resource is None:  # pragma: no cover - Windows
        return -1, -1
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return -1, -1
    target = _UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError):
            return soft, soft
        return soft, target
    return soft, soft
