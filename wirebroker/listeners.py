"""The broker's listeners as Kafka names them: what it binds, with which security, and what it
advertises on each. Pure: config in, `ListenerSpec`s and addresses out.

    listeners=PLAINTEXT://:9092,SSL://:9093,SASL_PLAINTEXT://:9094,SASL_SSL://:9095
    listener.security.protocol.map=INTERNAL:SASL_SSL,EXTERNAL:SSL   (custom names)

Each entry of `listeners` is NAME://HOST:PORT; its security protocol is what
`listener.security.protocol.map` maps NAME to (Kafka's default map: each of PLAINTEXT, SSL,
SASL_PLAINTEXT, SASL_SSL to itself). Rules, as Kafka's KafkaConfig checks them at start:
names are unique, each has a protocol, ports are distinct (but 0), and the names listed in
`controller.listener.names` are skipped (a Kafka KRaft server.properties lists a CONTROLLER
listener; a wirebroker has no controller quorum). A name without a protocol, or a protocol
outside the four, is a `ConfigError`.

Advertised addresses (what Metadata and FindCoordinator tell a client): per listener, the
entry of `advertised.listeners` with the same name, else the listener's own address; an empty
host or port 0 takes the bound value; a wildcard bind is advertised as the loopback address
of its family (`connectable_host`; Kafka would advertise the canonical host name). A client is
told the addresses of the listener it connected on, as Kafka does.

Inter-broker listener (`inter.broker.listener.name`, else the listener named after
`security.inter.broker.protocol`, PLAINTEXT by default; setting both is an error, as in Kafka):
the address other brokers (follower fetchers, transaction markers, transaction verification)
reach this broker on, with that listener's security. It must be one of the listeners.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from wirebroker.config import BrokerConfig, ConfigError, parse_listeners

log = logging.getLogger("wirebroker.broker")

_WILDCARDS = {"", "0.0.0.0", "::"}

PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL = "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
#: Kafka's default `listener.security.protocol.map`.
DEFAULT_PROTOCOL_MAP = {p: p for p in SECURITY_PROTOCOLS}


@dataclass(frozen=True)
class ListenerSpec:
    """One broker listener: its name, security protocol and bind address."""

    name: str
    protocol: str
    host: str
    port: int

    @property
    def uses_tls(self) -> bool:
        return self.protocol in (SSL, SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in (SASL_PLAINTEXT, SASL_SSL)


def connectable_host(host: str) -> str:
    """A host a local client can connect to: wildcards become the loopback address."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def _controller_names(config: BrokerConfig) -> set[str]:
    return {n.strip() for n in config.values.get("controller.listener.names", "").split(",")}


def protocol_map(config: BrokerConfig) -> dict[str, str]:
    """`listener.security.protocol.map` (NAME:PROTOCOL,...), Kafka's default when unset."""
    raw = config.values.get("listener.security.protocol.map")
    if raw is None:
        return dict(DEFAULT_PROTOCOL_MAP)
    out: dict[str, str] = {}
    for item in (s.strip() for s in raw.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip(), protocol.strip().upper()
        if not sep or not name:
            raise ConfigError(f"listener.security.protocol.map: {item!r} is not NAME:PROTOCOL")
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"listener.security.protocol.map: unknown security protocol {protocol!r} for "
                f"listener {name} (one of {', '.join(SECURITY_PROTOCOLS)})"
            )
        if name in out:
            raise ConfigError(f"listener.security.protocol.map: {name} is mapped twice")
        out[name] = protocol
    return out


def broker_listeners(config: BrokerConfig) -> list[ListenerSpec]:
    """The listeners the broker binds, each with its security protocol (see the docstring)."""
    controller_names = _controller_names(config)
    protocols = protocol_map(config)
    out: list[ListenerSpec] = []
    for name, host, port in config.listeners:
        if name in controller_names:
            continue
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(
                f"listener {name}://{host}:{port}: no security protocol defined for listener "
                f"{name} (listener.security.protocol.map)"
            )
        if any(spec.name == name for spec in out):
            raise ConfigError(f"listeners: each listener must have a different name ({name})")
        if port and any(spec.port == port for spec in out):
            raise ConfigError(f"listeners: each listener must have a different port ({port})")
        out.append(ListenerSpec(name, protocol, host, port))
    if not out:
        raise ConfigError("no broker listener configured (listeners)")
    return out


def inter_broker_listener(config: BrokerConfig, listeners: list[ListenerSpec]) -> ListenerSpec:
    """The listener other brokers use to reach this one (see the module docstring)."""
    by_name = config.values.get("inter.broker.listener.name")
    by_protocol = config.values.get("security.inter.broker.protocol")
    if by_name and by_protocol:
        raise ConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set."
        )
    name = by_name or by_protocol or PLAINTEXT
    for spec in listeners:
        if spec.name == name:
            return spec
    if not by_name and not by_protocol and len(listeners) == 1:
        # wirebroker: a broker with one listener talks to its peers on it (Kafka refuses to
        # start unless inter.broker.listener.name names it)
        return listeners[0]
    raise ConfigError(
        f"inter.broker.listener.name must be a listener name defined in advertised.listeners. "
        f"The valid options based on currently configured listeners are "
        f"{','.join(s.name for s in listeners)}"
    )


def advertised_endpoints(
    config: BrokerConfig, listeners: list[ListenerSpec], bound: Mapping[str, tuple[str, int]]
) -> dict[str, tuple[str, int]]:
    """Listener name -> the (host, port) clients on that listener are told (docstring)."""
    advertised: dict[str, tuple[str, int]] = {}
    raw = config.values.get("advertised.listeners")
    if raw:
        names = {s.name for s in listeners}
        for name, host, port in parse_listeners(raw):
            if name in _controller_names(config):
                continue
            if name not in names:
                raise ConfigError(
                    f"advertised.listeners: {name} is not a listener (listeners names "
                    f"{', '.join(sorted(names))})"
                )
            advertised[name] = (host, port)
    out: dict[str, tuple[str, int]] = {}
    for spec in listeners:
        bound_host, bound_port = bound[spec.name]
        host, port = advertised.get(spec.name, ("", 0))
        if not host and bound_host in _WILDCARDS:
            log.info(
                "listener %s on a wildcard address; advertising %s (set advertised.listeners "
                "for clients on other hosts)",
                spec.name,
                connectable_host(bound_host),
            )
        out[spec.name] = (host or connectable_host(bound_host), port or bound_port)
    return out
