"""The broker's listener addresses: which `listeners` it binds and what it advertises.

Every entry of `listeners` is served as PLAINTEXT except those named in
`controller.listener.names` (a Kafka KRaft server.properties lists a CONTROLLER listener; a
single wirebroker has no controller quorum). SSL/SASL listeners are refused at start.

Advertised address (what Metadata/FindCoordinator tell clients): the first entry of
`advertised.listeners` when set (an empty host or port 0 there takes the bound value), else the
first bound address. A wildcard bind is advertised as the loopback address of its family
(`connectable_host`).
"""

from __future__ import annotations

import logging

from wirebroker.config import BrokerConfig, ConfigError

log = logging.getLogger("wirebroker.broker")

_WILDCARDS = {"", "0.0.0.0", "::"}
_UNSUPPORTED_LISTENER_NAMES = {"SSL", "SASL_PLAINTEXT", "SASL_SSL"}


def connectable_host(host: str) -> str:
    """A host a local client can connect to: wildcards become the loopback address."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def _controller_names(config: BrokerConfig) -> set[str]:
    return {n.strip() for n in config.values.get("controller.listener.names", "").split(",")}


def listen_addresses(config: BrokerConfig) -> list[tuple[str, int]]:
    """The (host, port) pairs the broker binds: its `listeners` but the controller ones."""
    controller_names = _controller_names(config)
    out = []
    for name, host, port in config.listeners:
        if name in controller_names:
            continue
        if name in _UNSUPPORTED_LISTENER_NAMES:
            raise ConfigError(f"listener {name}://{host}:{port}: only PLAINTEXT is supported")
        out.append((host, port))
    if not out:
        raise ConfigError("no broker listener configured (listeners)")
    return out


def advertised_address(config: BrokerConfig, bound: list[tuple[str, int]]) -> tuple[str, int]:
    """What clients are told: `advertised.listeners`, else the first bound address."""
    bound_host, bound_port = bound[0]
    if "advertised.listeners" in config.values:
        controller_names = _controller_names(config)
        for name, host, port in config.advertised_listeners:
            if name not in controller_names:
                return (host or connectable_host(bound_host)), (port or bound_port)
    if bound_host in _WILDCARDS:
        log.info(
            "listening on a wildcard address; advertising %s (set advertised.listeners "
            "for clients on other hosts)",
            connectable_host(bound_host),
        )
    return connectable_host(bound_host), bound_port
