"""wirebroker.security.scram: the SCRAM server against RFC 7677's and RFC 5802's exchanges,
kafka-python's SCRAM client, and every refusal Kafka's ScramSaslServer makes."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from kafka.net.sasl.scram import ScramClient

from wirebroker.security.scram import (
    ScramCredential,
    ScramError,
    ScramMechanism,
    ScramServer,
    credential_from_password,
    credential_from_salted_password,
    decode_sasl_name,
    encode_sasl_name,
    salted_password,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512

# RFC 7677 section 3
RFC7677_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC7677_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC7677_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC7677_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC7677_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC7677_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

# RFC 5802 section 5 (SCRAM-SHA-1)
RFC5802_SALT = base64.b64decode("QSXCR+Q6sek8bf92")
RFC5802_CLIENT_NONCE = "fyko+d2lbbFgONRv9qkxdawL"
RFC5802_SERVER_NONCE = "3rfcNHYJY1ZVvWVs7j"

GENERIC_256 = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-256"
)


def client_final(
    hash_name: str,
    password: str,
    client_first: bytes,
    server_first: bytes,
    *,
    channel: bytes = b"biws",
    nonce: bytes | None = None,
) -> tuple[bytes, bytes]:
    """A test client's final message and the server signature it expects (RFC 5802 sec. 3)."""
    fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
    nonce = fields["r"].encode() if nonce is None else nonce
    salted = salted_password(hash_name, password, base64.b64decode(fields["s"]), int(fields["i"]))
    without_proof = b"c=" + channel + b",r=" + nonce
    bare = client_first.split(b",", 2)[2]
    auth_message = b",".join((bare, server_first, without_proof))
    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    stored_key = hashlib.new(hash_name, client_key).digest()
    signature = hmac.new(stored_key, auth_message, hash_name).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server_key = hmac.new(salted, b"Server Key", hash_name).digest()
    server_signature = hmac.new(server_key, auth_message, hash_name).digest()
    final = without_proof + b",p=" + base64.b64encode(proof)
    return final, b"v=" + base64.b64encode(server_signature)


def users(mechanism: ScramMechanism, **passwords: str) -> dict[str, ScramCredential]:
    return {user: credential_from_password(mechanism, pw) for user, pw in passwords.items()}


def server_for(
    mechanism: ScramMechanism, store: dict[str, ScramCredential], **kwargs: object
) -> ScramServer:
    return ScramServer(mechanism, store.get, **kwargs)  # type: ignore[arg-type]


def test_rfc7677_exchange() -> None:
    credential = credential_from_password(SHA256, "pencil", salt=RFC7677_SALT, iterations=4096)
    server = ScramServer(SHA256, {"user": credential}.get, server_nonce=RFC7677_SERVER_NONCE)
    assert server.evaluate(RFC7677_CLIENT_FIRST) == RFC7677_SERVER_FIRST
    assert not server.complete
    assert server.evaluate(RFC7677_CLIENT_FINAL) == RFC7677_SERVER_FINAL
    assert server.complete and server.authorization_id == "user"


def test_the_test_client_reproduces_rfc5802_sha1() -> None:
    client_first = b"n,,n=user,r=" + RFC5802_CLIENT_NONCE.encode()
    nonce = RFC5802_CLIENT_NONCE + RFC5802_SERVER_NONCE
    server_first = f"r={nonce},s=QSXCR+Q6sek8bf92,i=4096".encode()
    final, server_final = client_final("sha1", "pencil", client_first, server_first)
    assert final == f"c=biws,r={nonce},p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=".encode()
    assert server_final == b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ="


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_rfc5802_exchange_adapted(mechanism: ScramMechanism) -> None:
    credential = credential_from_password(mechanism, "pencil", salt=RFC5802_SALT)
    server = ScramServer(mechanism, {"user": credential}.get, server_nonce=RFC5802_SERVER_NONCE)
    client_first = b"n,,n=user,r=" + RFC5802_CLIENT_NONCE.encode()
    server_first = server.evaluate(client_first)
    nonce = RFC5802_CLIENT_NONCE + RFC5802_SERVER_NONCE
    assert server_first == f"r={nonce},s=QSXCR+Q6sek8bf92,i=4096".encode()
    final, expected = client_final(mechanism.hash_name, "pencil", client_first, server_first)
    assert server.evaluate(final) == expected


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_kafka_python_client_authenticates(mechanism: ScramMechanism) -> None:
    store = {"alice": credential_from_password(mechanism, "s3cret", iterations=8192)}
    server = server_for(mechanism, store)
    client = ScramClient("alice", "s3cret", mechanism.mechanism_name)
    client.process_server_first_message(server.evaluate(client.first_message()))
    client.process_server_final_message(server.evaluate(client.final_message()))  # checks v=
    assert server.complete and server.authorization_id == "alice"


def test_salted_password_credential_is_the_password_credential() -> None:
    salt = b"0123456789abcdef"
    from_password = credential_from_password(SHA512, "pw", salt=salt, iterations=5000)
    salted = salted_password("sha512", "pw", salt, 5000)
    assert credential_from_salted_password(SHA512, salt, salted, 5000) == from_password
    assert len(from_password.stored_key) == 64
    assert len(credential_from_password(SHA256, "pw").salt) == 32


def test_mechanisms() -> None:
    assert ScramMechanism.from_name("SCRAM-SHA-512") is SHA512
    assert ScramMechanism.from_name("SCRAM-SHA-1") is None
    assert ScramMechanism.from_type_code(1) is SHA256
    assert ScramMechanism.from_type_code(0) is None
    assert (SHA256.min_iterations, SHA256.max_iterations) == (4096, 16384)


def refused(server: ScramServer, message: bytes) -> ScramError:
    with pytest.raises(ScramError) as caught:
        server.evaluate(message)
    assert server.failed
    return caught.value


def test_wrong_password() -> None:
    server = server_for(SHA256, users(SHA256, user="pencil"))
    first = b"n,,n=user,r=abc"
    final, _ = client_final("sha256", "pen", first, server.evaluate(first))
    error = refused(server, final)
    assert error.message == "Invalid client credentials"
    assert not error.client_visible and error.client_message("SCRAM-SHA-256") == GENERIC_256
    assert "re-authentication" in error.client_message("SCRAM-SHA-256", reauthentication=True)
    assert server.authorization_id is None


def test_unknown_user_refused_at_client_first() -> None:
    error = refused(server_for(SHA256, users(SHA256, user="pencil")), b"n,,n=mallory,r=abc")
    assert error.message == "Authentication failed: Invalid user credentials"
    assert error.client_message("SCRAM-SHA-256") == GENERIC_256


def test_altered_nonce() -> None:
    server = server_for(SHA256, users(SHA256, user="pencil"))
    first = b"n,,n=user,r=abc"
    server_first = server.evaluate(first)
    nonce = server_first.split(b",")[0][2:] + b"x"
    final, _ = client_final("sha256", "pencil", first, server_first, nonce=nonce)
    assert refused(server, final).message == "Invalid client nonce in the final client message."


def test_client_nonce_alone_refused() -> None:
    server = server_for(SHA256, users(SHA256, user="pencil"))
    first = b"n,,n=user,r=abc"
    final, _ = client_final("sha256", "pencil", first, server.evaluate(first), nonce=b"abc")
    assert refused(server, final).message == "Invalid client nonce in the final client message."


def test_replayed_client_final() -> None:
    store = users(SHA256, user="pencil")
    first = b"n,,n=user,r=abc"
    server = server_for(SHA256, store)
    final, _ = client_final("sha256", "pencil", first, server.evaluate(first))
    server.evaluate(final)
    again = server_for(SHA256, store)  # a new exchange: a new server nonce
    again.evaluate(first)
    assert refused(again, final).message == "Invalid client nonce in the final client message."
    error = refused(server, final)  # the completed exchange takes no more
    assert error.message == "Unexpected challenge in Sasl server state COMPLETE"


def test_bad_channel_binding() -> None:
    server = server_for(SHA256, users(SHA256, user="pencil"))
    first = b"n,,n=user,r=abc"
    channel = base64.b64encode(b"y,,")
    final, _ = client_final("sha256", "pencil", first, server.evaluate(first), channel=channel)
    error = refused(server, final)
    assert error.message == "Invalid channel binding in the final client message."


def test_too_long_client_first() -> None:
    store = users(SHA256, user="pencil")
    long_first = b"n,,n=user,r=" + b"a" * 8192
    assert "more than 8192" in refused(server_for(SHA256, store), long_first).message
    small = server_for(SHA256, store, max_message_bytes=20)
    assert refused(small, b"n,,n=user,r=" + b"a" * 9).message.startswith(
        "Invalid SCRAM client first message: 21 bytes"
    )
    assert server_for(SHA256, store, max_message_bytes=20).evaluate(b"n,,n=user,r=" + b"a" * 8)


def test_too_few_iterations_stored() -> None:
    store = {"user": credential_from_password(SHA512, "pencil", iterations=4095)}
    error = refused(server_for(SHA512, store), b"n,,n=user,r=abc")
    assert error.message == "Iterations 4095 is less than the minimum 4096 for SCRAM_SHA_512"


@pytest.mark.parametrize(
    "message",
    [
        b"y,,n=user,r=abc",
        b"p=tls-unique,,n=user,r=abc",
        b"n,,n=user",
        b"n,,r=abc,n=user",
        b"n,,n=us\xc3\xa9r,r=abc",
        b"n,,n=user,r=a,bc",
        b"n,,n=,r=abc",
        b"",
    ],
)
def test_malformed_client_first(message: bytes) -> None:
    error = refused(server_for(SHA256, users(SHA256, user="pencil")), message)
    assert error.message.startswith("Invalid SCRAM client first message format: ")


def test_malformed_client_final() -> None:
    server = server_for(SHA256, users(SHA256, user="pencil"))
    server.evaluate(b"n,,n=user,r=abc")
    error = refused(server, b"c=biws,p=AAAA")
    assert error.message == "Invalid SCRAM client final message format: c=biws,p=AAAA"


def test_short_proof() -> None:
    server = server_for(SHA256, users(SHA256, user="pencil"))
    nonce = server.evaluate(b"n,,n=user,r=abc").split(b",")[0][2:]
    assert refused(server, b"c=biws,r=" + nonce + b",p=AAAA").message == (
        "Invalid client credentials"
    )


def test_authzid_equal_to_the_user_accepted() -> None:
    server = server_for(SHA256, users(SHA256, user="pencil"))
    first = b"n,a=user,n=user,r=abc"
    channel = base64.b64encode(b"n,a=user,")
    final, expected = client_final(
        "sha256", "pencil", first, server.evaluate(first), channel=channel
    )
    assert server.evaluate(final) == expected
    assert server.authorization_id == "user"


def test_authzid_of_another_user_refused_with_a_visible_text() -> None:
    error = refused(server_for(SHA256, users(SHA256, user="x", admin="y")), b"n,a=admin,n=user,r=a")
    text = (
        "Authentication failed: Client requested an authorization id that is different "
        "from username"
    )
    assert error.client_visible and error.message == text
    assert error.client_message("SCRAM-SHA-256") == text


def test_escaped_user_names() -> None:
    assert encode_sasl_name("a,b=c") == "a=2Cb=3Dc"
    assert decode_sasl_name("a=2Cb=3Dc") == "a,b=c"
    with pytest.raises(ValueError):
        decode_sasl_name("a=2Xb")
    store = users(SHA256, **{"a,b=c": "pw"})
    server = server_for(SHA256, store)
    first = b"n,,n=a=2Cb=3Dc,r=abc"
    final, expected = client_final("sha256", "pw", first, server.evaluate(first))
    assert server.evaluate(final) == expected
    assert server.authorization_id == "a,b=c"


def test_bad_escape_refused() -> None:
    error = refused(server_for(SHA256, users(SHA256, user="pw")), b"n,,n=a=2Fb,r=abc")
    assert error.message.startswith("Invalid SCRAM client first message format")
    assert decode_sasl_name("=3D2C") == "=2C"  # '=2C' decoded first, as Kafka
    assert server_for(SHA256, users(SHA256, **{"=2C": "pw"})).evaluate(b"n,,n==3D2C,r=abc")


def test_tokenauth_refused_other_extensions_ignored() -> None:
    store = users(SHA256, user="pencil")
    error = refused(server_for(SHA256, store), b"n,,n=user,r=abc,tokenauth=TRUE")
    assert error.message == "Token Authentication failed: Invalid tokenId : user"
    server = server_for(SHA256, store)
    first = b"n,,n=user,r=abc,tokenauth=false,foo=bar"
    final, expected = client_final("sha256", "pencil", first, server.evaluate(first))
    assert server.evaluate(final) == expected
    assert server.extensions == {"tokenauth": "false", "foo": "bar"}


def test_failed_server_refuses_everything_after() -> None:
    server = server_for(SHA256, users(SHA256, user="pencil"))
    refused(server, b"n,,n=nobody,r=abc")
    error = refused(server, b"n,,n=user,r=abc")
    assert error.message == "Unexpected challenge in Sasl server state FAILED"


def test_server_nonces_differ() -> None:
    store = users(SHA256, user="pencil")
    first = b"n,,n=user,r=abc"
    nonces = {server_for(SHA256, store).evaluate(first).split(b",")[0] for _ in range(5)}
    assert len(nonces) == 5
    assert all(n.startswith(b"r=abc") and len(n) > 20 for n in nonces)
