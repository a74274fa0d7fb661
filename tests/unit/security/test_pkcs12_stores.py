"""PKCS12 keystores and truststores made by Java's keytool (`ssl.keystore.type=PKCS12`,
`ssl.truststore.type=PKCS12`, wirebroker/security/tls.py): the broker's context serves the
keytool key and certificate, a client trusting the keytool truststore completes a handshake
(in-memory TLS), a peer's context (inter-broker) checks against it; wrong passwords and a
truststore used as a keystore are refused at start."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from tests.unit.security.test_selfsigned_tls import _handshake
from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.security.tls import client_context, server_context

PASSWORD = "store-secret"


def _keytool(*args: str) -> None:
    keytool = shutil.which("keytool")
    if keytool is None:
        pytest.skip("keytool (a JDK) is not installed")
    fast_start = ["-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"]  # a short-lived JVM
    subprocess.run([keytool, *fast_start, *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """keystore.p12 (key + self-signed certificate for localhost), broker.pem (that
    certificate), truststore.p12 (that certificate as a trusted entry)."""
    d = tmp_path_factory.mktemp("p12")
    common = ["-storetype", "PKCS12", "-storepass", PASSWORD]
    _keytool(
        "-genkeypair", "-alias", "broker", "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", "CN=localhost,O=keytool", "-ext", "SAN=dns:localhost,ip:127.0.0.1",
        "-validity", "2", "-keystore", str(d / "keystore.p12"), *common,
    )  # fmt: skip
    # its certificate, for the clients (read here: one JVM less)
    _, cert, _ = pkcs12.load_key_and_certificates(
        (d / "keystore.p12").read_bytes(), PASSWORD.encode()
    )
    assert cert is not None
    (d / "broker.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _keytool(
        "-importcert", "-noprompt", "-alias", "broker", "-file", str(d / "broker.pem"),
        "-keystore", str(d / "truststore.p12"), *common,
    )  # fmt: skip
    return d


def _keystore(stores: Path, password: str = PASSWORD) -> dict[str, str]:
    return {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(stores / "keystore.p12"),
        "ssl.keystore.password": password,
    }


def _truststore(stores: Path, password: str = PASSWORD) -> dict[str, str]:
    return {
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(stores / "truststore.p12"),
        "ssl.truststore.password": password,
    }


def test_a_keytool_keystore_serves_its_certificate(stores: Path) -> None:
    server = server_context(BrokerConfig(_keystore(stores)), "SSL")
    client = ssl.create_default_context(cafile=str(stores / "broker.pem"))
    end = _handshake(server, client)
    assert end.version() in ("TLSv1.2", "TLSv1.3")


def test_a_keytool_truststore_checks_the_peer(stores: Path) -> None:
    """The broker's client side (inter-broker) trusts what the PKCS12 truststore holds, and
    a listener's mTLS checks client certificates against it."""
    config = BrokerConfig(_keystore(stores) | _truststore(stores) | {"ssl.client.auth": "required"})
    server = server_context(config, "SSL")
    peer = client_context(config, "SSL")  # presents the keystore's certificate, trusts ours
    end = _handshake(server, peer)
    assert end.getpeercert(binary_form=True) is not None
    stranger = ssl.create_default_context(cafile=str(stores / "broker.pem"))
    with pytest.raises(ssl.SSLError):
        _handshake(server, stranger)  # no client certificate: refused


def test_wrong_passwords_and_a_truststore_as_keystore_are_refused(stores: Path) -> None:
    with pytest.raises(ConfigError, match="cannot load the PKCS12 keystore"):
        server_context(BrokerConfig(_keystore(stores, "wrong")), "SSL")
    with pytest.raises(ConfigError, match="cannot load the PKCS12 truststore"):
        client_context(BrokerConfig(_truststore(stores, "wrong")), "SSL")
    as_keystore = _keystore(stores) | {"ssl.keystore.location": str(stores / "truststore.p12")}
    with pytest.raises(ConfigError, match="holds no private key"):
        server_context(BrokerConfig(as_keystore), "SSL")
    with pytest.raises(ConfigError, match="only PEM, PKCS12 and JKS"):
        server_context(BrokerConfig({"ssl.keystore.type": "JCEKS"}), "SSL")
