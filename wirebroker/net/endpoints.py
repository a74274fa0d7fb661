"""A broker's listeners made ready to serve: each `ListenerSpec` (wirebroker.listeners) with its
TLS context and SASL settings as an `Endpoint` for `KafkaServer`, and, once bound, the
addresses advertised per listener and registered in ZooKeeper.

SASL settings of a SASL_PLAINTEXT / SASL_SSL listener (each also as
`listener.name.<listener>.<key>`, which wins; Kafka's names):

    sasl.enabled.mechanisms             PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Kafka's default,
                                        GSSAPI, is not supported: set this)
    [listener.name.<l>.]plain.sasl.jaas.config / sasl.jaas.config
                                        PlainLoginModule with user_<name>="<password>" entries
    [listener.name.<l>.]scram-sha-256.sasl.jaas.config (and -512)
                                        wirebroker: the user_<name>="<password>" entries there
                                        become SCRAM credentials (salted at start, 4096
                                        iterations), until users are managed with
                                        AlterUserScramCredentials
    [listener.name.<l>.]oauthbearer.sasl.jaas.config
                                        OAuthBearerLoginModule: its unsecuredValidator* options
                                        (principal and scope claim names, required scope,
                                        allowable clock skew); Kafka's unsecured validator is
                                        the only one (a sasl.server.callback.handler.class
                                        naming another is refused)
    connections.max.reauth.ms           KIP-368 session lifetime (0: none, Kafka's default;
                                        an OAUTHBEARER session ends with its token anyway)
    connection.failed.authentication.delay.ms   100 (Kafka's default)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.listeners import (
    ListenerSpec,
    advertised_endpoints,
    broker_listeners,
    inter_broker_listener,
)
from wirebroker.net.server import Endpoint

if TYPE_CHECKING:
    import ssl

    from wirebroker.security.client import ClientSecurity
    from wirebroker.security.oauthbearer import UnsecuredValidator
    from wirebroker.security.sasl_server import SaslServerConfig
    from wirebroker.security.scram import ScramCredential, ScramMechanism

#: Protocols whose listener needs `wirebroker.security` (TLS contexts, SASL mechanisms): only
#: a broker with one imports it (~30 ms of a PLAINTEXT broker's start otherwise).
_SECURED = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _int_setting(config: BrokerConfig, key: str, default: int) -> int:
    raw = config.values.get(key)
    try:
        return default if raw is None else int(raw)
    except ValueError:
        raise ConfigError(f"{key}={raw!r} is not an integer") from None


def _jaas(config: BrokerConfig, listener: str, mechanism: str) -> str:
    from wirebroker.security.tls import listener_setting

    return (
        config.values.get(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config")
        or listener_setting(config, listener, "sasl.jaas.config")
        or ""
    )


def sasl_config(config: BrokerConfig, listener: str) -> SaslServerConfig:
    """What a SASL listener accepts (see the module docstring)."""
    from wirebroker.security.oauthbearer import MECHANISM as OAUTHBEARER
    from wirebroker.security.oauthbearer import UnsecuredValidator
    from wirebroker.security.sasl_server import SUPPORTED_MECHANISMS, SaslServerConfig, jaas_users
    from wirebroker.security.scram import ScramMechanism, credential_from_password
    from wirebroker.security.tls import listener_setting

    raw = listener_setting(config, listener, "sasl.enabled.mechanisms") or "GSSAPI"
    mechanisms = [m.strip() for m in raw.split(",") if m.strip()]
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported or not mechanisms:
        raise ConfigError(
            f"listener {listener}: sasl.enabled.mechanisms={raw}: "
            f"{', '.join(unsupported) or 'none'} not supported "
            f"(set sasl.enabled.mechanisms to some of {', '.join(SUPPORTED_MECHANISMS)})"
        )
    plain = jaas_users(_jaas(config, listener, "PLAIN")) if "PLAIN" in mechanisms else {}
    scram: dict[ScramMechanism, dict[str, ScramCredential]] = {}
    for name in mechanisms:
        mechanism = ScramMechanism.from_name(name)
        if mechanism is not None:
            users = jaas_users(_jaas(config, listener, name))
            scram[mechanism] = {u: credential_from_password(mechanism, p) for u, p in users.items()}

    def lookup(mechanism: ScramMechanism) -> Callable[[str], ScramCredential | None]:
        return scram.get(mechanism, {}).get

    return SaslServerConfig(
        mechanisms,
        plain_users=plain,
        scram_lookup=lookup,
        max_reauth_ms=_int_setting(config, "connections.max.reauth.ms", 0),
        oauthbearer=_oauthbearer_validator(config, listener)
        if OAUTHBEARER in mechanisms
        else UnsecuredValidator(),
    )


#: Kafka's class of the unsecured validator (the default when none is named)
_UNSECURED_HANDLER = (
    "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
    "OAuthBearerUnsecuredValidatorCallbackHandler"
)


def _oauthbearer_validator(config: BrokerConfig, listener: str) -> UnsecuredValidator:
    from wirebroker.security.oauthbearer import MECHANISM as OAUTHBEARER
    from wirebroker.security.oauthbearer import UnsecuredOptions, UnsecuredValidator
    from wirebroker.security.sasl_server import parse_jaas_options

    key = f"listener.name.{listener.lower()}.oauthbearer.sasl.server.callback.handler.class"
    handler = (config.values.get(key) or "").strip()
    if handler and handler != _UNSECURED_HANDLER:
        raise ConfigError(
            f"{key}={handler}: only Kafka's unsecured validator ({_UNSECURED_HANDLER}) is "
            "supported: remove the setting"
        )
    options = parse_jaas_options(_jaas(config, listener, OAUTHBEARER))
    try:
        return UnsecuredValidator(UnsecuredOptions.from_jaas(options))
    except ValueError as e:
        raise ConfigError(f"listener {listener}: oauthbearer.sasl.jaas.config: {e}") from None


def _server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    from wirebroker.security.tls import server_context

    return server_context(config, listener)


@dataclass
class BrokerEndpoints:
    """The broker's listeners: built from the config at construction (a bad setting is a
    `ConfigError` then), advertised addresses filled once bound (`bound`)."""

    config: BrokerConfig
    listeners: list[ListenerSpec] = field(init=False)
    inter_broker: ListenerSpec = field(init=False)
    endpoints: list[Endpoint] = field(init=False)
    peer_security: ClientSecurity | None = field(init=False)
    #: listener name -> advertised (host, port), once bound
    advertised: dict[str, tuple[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        config = self.config
        self.listeners = broker_listeners(config)
        self.inter_broker = inter_broker_listener(config, self.listeners)
        #: how this broker connects to its peers' inter-broker listener (None: PLAINTEXT)
        self.peer_security = None
        if self.inter_broker.protocol in _SECURED:
            from wirebroker.security.client import inter_broker_security

            self.peer_security = inter_broker_security(
                config, self.inter_broker.name, self.inter_broker.protocol
            )
        self.endpoints = [
            Endpoint(
                spec.name,
                spec.host,
                spec.port,
                spec.protocol,
                ssl_context=_server_context(config, spec.name) if spec.uses_tls else None,
                sasl=sasl_config(config, spec.name) if spec.uses_sasl else None,
            )
            for spec in self.listeners
        ]

    @property
    def failed_authentication_delay_ms(self) -> int:
        return _int_setting(self.config, "connection.failed.authentication.delay.ms", 100)

    def bound(self, by_listener: dict[str, tuple[str, int]]) -> None:
        """The listeners are bound at these addresses: compute what each advertises."""
        self.advertised = advertised_endpoints(self.config, self.listeners, by_listener)

    def inter_broker_address(self) -> tuple[str, int]:
        """Where other brokers reach this one (its inter-broker listener, advertised)."""
        return self.advertised[self.inter_broker.name]

    def __str__(self) -> str:
        return ", ".join(f"{n}://{h}:{p}" for n, (h, p) in self.advertised.items())

    def advertised_listeners(self) -> tuple[tuple[str, str, int], ...]:
        return tuple((s.name, *self.advertised[s.name]) for s in self.listeners)

    def registration(
        self,
    ) -> tuple[tuple[tuple[str, str, int], ...], tuple[tuple[str, str], ...]]:
        """Every advertised listener and its protocol, for /brokers/ids/<id>."""
        protocols = tuple((s.name, s.protocol) for s in self.listeners)
        return self.advertised_listeners(), protocols
