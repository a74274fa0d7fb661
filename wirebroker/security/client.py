"""How this broker connects to its peers (inter-broker traffic: follower fetches, transaction
markers, transaction verification): the security of the inter-broker listener, client side.

    TLS    the listener's truststore (else the system's CAs) to check the peer, its keystore
           as this broker's client certificate, host names checked unless
           `ssl.endpoint.identification.algorithm` is empty
    SASL   `sasl.mechanism.inter.broker.protocol` (Kafka's default is GSSAPI, not supported:
           wirebroker takes PLAIN when it is enabled on the listener, else the first enabled
           mechanism), with the `username` / `password` options of the listener's JAAS config
           for that mechanism (`listener.name.<l>.<mechanism>.sasl.jaas.config`, else
           `sasl.jaas.config`), as Kafka's login modules take them; OAUTHBEARER: an unsecured
           token made as Kafka's OAuthBearerLoginModule makes one (`unsecuredLoginStringClaim_
           <name>`, `unsecuredLoginNumberClaim_<name>`, `unsecuredLoginListClaim_<name>` (its
           first character the separator), `unsecuredLoginPrincipalClaimName` (sub),
           `unsecuredLoginLifetimeSeconds` (3600); `iat` and `exp` added)

`sasl_exchange` is the client side of PLAIN, SCRAM (RFC 5802) and OAUTHBEARER (RFC 7628) as
a generator of tokens: pure, the broker client (`replication.broker_client`) carries the tokens.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import ssl
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.security.oauthbearer import MECHANISM as OAUTHBEARER
from wirebroker.security.oauthbearer import initial_response, unsecured_token
from wirebroker.security.sasl_server import parse_jaas_options
from wirebroker.security.scram import ScramMechanism, encode_sasl_name, salted_password
from wirebroker.security.tls import client_context, listener_setting

#: A SASL exchange, client side: yields each token to send, is sent each answer.
SaslExchange = Generator[bytes, bytes, None]


@dataclass(frozen=True)
class ClientSecurity:
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None
    username: str = ""
    password: str = ""
    #: OAUTHBEARER: the unsecured login module's options
    oauth_options: Mapping[str, str] = field(default_factory=dict)


def inter_broker_security(
    config: BrokerConfig, listener: str, protocol: str
) -> ClientSecurity | None:
    """The client side of `listener` (None: PLAINTEXT)."""
    tls = protocol in ("SSL", "SASL_SSL")
    context = client_context(config, listener) if tls else None
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return ClientSecurity(context) if context is not None else None
    enabled = [
        m.strip()
        for m in (listener_setting(config, listener, "sasl.enabled.mechanisms") or "").split(",")
        if m.strip()
    ]
    mechanism = config.values.get("sasl.mechanism.inter.broker.protocol") or (
        "PLAIN" if "PLAIN" in enabled or not enabled else enabled[0]
    )
    jaas = (
        config.values.get(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config")
        or listener_setting(config, listener, "sasl.jaas.config")
        or ""
    )
    options = parse_jaas_options(jaas)
    if mechanism == OAUTHBEARER:
        try:
            unsecured_claims(options, 0)
        except ValueError as e:
            raise ConfigError(f"inter-broker listener {listener} (OAUTHBEARER): {e}") from None
        return ClientSecurity(context, mechanism, oauth_options=options)
    if "username" not in options or "password" not in options:
        raise ConfigError(
            f"inter-broker listener {listener} ({protocol}, {mechanism}): its JAAS config "
            f'needs username="..." password="..." for this broker to connect to its peers'
        )
    return ClientSecurity(context, mechanism, options["username"], options["password"])


def unsecured_claims(options: Mapping[str, str], now_ms: int) -> dict[str, Any]:
    """The claims of the token Kafka's OAuthBearerLoginModule makes from its `unsecuredLogin*`
    options at `now_ms`; ValueError for a bad option or no principal."""
    claims: dict[str, Any] = {}
    for key, value in options.items():
        for prefix, kind in (
            ("unsecuredLoginStringClaim_", "string"),
            ("unsecuredLoginNumberClaim_", "number"),
            ("unsecuredLoginListClaim_", "list"),
        ):
            if key.startswith(prefix) and key[len(prefix) :]:
                name = key[len(prefix) :]
                if name in ("iat", "exp"):
                    raise ValueError(f"{key}: {name} is set by the login module")
                if kind == "number":
                    claims[name] = float(value) if "." in value else int(value)
                elif kind == "list":
                    claims[name] = [item for item in value[1:].split(value[:1]) if item]
                else:
                    claims[name] = value
    principal = options.get("unsecuredLoginPrincipalClaimName", "sub").strip() or "sub"
    if not isinstance(claims.get(principal), str):
        raise ValueError(f'its JAAS config needs unsecuredLoginStringClaim_{principal}="..."')
    lifetime_s = int(options.get("unsecuredLoginLifetimeSeconds", "3600"))
    claims["iat"] = now_ms / 1000
    claims["exp"] = now_ms / 1000 + lifetime_s
    return claims


def sasl_exchange(security: ClientSecurity, now_ms: int | None = None) -> SaslExchange:
    """The client's tokens for `security.sasl_mechanism`; raises ValueError on a bad answer."""
    mechanism = security.sasl_mechanism
    if mechanism == OAUTHBEARER:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        token = unsecured_token(unsecured_claims(security.oauth_options, now))
        if (yield initial_response(token)):
            yield b"\x01"  # acknowledges the server's error status (RFC 7628 3.2.3)
        return
    if mechanism == "PLAIN":
        yield f"\0{security.username}\0{security.password}".encode()
        return
    scram = ScramMechanism.from_name(mechanism or "")
    if scram is None:
        raise ValueError(f"unsupported SASL mechanism {mechanism}")
    nonce = secrets.token_urlsafe(24)
    bare = f"n={encode_sasl_name(security.username)},r={nonce}"
    server_first = (yield f"n,,{bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(",") if "=" in item)
    if not fields.get("r", "").startswith(nonce):
        raise ValueError("SCRAM: the server's nonce does not extend ours")
    salted = salted_password(
        scram.hash_name, security.password, base64.b64decode(fields["s"]), int(fields["i"])
    )
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    client_key = hmac.new(salted, b"Client Key", scram.hash_name).digest()
    stored_key = hashlib.new(scram.hash_name, client_key).digest()
    signature = hmac.new(stored_key, auth_message, scram.hash_name).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_final = (yield f"{without_proof},p={base64.b64encode(proof).decode()}".encode()).decode()
    server_key = hmac.new(salted, b"Server Key", scram.hash_name).digest()
    expected = hmac.new(server_key, auth_message, scram.hash_name).digest()
    if not hmac.compare_digest(server_final, "v=" + base64.b64encode(expected).decode()):
        raise ValueError("SCRAM: the server's signature does not match")
