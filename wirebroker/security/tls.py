"""TLS for SSL and SASL_SSL listeners: `ssl.SSLContext`s from Kafka's settings, and the
principal of a client certificate. Standard library `ssl` (no I/O beyond reading the
files named in the config, once at start); `cryptography` reads PKCS12 stores, security/jks.py
JKS stores.

Settings (each also as `listener.name.<listener>.<key>`, which wins, as in Kafka):

    ssl.keystore.type                PEM, PKCS12 or JKS (JCEKS and BKS are refused)
    ssl.keystore.location            a PEM file with the private key and the certificate chain,
                                     or a PKCS12 / JKS file with the key and its chain (JKS: a
                                     PKCS12 file is read too, as Java's JKS keystore does)
    ssl.keystore.password            the PKCS12 / JKS keystore's password (PKCS12: its key's
                                     too, one password for the whole file, as keytool makes
                                     them; JKS: the key's is ssl.key.password, else this)
    ssl.keystore.certificate.chain   ... or both inline (PEM text), as Kafka allows
    ssl.keystore.key
    ssl.key.password                 the private key's password, if it is encrypted (PEM, JKS)
    ssl.truststore.type              PEM, PKCS12 or JKS
    ssl.truststore.location          PEM (or PKCS12, JKS) file of CA certificates trusted for
                                     peers (a JKS store: its trusted certificates and its
                                     keys' certificates, as Java's trust manager takes them)
    ssl.truststore.password          the PKCS12 / JKS truststore's password (none: no
                                     integrity check)
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
from wirebroker.security import jks
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


def _store_type(config: BrokerConfig, listener: str, key: str) -> str:
    kind = (listener_setting(config, listener, key) or "PEM").strip().upper()
    if kind not in ("PEM", "PKCS12", "JKS"):
        raise ConfigError(
            f"{key}={kind}: only PEM, PKCS12 and JKS stores are supported (convert another "
            "with keytool -importkeystore -deststoretype PKCS12)"
        )
    return kind


def _store(config: BrokerConfig, listener: str, store: str, kind: str) -> tuple[str, str]:
    """A PKCS12 or JKS (`kind`) keystore or truststore (`store`) as PEM text: (certificates,
    private key or ""). A JKS store that holds PKCS12 is read as PKCS12 (Java's JKS keystore
    reads both)."""
    location = listener_setting(config, listener, f"ssl.{store}.location")
    if not location:
        raise ConfigError(
            f"listener {listener}: ssl.{store}.type={kind} needs ssl.{store}.location"
        )
    password = listener_setting(config, listener, f"ssl.{store}.password")
    try:
        data = Path(location).expanduser().read_bytes()
        if kind == "JKS" and jks.is_jks(data):
            key_password = None
            if store == "keystore":
                key_password = listener_setting(config, listener, "ssl.key.password")
            return _jks_pem(jks.load(data, password, key_password), store)
        return _pkcs12_pem(data, password)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"listener {listener}: cannot load the {kind} {store}: {exc}") from exc


def _jks_pem(found: jks.JksStore, store: str) -> tuple[str, str]:
    """A keystore: its first key entry and chain; a truststore: every trusted certificate
    and every key entry's own certificate."""
    if store == "keystore":
        if not found.keys:
            return "", ""
        entry = found.keys[0]
        return jks.pem_certs(entry.chain), jks.pem_key(entry.pkcs8)
    ders = [c.cert for c in found.certs] + [k.chain[0] for k in found.keys if k.chain]
    return jks.pem_certs(ders), ""


def _pkcs12_pem(data: bytes, password: str | None) -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    key, cert, extra = pkcs12.load_key_and_certificates(
        data, password.encode() if password else None
    )
    pem = serialization.Encoding.PEM
    certs = "".join(c.public_bytes(pem).decode() for c in [*([cert] if cert else []), *extra])
    key_pem = ""
    if key is not None:
        key_pem = key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
    return certs, key_pem


def _load_store_keystore(
    ctx: ssl.SSLContext, config: BrokerConfig, listener: str, kind: str
) -> None:
    certs, key_pem = _store(config, listener, "keystore", kind)
    if not key_pem or not certs:
        raise ConfigError(f"listener {listener}: the {kind} keystore holds no private key")
    try:
        with _pem_files(certs, key_pem) as (chain_path, key_path):
            ctx.load_cert_chain(chain_path, key_path)
    except ssl.SSLError as exc:
        raise ConfigError(f"listener {listener}: cannot load the keystore: {exc}") from exc


def _load_keystore(
    ctx: ssl.SSLContext, config: BrokerConfig, listener: str, required: bool
) -> bool:
    kind = _store_type(config, listener, "ssl.keystore.type")
    if kind != "PEM":
        _load_store_keystore(ctx, config, listener, kind)
        return True
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
    kind = _store_type(config, listener, "ssl.truststore.type")
    if kind != "PEM":
        certs, _ = _store(config, listener, "truststore", kind)
        if not certs:
            raise ConfigError(f"listener {listener}: the {kind} truststore holds no certificate")
        try:
            ctx.load_verify_locations(cadata=certs)
        except ssl.SSLError as exc:
            raise ConfigError(f"listener {listener}: cannot load the truststore: {exc}") from exc
        return True
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
