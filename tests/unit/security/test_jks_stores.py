"""JKS keystores and truststores made by Java's keytool (`ssl.keystore.type=JKS`,
`ssl.truststore.type=JKS`; wirebroker/security/jks.py read by wirebroker/security/tls.py):
the key recovered with its own password (ssl.key.password) or the store's, its certificate
served (in-memory TLS), a JKS truststore checking a client certificate (mTLS) and a peer;
wrong store or key passwords, a tampered or truncated store, a JCEKS store and a truststore
used as a keystore refused at start; a PKCS12 file named JKS read, as Java reads it."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from tests.unit.security.test_selfsigned_tls import _handshake
from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.security import jks
from wirebroker.security.tls import client_context, server_context

STORE = "store-secret"
KEY = "key-secret"


def _keytool(*args: str) -> None:
    keytool = shutil.which("keytool")
    if keytool is None:
        pytest.skip("keytool (a JDK) is not installed")
    fast_start = ["-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"]  # a short-lived JVM
    subprocess.run([keytool, *fast_start, *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """keystore.jks (an RSA key, its own password, a self-signed certificate for localhost),
    broker.pem (that certificate, exported by keytool), truststore.jks (it as a trusted
    entry), same.jks (an EC key whose password is the store's), p12-named-jks (PKCS12)."""
    d = tmp_path_factory.mktemp("jks")
    _keytool(
        "-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048",
        "-dname", "CN=localhost,O=keytool", "-ext", "SAN=dns:localhost,ip:127.0.0.1",
        "-validity", "2", "-storetype", "JKS", "-keystore", str(d / "keystore.jks"),
        "-storepass", STORE, "-keypass", KEY,
    )  # fmt: skip
    _keytool(
        "-exportcert", "-rfc", "-alias", "broker", "-keystore", str(d / "keystore.jks"),
        "-storepass", STORE, "-file", str(d / "broker.pem"),
    )  # fmt: skip
    _keytool(
        "-importcert", "-noprompt", "-alias", "broker", "-file", str(d / "broker.pem"),
        "-storetype", "JKS", "-keystore", str(d / "truststore.jks"), "-storepass", STORE,
    )  # fmt: skip
    _keytool(
        "-genkeypair", "-alias", "peer", "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", "CN=localhost,O=same", "-ext", "SAN=dns:localhost", "-validity", "2",
        "-storetype", "PKCS12", "-keystore", str(d / "p12-named-jks"), "-storepass", STORE,
    )  # fmt: skip
    return d


def _keystore(stores: Path, key: str | None = KEY, store: str = STORE) -> dict[str, str]:
    out = {
        "ssl.keystore.type": "JKS",
        "ssl.keystore.location": str(stores / "keystore.jks"),
        "ssl.keystore.password": store,
    }
    return out | ({"ssl.key.password": key} if key is not None else {})


def _truststore(stores: Path, password: str | None = STORE) -> dict[str, str]:
    out = {"ssl.truststore.type": "JKS", "ssl.truststore.location": str(stores / "truststore.jks")}
    return out | ({"ssl.truststore.password": password} if password is not None else {})


def test_the_parser_reads_keytools_entries(stores: Path) -> None:
    data = (stores / "keystore.jks").read_bytes()
    assert jks.is_jks(data)
    found = jks.load(data, STORE, KEY)
    (entry,) = found.keys
    assert entry.alias == "broker" and len(entry.chain) == 1 and found.certs == ()
    pem = ssl.DER_cert_to_PEM_cert(entry.chain[0])
    assert ssl.PEM_cert_to_DER_cert(pem) == ssl.PEM_cert_to_DER_cert(
        (stores / "broker.pem").read_text()
    )
    trust = jks.load((stores / "truststore.jks").read_bytes(), None)  # no integrity check
    assert [c.alias for c in trust.certs] == ["broker"] and trust.keys == ()
    assert trust.certs[0].cert == entry.chain[0]


def test_the_parser_refuses_bad_stores(stores: Path) -> None:
    data = (stores / "keystore.jks").read_bytes()
    with pytest.raises(jks.JksError, match="password was incorrect"):
        jks.load(data, "wrong", KEY)
    with pytest.raises(jks.JksError, match="wrong key password"):
        jks.load(data, STORE)  # the key has its own password
    tampered = bytearray(data)
    tampered[len(data) // 2] ^= 1
    with pytest.raises(jks.JksError, match="tampered"):
        jks.load(bytes(tampered), STORE, KEY)
    with pytest.raises(jks.JksError, match="truncated"):
        jks.load(data[:100], STORE, KEY)
    with pytest.raises(jks.JksError, match="JCEKS"):
        jks.load(bytes.fromhex("cececece00000002") + data[8:], STORE, KEY)
    assert not jks.is_jks((stores / "p12-named-jks").read_bytes())


def test_a_keytool_keystore_serves_its_certificate(stores: Path) -> None:
    server = server_context(BrokerConfig(_keystore(stores)), "SSL")
    client = ssl.create_default_context(cafile=str(stores / "broker.pem"))
    assert _handshake(server, client).version() in ("TLSv1.2", "TLSv1.3")


def test_a_keytool_truststore_checks_clients_and_peers(stores: Path) -> None:
    config = BrokerConfig(_keystore(stores) | _truststore(stores) | {"ssl.client.auth": "required"})
    server = server_context(config, "SSL")
    peer = client_context(config, "SSL")  # presents the JKS key's certificate, trusts it
    assert _handshake(server, peer).getpeercert(binary_form=True) is not None
    stranger = ssl.create_default_context(cafile=str(stores / "broker.pem"))
    with pytest.raises(ssl.SSLError):
        _handshake(server, stranger)  # no client certificate: refused


def test_a_pkcs12_file_named_jks_is_read_as_java_reads_it(stores: Path) -> None:
    config = {
        "ssl.keystore.type": "JKS",
        "ssl.keystore.location": str(stores / "p12-named-jks"),
        "ssl.keystore.password": STORE,
    }
    server_context(BrokerConfig(config), "SSL")


def test_wrong_passwords_and_a_truststore_as_keystore_are_refused(stores: Path) -> None:
    with pytest.raises(ConfigError, match="cannot load the JKS keystore: Keystore was tampered"):
        server_context(BrokerConfig(_keystore(stores, store="wrong")), "SSL")
    with pytest.raises(ConfigError, match="wrong key password"):
        server_context(BrokerConfig(_keystore(stores, key=None)), "SSL")
    with pytest.raises(ConfigError, match="cannot load the JKS truststore"):
        client_context(BrokerConfig(_truststore(stores, "wrong")), "SSL")
    client_context(BrokerConfig(_truststore(stores, None)), "SSL")  # no password: not checked
    as_keystore = _keystore(stores) | {"ssl.keystore.location": str(stores / "truststore.jks")}
    with pytest.raises(ConfigError, match="the JKS keystore holds no private key"):
        server_context(BrokerConfig(as_keystore), "SSL")
