"""A secured throwaway broker's settings (`BrokerHandle(security=...)`, the pytest plugin's
`@pytest.mark.kafka_broker(security="SASL_SSL")`).

The broker gets two listeners: the secured one first (what `bootstrap` names, and the
inter-broker listener, so the broker's own transaction markers use it too) and an INTERNAL
PLAINTEXT one on loopback for the handle's set-up helpers (create_topic, produce,
read_to_end), which speak the protocol without TLS or SASL. TLS uses a throwaway CA made in the
handle's temporary directory (`wirebroker.security.selfsigned`; client certificates
requested, so mTLS clients get their subject as principal); SASL accepts PLAIN, both
SCRAMs and OAUTHBEARER (Kafka's unsecured tokens) for the users in `USERS`, and the client
settings name `sasl_mechanism` (PLAIN by default) with the first user. With OAUTHBEARER,
librdkafka's settings ask it for an unsecured token (`sasl.oauthbearer.config=principal=alice`)
and kafka-python's carry a `sasl_oauth_token_provider` making one (`UnsecuredTokenProvider`,
the one place here that imports kafka-python, when asked).

`SecuredSettings.client_config`: librdkafka / confluent-kafka keys (the Java client's
`security.protocol` / `sasl.mechanism` too); `kafka_python_config`: kafka-python's keyword
arguments (aiokafka takes the same, but `ssl_context=aiokafka.helpers.create_ssl_context(
cafile=...)` instead of `ssl_cafile`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECURITY_PROTOCOLS = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_MODULES = {
    "PLAIN": "plain.PlainLoginModule",
    "SCRAM-SHA-256": "scram.ScramLoginModule",
    "SCRAM-SHA-512": "scram.ScramLoginModule",
    "OAUTHBEARER": "oauthbearer.OAuthBearerLoginModule",
}
#: the users a secured broker accepts (user -> password)
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
INTERNAL = "INTERNAL"


@dataclass
class SecuredSettings:
    protocol: str
    mechanism: str
    cert_dir: Path | None = None
    #: broker config overrides
    overrides: dict[str, str] = field(default_factory=dict)

    @property
    def ca(self) -> str | None:
        return str(self.cert_dir / "ca.pem") if self.cert_dir is not None else None

    def client_config(self, bootstrap: str) -> dict[str, str]:
        out = {"bootstrap.servers": bootstrap, "security.protocol": self.protocol}
        if self.ca is not None:
            out["ssl.ca.location"] = self.ca
        if "SASL" in self.protocol and self.mechanism == "OAUTHBEARER":
            out.update(
                {"sasl.mechanism": self.mechanism}
                | {"sasl.oauthbearer.config": f"principal={next(iter(USERS))}"}
                | {"enable.sasl.oauthbearer.unsecure.jwt": "true"}
            )
        elif "SASL" in self.protocol:
            user = next(iter(USERS))
            out.update(
                {"sasl.mechanism": self.mechanism, "sasl.username": user}
                | {"sasl.password": USERS[user]}
            )
        return out

    def kafka_python_config(self, bootstrap: str) -> dict[str, Any]:
        out: dict[str, Any] = {"bootstrap_servers": bootstrap, "security_protocol": self.protocol}
        if self.ca is not None:
            out["ssl_cafile"] = self.ca
            out["ssl_check_hostname"] = True
        if "SASL" in self.protocol and self.mechanism == "OAUTHBEARER":
            out.update(
                sasl_mechanism=self.mechanism,
                sasl_oauth_token_provider=unsecured_token_provider(next(iter(USERS))),
            )
        elif "SASL" in self.protocol:
            user = next(iter(USERS))
            out.update(
                sasl_mechanism=self.mechanism,
                sasl_plain_username=user,
                sasl_plain_password=USERS[user],
            )
        return out


def secured(
    protocol: str, mechanism: str, directory: Path, host: str, port: int
) -> SecuredSettings:
    """The overrides of a broker secured with `protocol` (certificates made in `directory`)."""
    if protocol not in SECURITY_PROTOCOLS:
        raise ValueError(f"security={protocol!r}: one of {', '.join(SECURITY_PROTOCOLS)}")
    if mechanism not in MECHANISMS:
        raise ValueError(f"sasl_mechanism={mechanism!r}: one of {', '.join(MECHANISMS)}")
    name = protocol.lower()
    bracketed = f"[{host}]" if ":" in host else host
    overrides = {
        "listeners": f"{protocol}://{bracketed}:{port},{INTERNAL}://127.0.0.1:0",
        "listener.security.protocol.map": f"{protocol}:{protocol},{INTERNAL}:PLAINTEXT",
        "inter.broker.listener.name": protocol,
    }
    settings = SecuredSettings(protocol, mechanism, overrides=overrides)
    if "SSL" in protocol:
        from wirebroker.security.selfsigned import generate

        files = generate(directory)
        settings.cert_dir = files.directory
        overrides.update(files.broker_settings(protocol, client_auth="requested"))
    if "SASL" in protocol:
        users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
        user = next(iter(USERS))
        overrides[f"listener.name.{name}.sasl.enabled.mechanisms"] = ",".join(MECHANISMS)
        overrides["sasl.mechanism.inter.broker.protocol"] = mechanism
        for mech in MECHANISMS:
            options = (
                f'unsecuredLoginStringClaim_sub="{user}"'
                if mech == "OAUTHBEARER"
                else f'username="{user}" password="{USERS[user]}" {users}'
            )
            overrides[f"listener.name.{name}.{mech.lower()}.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.{_MODULES[mech]} required {options};"
            )
    return settings


def unsecured_token_provider(principal: str, lifetime_s: int = 3600) -> Any:
    """A kafka-python `sasl_oauth_token_provider` giving a fresh unsecured token for
    `principal` (what Kafka's unsecured validator accepts) at each connection."""
    from kafka.net.sasl.oauth import AbstractTokenProvider

    from wirebroker.security.oauthbearer import unsecured_token

    class UnsecuredTokenProvider(AbstractTokenProvider):
        def token(self) -> str:
            now = int(time.time())  # whole seconds, as librdkafka's: never after the broker's now
            claims = {"sub": principal, "iat": now, "exp": now + lifetime_s}
            return unsecured_token(claims)

    return UnsecuredTokenProvider()
