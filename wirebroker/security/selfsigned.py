"""A throwaway certificate authority and broker / client certificates for local TLS
(`wirebroker serve --tls-selfsigned DIR`, the pytest plugin's secured brokers, tests). Not for
production: the CA's key sits beside its certificate, unencrypted.

`generate(directory)` writes, once (files already there are used as they are):

    ca.pem          the CA certificate: what clients trust (ssl.truststore.location / ssl.cafile)
    ca.key          the CA's private key
    broker.pem      the broker's private key and certificate chain (ssl.keystore.location,
                    type PEM), for localhost, 127.0.0.1 and ::1 (and `hosts`)
    client.pem      a client certificate (CN=wirebroker-client,O=wirebroker), for mTLS
    client.key      its private key

ECDSA P-256 keys, SHA-256 signatures, valid for 825 days (what browsers and OpenSSL accept).
Uses the `cryptography` package, imported only here.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePrivateKey
    from cryptography.x509 import Certificate, Name

_VALID_DAYS = 825
CLIENT_SUBJECT = "CN=wirebroker-client,O=wirebroker"


@dataclass(frozen=True)
class SelfSigned:
    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def broker(self) -> Path:
        return self.directory / "broker.pem"

    @property
    def client_cert(self) -> Path:
        return self.directory / "client.pem"

    @property
    def client_key(self) -> Path:
        return self.directory / "client.key"

    def broker_settings(
        self, listener: str | None = None, client_auth: str = "requested"
    ) -> dict[str, str]:
        """The broker settings of a TLS listener with these files (`listener.name.<l>.`
        prefixed when `listener` is given)."""
        prefix = f"listener.name.{listener.lower()}." if listener else ""
        return {
            f"{prefix}ssl.keystore.type": "PEM",
            f"{prefix}ssl.keystore.location": str(self.broker),
            f"{prefix}ssl.truststore.type": "PEM",
            f"{prefix}ssl.truststore.location": str(self.ca),
            f"{prefix}ssl.client.auth": client_auth,
        }


def _name(common_name: str, organization: str = "wirebroker") -> Name:
    from cryptography.x509 import Name, NameAttribute
    from cryptography.x509.oid import NameOID

    return Name(
        [
            NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _key() -> EllipticCurvePrivateKey:
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _pem_cert(cert: Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)


def _issue(
    subject: Name,
    key: EllipticCurvePrivateKey,
    issuer: tuple[Name, EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    hosts: tuple[str, ...] = (),
) -> Certificate:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID

    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer is not None else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        usage = x509.KeyUsage(False, False, False, False, False, True, True, False, False)
        builder = builder.add_extension(usage, critical=True)
    else:
        purposes = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = builder.add_extension(x509.ExtendedKeyUsage(purposes), critical=False)
    if hosts:
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(path: Path, data: bytes, private: bool = False) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def generate(directory: str | os.PathLike[str], hosts: tuple[str, ...] = ()) -> SelfSigned:
    """The files of the module docstring in `directory` (made if missing; kept if there)."""
    out = SelfSigned(Path(directory).expanduser().resolve())
    if all(p.exists() for p in (out.ca, out.broker, out.client_cert, out.client_key)):
        return out
    out.directory.mkdir(parents=True, exist_ok=True)
    ca_key, broker_key, client_key = _key(), _key(), _key()
    ca_name = _name("wirebroker throwaway CA")
    ca_cert = _issue(ca_name, ca_key, None, ca=True)
    names = ("localhost", "127.0.0.1", "::1", *hosts)
    broker = _issue(_name("localhost"), broker_key, (ca_name, ca_key), hosts=names)
    client = _issue(_name("wirebroker-client"), client_key, (ca_name, ca_key))
    _write(out.directory / "ca.key", _pem_key(ca_key), private=True)
    _write(out.ca, _pem_cert(ca_cert))
    _write(out.broker, _pem_key(broker_key) + _pem_cert(broker) + _pem_cert(ca_cert), True)
    _write(out.client_key, _pem_key(client_key), private=True)
    _write(out.client_cert, _pem_cert(client))
    return out
