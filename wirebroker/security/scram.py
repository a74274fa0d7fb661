"""SCRAM-SHA-256 / SCRAM-SHA-512, the server side (RFC 5802, RFC 7677), as Kafka serves it.

A pure state machine: no I/O, no trio. The SASL wire layer (SaslAuthenticate) feeds it the
client's two messages and sends back what it returns:

    server = ScramServer(ScramMechanism.SCRAM_SHA_256, lookup)   # lookup(username) -> cred|None
    server_first = server.evaluate(client_first)   # bytes in, bytes out
    server_final = server.evaluate(client_final)   # b"v=<ServerSignature>"
    server.complete, server.authorization_id       # True, the authenticated user name

Every refusal raises `ScramError` and leaves the server failed (any later `evaluate` raises
too). Kafka answers a refused SaslAuthenticate with SASL_AUTHENTICATION_FAILED and, unless the
error is one a client may read (`client_visible`, only the authzid refusal), a fixed text:
`error.client_message(mechanism_name)` gives the text to send; `error.message` is for the log.

Credentials are stored as `ScramCredential` (salt, StoredKey, ServerKey, iterations), never
the password: `credential_from_password` derives one (for tests, tools and JAAS-style users),
`credential_from_salted_password` builds one from what AlterUserScramCredentials carries.

Kafka 4.4's ScramSaslServer is the reference (read in its bytecode; texts are its own):
- client-first: gs2 header "n," only (no channel binding: "y"/"p=" are a format error), an
  optional authzid which must equal the user name as received after decoding '=2C' / '=3D'
  (Kafka compares the raw authzid with the decoded name), an optional "m=" ignored, user
  name and nonce in US-ASCII, extensions ignored except `tokenauth=true`, refused here since
  there are no delegation tokens ("Token Authentication failed: Invalid tokenId : <user>").
- an unknown user is refused at once, no fake salt ("Authentication failed: Invalid user
  credentials"), as Kafka does; a stored credential under `mechanism.min_iterations` too.
- client-final: the nonce must be the combined nonce, the proof verified against StoredKey
  with `hmac.compare_digest`.
Ours beyond Kafka: a client message longer than `max_message_bytes` is refused before it is
parsed (Kafka relies on `sasl.server.max.receive.size`, 512 KiB, at the frame level), and the
channel binding `c=` must be the base64 of the gs2 header ("biws" for "n,,"), as RFC 5802
requires (Kafka does not check it; only a client that breaks the RFC sees the difference).
The auth message is the bytes received (RFC). Kafka rebuilds the client-first part from its
parsed fields, the same bytes unless the client sends two extensions or more (Kafka orders
them its own way, differently from one JVM to the next, and then refuses the proof).
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ScramCredential",
    "ScramError",
    "ScramMechanism",
    "ScramServer",
    "credential_from_password",
    "credential_from_salted_password",
    "decode_sasl_name",
    "encode_sasl_name",
    "salted_password",
]

#: The longest client message accepted (ours: Kafka caps the SASL frame at 512 KiB).
DEFAULT_MAX_MESSAGE_BYTES = 8192


class ScramMechanism(enum.Enum):
    """Kafka's SCRAM mechanisms: (wire type code, SASL name, hashlib name)."""

    SCRAM_SHA_256 = (1, "SCRAM-SHA-256", "sha256")
    SCRAM_SHA_512 = (2, "SCRAM-SHA-512", "sha512")

    def __init__(self, type_code: int, mechanism_name: str, hash_name: str) -> None:
        self.type_code = type_code  # DescribeUserScramCredentials' `mechanism`
        self.mechanism_name = mechanism_name  # as in SaslHandshake and sasl.enabled.mechanisms
        self.hash_name = hash_name

    #: Kafka's bounds for a credential's iteration count (both mechanisms).
    @property
    def min_iterations(self) -> int:
        return 4096

    @property
    def max_iterations(self) -> int:
        return 16384

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism | None:
        """The mechanism called `name` ("SCRAM-SHA-256"), or None."""
        for mechanism in cls:
            if mechanism.mechanism_name == name:
                return mechanism
        return None

    @classmethod
    def from_type_code(cls, code: int) -> ScramMechanism | None:
        """The mechanism with wire code `code` (1, 2), or None (0 is Kafka's UNKNOWN)."""
        for mechanism in cls:
            if mechanism.type_code == code:
                return mechanism
        return None


@dataclass(frozen=True)
class ScramCredential:
    """What a server keeps of a SCRAM password (RFC 5802 section 3)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i): PBKDF2-HMAC over the UTF-8 password (Kafka applies no SASLprep)."""
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


def _keys(hash_name: str, salted: bytes) -> tuple[bytes, bytes]:
    client_key = _hmac(hash_name, salted, b"Client Key")
    stored_key = hashlib.new(hash_name, client_key).digest()
    return stored_key, _hmac(hash_name, salted, b"Server Key")


def credential_from_salted_password(
    mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
) -> ScramCredential:
    """The credential for a SaltedPassword (AlterUserScramCredentials' upsertion carries the
    salt and salted password the client computed)."""
    stored_key, server_key = _keys(mechanism.hash_name, salted)
    return ScramCredential(salt, stored_key, server_key, iterations)


def credential_from_password(
    mechanism: ScramMechanism, password: str, *, iterations: int = 4096, salt: bytes | None = None
) -> ScramCredential:
    """The credential for `password` with a random 32-byte salt (or `salt`), as Kafka's
    ScramFormatter generates one; `iterations` is not checked against the bounds here."""
    if salt is None:
        salt = os.urandom(32)
    salted = salted_password(mechanism.hash_name, password, salt, iterations)
    return credential_from_salted_password(mechanism, salt, salted, iterations)


def encode_sasl_name(username: str) -> str:
    """A user name as a SCRAM saslname: ',' -> '=2C', '=' -> '=3D'."""
    return username.replace("=", "=3D").replace(",", "=2C")


def decode_sasl_name(sasl_name: str) -> str:
    """The user name in a saslname; ValueError for a '=' not in '=2C' / '=3D'."""
    if "=" in sasl_name.replace("=2C", "").replace("=3D", ""):
        raise ValueError(f"Invalid username: {sasl_name}")
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


class ScramError(Exception):
    """A refused SCRAM exchange: `message` (Kafka's text where it has one) for the log;
    `client_visible` when Kafka sends that text to the client as it is."""

    def __init__(self, message: str, *, client_visible: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.client_visible = client_visible

    def client_message(self, mechanism_name: str, *, reauthentication: bool = False) -> str:
        """The SaslAuthenticate error_message Kafka sends for this refusal."""
        if self.client_visible:
            return self.message
        during = "re-authentication" if reauthentication else "authentication"
        return (
            f"Authentication failed during {during} due to invalid credentials with SASL "
            f"mechanism {mechanism_name}"
        )


# Kafka's grammar (its ScramMessages), over US-ASCII: ',' is 0x2C and '=' is 0x3D.
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_BASE64 = r"(?:[A-Za-z0-9/+]{4})*(?:[A-Za-z0-9/+]{3}=|[A-Za-z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)(?:m={_VALUE},)?"
    rf"(?P<bare>n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<ext>{_EXTENSIONS}))"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS}),"
    rf"p=(?P<proof>{_BASE64})"
)


def _extensions(text: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in text.split(",") if item)
    return {key: value for key, _, value in pairs}


def _server_nonce() -> str:
    """130 random bits in base 36, as Kafka's ScramFormatter.secureRandomString."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, digit = divmod(value, 36)
        out = digits[digit] + out
        if value == 0:
            return out


class _State(enum.Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramServer:
    """One SCRAM exchange, server side (see the module's docstring).

    `lookup(username)` returns the user's credential for this mechanism or None (unknown).
    `server_nonce` fixes the server's part of the nonce (tests); it must be printable ASCII
    without ','. `max_message_bytes` caps each client message.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        *,
        server_nonce: str | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._server_nonce = server_nonce if server_nonce is not None else _server_nonce()
        self._max_message_bytes = max_message_bytes
        self._state = _State.RECEIVE_CLIENT_FIRST_MESSAGE
        self._credential: ScramCredential | None = None
        self._username = ""
        self._nonce = ""
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        #: The authenticated user (Kafka's authorization id), once `complete`.
        self.authorization_id: str | None = None
        #: The client-first message's extensions (Kafka ignores all but `tokenauth`).
        self.extensions: dict[str, str] = {}

    @property
    def complete(self) -> bool:
        return self._state is _State.COMPLETE

    @property
    def failed(self) -> bool:
        return self._state is _State.FAILED

    def evaluate(self, message: bytes) -> bytes:
        """The answer to the client's next message; raises ScramError (then failed)."""
        state = self._state
        try:
            if state is _State.RECEIVE_CLIENT_FIRST_MESSAGE:
                answer = self._client_first(self._text(message, "first"))
                self._state = _State.RECEIVE_CLIENT_FINAL_MESSAGE
                return answer
            if state is _State.RECEIVE_CLIENT_FINAL_MESSAGE:
                answer = self._client_final(self._text(message, "final"))
                self._state = _State.COMPLETE
                return answer
            raise ScramError(f"Unexpected challenge in Sasl server state {state.value}")
        except ScramError:
            self._state = _State.FAILED
            self._credential = None
            raise

    def _text(self, message: bytes, which: str) -> str:
        if len(message) > self._max_message_bytes:
            raise ScramError(
                f"Invalid SCRAM client {which} message: {len(message)} bytes, more than "
                f"{self._max_message_bytes}"
            )
        return message.decode("utf-8", errors="replace")

    def _client_first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise ScramError(f"Invalid SCRAM client first message format: {text}")
        self.extensions = _extensions(match["ext"])
        username = decode_sasl_name(match["saslname"])  # the grammar allows only =2C / =3D
        if self.extensions.get("tokenauth", "").lower() == "true":
            raise ScramError(f"Token Authentication failed: Invalid tokenId : {username}")
        credential = self._lookup(username)
        if credential is None:
            raise ScramError("Authentication failed: Invalid user credentials")
        authzid = match["authzid"] or ""
        if authzid and authzid != username:
            raise ScramError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username",
                client_visible=True,
            )
        minimum = self.mechanism.min_iterations
        if credential.iterations < minimum:
            raise ScramError(
                f"Iterations {credential.iterations} is less than the minimum {minimum} "
                f"for {self.mechanism.name}"
            )
        self._credential = credential
        self._username = username
        self._gs2_header = match["gs2"]
        self._client_first_bare = match["bare"]
        self._nonce = match["nonce"] + self._server_nonce
        salt = base64.b64encode(credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode("ascii")

    def _client_final(self, text: str) -> bytes:
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise ScramError(f"Invalid SCRAM client final message format: {text}")
        credential = self._credential
        assert credential is not None
        if not hmac.compare_digest(match["nonce"].encode(), self._nonce.encode()):
            raise ScramError("Invalid client nonce in the final client message.")
        expected_binding = base64.b64encode(self._gs2_header.encode("ascii")).decode("ascii")
        if match["channel"] != expected_binding:
            raise ScramError("Invalid channel binding in the final client message.")
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, match["without_proof"])
        ).encode("ascii")
        hash_name = self.mechanism.hash_name
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except binascii.Error:
            raise ScramError("Invalid client credentials") from None
        client_signature = _hmac(hash_name, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise ScramError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        computed = hashlib.new(hash_name, client_key).digest()
        if not hmac.compare_digest(computed, credential.stored_key):
            raise ScramError("Invalid client credentials")
        self._credential = None
        self.authorization_id = self._username
        signature = _hmac(hash_name, credential.server_key, auth_message)
        return b"v=" + base64.b64encode(signature)
