"""TLS for SSL and SASL_SSL listeners: `ssl.SSLContext`s from Kafka's settings, and the
principal of a client certificate. Standard library `ssl` only (no I/O beyond reading the
PEM files named in the config, once at start).

Settings (each also as `listener.name.<listener>.<key>`, which wins, as in Kafka):

    ssl.keystore.type                PEM (Kafka's JKS/PKCS12 are refused: convert to PEM)
    ssl.keystore.location            a PEM file with the private key and the certificate chain
    ssl.keystore.certificate.chain   ... or both inline (PEM text), as Kafka allows
    ssl.keystore.key
    ssl.key.password                 the private key's password, if it is encrypted
    ssl.truststore.type              PEM
    ssl.truststore.location          PEM file of CA certificates trusted for peers
    ssl.truststore.certificates      ... or inline
    ssl.client.auth                  required | requested | none (default none)
    ssl.enabled.protocols            TLSv1.2,TLSv1.3 (default; nothing older is offered)
    ssl.principal.mapping.rules      DEFAULT only
    ssl.endpoint.identification.algorithm   https (default: the broker checks a peer broker's
                                     host name when it connects to it) or empty (no check)

Principal (Kafka's DefaultKafkaPrincipalBuilder with the DEFAULT rule): "User:" + the client
certificate's subject as RFC 2253 prints it (most specific first: "CN=client,O=acme,C=US"),
"User:ANONYMOUS" without a client certificate.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.security.session import ANONYMOUS

_PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {
    "required": ssl.CERT_REQUIRED,
    "requested": ssl.CERT_OPTIONAL,
    "none": ssl.CERT_NONE,
}


def listener_setting(config: BrokerConfig, listener: str, key: str) -> str | None:
    """`listener.name.<listener>.<key>`, else `<key>` (None: neither is set)."""
    prefixed = config.values.get(f"listener.name.{listener.lower()}.{key}")
    return prefixed if prefixed is not None else config.values.get(key)


def _versions(config: BrokerConfig, listener: str) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    raw = listener_setting(config, listener, "ssl.enabled.protocols") or "TLSv1.2,TLSv1.3"
    wanted = [p.strip() for p in raw.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in _PROTOCOLS]
    if unknown or not wanted:
        raise ConfigError(
            f"ssl.enabled.protocols: {', '.join(unknown) or 'empty'} not supported "
            f"(TLSv1.2, TLSv1.3)"
        )
    versions = sorted(_PROTOCOLS[p] for p in wanted)
    return versions[0], versions[-1]


@contextmanager
def _pem_files(chain: str, key: str) -> Iterator[tuple[str, str]]:
    """Inline PEM text as two private temporary files (load_cert_chain reads files only)."""
    with tempfile.TemporaryDirectory(prefix="wirebroker-tls-") as tmp:
        paths = []
        for name, text in (("chain.pem", chain), ("key.pem", key)):
            path = os.path.join(tmp, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text.replace("\\n", "\n"))
            paths.append(path)
        yield paths[0], paths[1]


def _check_type(config: BrokerConfig, listener: str, key: str) -> None:
    kind = (listener_setting(config, listener, key) or "PEM").upper()
    if kind != "PEM":
        raise ConfigError(f"{key}={kind}: only PEM stores are supported (convert with openssl)")


def _load_keystore(
    ctx: ssl.SSLContext, config: BrokerConfig, listener: str, required: bool
) -> bool:
    _check_type(config, listener, "ssl.keystore.type")
    location = listener_setting(config, listener, "ssl.keystore.location")
    chain = listener_setting(config, listener, "ssl.keystore.certificate.chain")
    key = listener_setting(config, listener, "ssl.keystore.key")
    password = listener_setting(config, listener, "ssl.key.password")
    try:
        if location:
            ctx.load_cert_chain(Path(location).expanduser(), password=password)
        elif chain and key:
            with _pem_files(chain, key) as (chain_path, key_path):
                ctx.load_cert_chain(chain_path, key_path, password=password)
        elif required:
            raise ConfigError(
                f"listener {listener}: TLS needs ssl.keystore.location (PEM: key and "
                f"certificate chain) or ssl.keystore.certificate.chain + ssl.keystore.key"
            )
        else:
            return False
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"listener {listener}: cannot load the keystore: {exc}") from exc
    return True


def _load_truststore(ctx: ssl.SSLContext, config: BrokerConfig, listener: str) -> bool:
    _check_type(config, listener, "ssl.truststore.type")
    location = listener_setting(config, listener, "ssl.truststore.location")
    inline = listener_setting(config, listener, "ssl.truststore.certificates")
    try:
        if location:
            ctx.load_verify_locations(cafile=str(Path(location).expanduser()))
        elif inline:
            ctx.load_verify_locations(cadata=inline.replace("\\n", "\n"))
        else:
            return False
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"listener {listener}: cannot load the truststore: {exc}") from exc
    return True


def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The TLS context of an SSL / SASL_SSL listener (see the module docstring)."""
    rules = (listener_setting(config, listener, "ssl.principal.mapping.rules") or "DEFAULT").strip()
    if rules != "DEFAULT":
        raise ConfigError(f"ssl.principal.mapping.rules={rules!r}: only DEFAULT is supported")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version, ctx.maximum_version = _versions(config, listener)
    _load_keystore(ctx, config, listener, required=True)
    auth = (listener_setting(config, listener, "ssl.client.auth") or "none").strip().lower()
    if auth not in _CLIENT_AUTH:
        raise ConfigError(f"ssl.client.auth={auth!r}: one of required, requested, none")
    has_trust = _load_truststore(ctx, config, listener)
    if auth != "none" and not has_trust:
        raise ConfigError(
            f"listener {listener}: ssl.client.auth={auth} needs ssl.truststore.location "
            "(the CAs that sign client certificates)"
        )
    ctx.verify_mode = _CLIENT_AUTH[auth]
    return ctx


def client_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The TLS context this broker connects to a peer's `listener` with (inter-broker): the
    listener's truststore (else the system's CAs), its keystore as the client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version, ctx.maximum_version = _versions(config, listener)
    if not _load_truststore(ctx, config, listener):
        ctx.load_default_certs()
    _load_keystore(ctx, config, listener, required=False)
    algorithm = listener_setting(config, listener, "ssl.endpoint.identification.algorithm")
    ctx.check_hostname = (algorithm if algorithm is not None else "https").lower() == "https"
    return ctx


def principal_from_certificate(der: bytes | None) -> str:
    """ "User:" + the certificate's subject in RFC 2253 form; ANONYMOUS without one."""
    if not der:
        return ANONYMOUS
    from cryptography import x509  # only for mTLS clients: its import costs start-up time

    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()
