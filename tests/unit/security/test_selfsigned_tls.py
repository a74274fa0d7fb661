"""The throwaway CA (wirebroker/security/selfsigned.py), the TLS contexts built from Kafka's
settings and the principal of a client certificate (wirebroker/security/tls.py). In-memory TLS
(ssl.MemoryBIO): no sockets."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.security.selfsigned import CLIENT_SUBJECT, generate
from wirebroker.security.tls import ANONYMOUS, principal_from_certificate, server_context


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> ssl.SSLObject:
    """Run a TLS handshake between the two contexts over memory BIOs; the server's end."""
    s_in, s_out, c_in, c_out = (ssl.MemoryBIO() for _ in range(4))
    srv = server.wrap_bio(s_in, s_out, server_side=True)
    cli = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    done = [False, False]
    for _ in range(20):
        for i, (end, out, into) in enumerate(((cli, c_out, s_in), (srv, s_out, c_in))):
            if not done[i]:
                try:
                    end.do_handshake()
                    done[i] = True
                except ssl.SSLWantReadError:
                    pass
            into.write(out.read())
        if all(done):
            return srv
    raise AssertionError("no handshake")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("certs")).directory


def _client(certs: Path, mtls: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    if mtls:
        ctx.load_cert_chain(certs / "client.pem", certs / "client.key")
    return ctx


def test_generate_keeps_existing_files(certs: Path) -> None:
    before = (certs / "ca.pem").read_bytes()
    generate(certs)
    assert (certs / "ca.pem").read_bytes() == before
    assert oct((certs / "ca.key").stat().st_mode & 0o777) == "0o600"


def test_mtls_principal_is_the_subject_in_rfc2253_order(certs: Path) -> None:
    files = generate(certs)
    config = BrokerConfig(files.broker_settings("SSL", client_auth="required"))
    srv = _handshake(server_context(config, "SSL"), _client(certs, mtls=True))
    principal = principal_from_certificate(srv.getpeercert(binary_form=True))
    assert principal == f"User:{CLIENT_SUBJECT}" == "User:CN=wirebroker-client,O=wirebroker"


def test_requested_client_auth_without_certificate_is_anonymous(certs: Path) -> None:
    config = BrokerConfig(generate(certs).broker_settings(None, client_auth="requested"))
    srv = _handshake(server_context(config, "SSL"), _client(certs, mtls=False))
    assert principal_from_certificate(srv.getpeercert(binary_form=True)) == ANONYMOUS


def test_required_client_auth_refuses_a_client_without_certificate(certs: Path) -> None:
    config = BrokerConfig(generate(certs).broker_settings("SSL", client_auth="required"))
    with pytest.raises(ssl.SSLError):
        _handshake(server_context(config, "SSL"), _client(certs, mtls=False))


def test_inline_keystore_and_tls13_only(certs: Path) -> None:
    pem = (certs / "broker.pem").read_text()
    key_end = pem.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----")
    config = BrokerConfig(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": pem[:key_end],
            "ssl.keystore.certificate.chain": pem[key_end:],
            "ssl.enabled.protocols": "TLSv1.3",
        }
    )
    srv = _handshake(server_context(config, "SSL"), _client(certs, mtls=False))
    assert srv.version() == "TLSv1.3"


def test_bad_settings_are_config_errors(certs: Path) -> None:
    with pytest.raises(ConfigError, match=r"needs ssl\.keystore\.location"):
        server_context(BrokerConfig({}), "SSL")
    with pytest.raises(ConfigError, match="only PEM, PKCS12 and JKS"):
        server_context(BrokerConfig({"ssl.keystore.type": "BKS"}), "SSL")
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.type=JKS needs ssl\.keystore\.location"):
        server_context(BrokerConfig({"ssl.keystore.type": "JKS"}), "SSL")
    with pytest.raises(ConfigError, match=r"TLSv1\.1"):
        server_context(BrokerConfig({"ssl.enabled.protocols": "TLSv1.1"}), "SSL")
    config = {"ssl.keystore.location": str(certs / "broker.pem"), "ssl.client.auth": "required"}
    with pytest.raises(ConfigError, match=r"needs ssl\.truststore\.location"):
        server_context(BrokerConfig(config), "SSL")
