"""Java KeyStore files (`ssl.keystore.type=JKS`, `ssl.truststore.type=JKS`) as Java's keytool
writes them, read into PEM text for the standard library's `ssl`. Pure: bytes in, entries
out (hashlib only; no I/O).

    store = load(data, store_password, key_password)   # JksError: malformed, wrong password
    store.keys    (PrivateKeyEntry(alias, pkcs8 DER, chain of DER certificates), ...)
    store.certs   (TrustedCertEntry(alias, DER certificate), ...)
    pem_key(entry.pkcs8), pem_certs(ders)

The format (Sun's JavaKeyStore, version 1 or 2; every number big-endian):

    magic 0xFEEDFEED, version, entry count (4 bytes each)
    per entry: tag (1 a private key, 2 a trusted certificate), alias (2-byte length + modified
      UTF-8), creation time (8 bytes, ms), then
        tag 1: 4-byte length + an EncryptedPrivateKeyInfo (DER), a 4-byte count of the
               certificate chain, per certificate (v2: its type, "X.509", as the alias) a
               4-byte length + the DER certificate
        tag 2: (v2: the type) a 4-byte length + the DER certificate
    SHA-1(password + "Mighty Aphrodite" + everything before): the store's integrity check

A password is its UTF-16BE bytes. A private key is protected with Sun's KeyProtector (OID
1.3.6.1.4.1.42.2.17.1.1): the encrypted data is salt (20 bytes) + the key XOR a keystream +
check (20); the keystream is d1 d2 ... with d1 = SHA-1(password + salt), d(i+1) =
SHA-1(password + d(i)); check = SHA-1(password + the plain PKCS#8 key).

Why not a library: pyjks (the PyPI package for this) installs here, but its last release is
from 2020 and it brings twofish (a C extension built from a 2013 source package), pycryptodomex,
javaobj-py3 and pyasn1 for what is this page over hashlib; JCEKS and BKS stores (which need
those) are not supported. Kafka reads a PKCS12 file named as JKS too (Java's keystore.type.compat):
`is_jks` tells the caller which it holds.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
from dataclasses import dataclass

__all__ = [
    "JksError",
    "JksStore",
    "PrivateKeyEntry",
    "TrustedCertEntry",
    "is_jks",
    "load",
    "pem_certs",
    "pem_key",
]

MAGIC = 0xFEEDFEED
JCEKS_MAGIC = 0xCECECECE
_WHITENER = b"Mighty Aphrodite"
#: Sun's KeyProtector, DER-encoded OID 1.3.6.1.4.1.42.2.17.1.1
_KEY_PROTECTOR = bytes.fromhex("2b060104012a02110101")
_DIGEST = 20


class JksError(ValueError):
    """A store that cannot be read: malformed, unsupported, or a wrong password."""


@dataclass(frozen=True)
class PrivateKeyEntry:
    alias: str
    pkcs8: bytes
    chain: tuple[bytes, ...]


@dataclass(frozen=True)
class TrustedCertEntry:
    alias: str
    cert: bytes


@dataclass(frozen=True)
class JksStore:
    keys: tuple[PrivateKeyEntry, ...]
    certs: tuple[TrustedCertEntry, ...]


def is_jks(data: bytes) -> bool:
    return len(data) >= 4 and struct.unpack_from(">I", data)[0] in (MAGIC, JCEKS_MAGIC)


def _password(password: str) -> bytes:
    return password.encode("utf-16-be")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise JksError("the keystore is truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u16(self) -> int:
        return int(struct.unpack(">H", self.take(2))[0])

    def u32(self) -> int:
        return int(struct.unpack(">I", self.take(4))[0])

    def utf(self) -> str:
        return self.take(self.u16()).decode("utf-8", errors="replace")

    def blob(self) -> bytes:
        return self.take(self.u32())


def _der(data: bytes, pos: int) -> tuple[int, bytes, int]:
    """One DER element at `pos`: (tag, contents, the position after it)."""
    if pos + 2 > len(data):
        raise JksError("malformed private key entry")
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        if n == 0 or n > 4 or pos + n > len(data):
            raise JksError("malformed private key entry")
        length = int.from_bytes(data[pos : pos + n], "big")
        pos += n
    if pos + length > len(data):
        raise JksError("malformed private key entry")
    return tag, data[pos : pos + length], pos + length


def _protected_data(epki: bytes) -> bytes:
    """The encrypted data of an EncryptedPrivateKeyInfo protected by Sun's KeyProtector."""
    tag, body, _ = _der(epki, 0)
    if tag != 0x30:
        raise JksError("malformed private key entry")
    tag, algorithm, after = _der(body, 0)
    oid_tag, oid, _ = _der(algorithm, 0) if tag == 0x30 else (0, b"", 0)
    if oid_tag != 0x06 or oid != _KEY_PROTECTOR:
        raise JksError("a private key not protected by keytool's JKS algorithm")
    tag, data, _ = _der(body, after)
    if tag != 0x04:
        raise JksError("malformed private key entry")
    return data


def _decrypt_key(epki: bytes, password: bytes, alias: str) -> bytes:
    data = _protected_data(epki)
    if len(data) < 2 * _DIGEST:
        raise JksError("malformed private key entry")
    salt, encrypted, check = data[:_DIGEST], data[_DIGEST:-_DIGEST], data[-_DIGEST:]
    stream = bytearray()
    digest = salt
    while len(stream) < len(encrypted):
        digest = hashlib.sha1(password + digest).digest()
        stream += digest
    plain = bytes(a ^ b for a, b in zip(encrypted, stream, strict=False))
    if not hmac.compare_digest(hashlib.sha1(password + plain).digest(), check):
        raise JksError(f"cannot recover the key {alias!r}: wrong key password")
    return plain


def _chain(reader: _Reader, version: int) -> tuple[bytes, ...]:
    certs = []
    for _ in range(reader.u32()):
        if version == 2:
            reader.utf()  # the certificate type, "X.509"
        certs.append(reader.blob())
    return tuple(certs)


def load(data: bytes, store_password: str | None, key_password: str | None = None) -> JksStore:
    """The entries of a JKS store. `store_password` checks its integrity (None: not checked,
    as Java reads a truststore without one); private keys are recovered with `key_password`
    (default: the store password, as Kafka's ssl.key.password defaults)."""
    reader = _Reader(data)
    magic = reader.u32()
    if magic == JCEKS_MAGIC:
        raise JksError("a JCEKS store: only JKS and PKCS12 are supported")
    if magic != MAGIC:
        raise JksError("not a JKS store")
    version = reader.u32()
    if version not in (1, 2):
        raise JksError(f"JKS version {version} is not supported")
    keys: list[tuple[str, bytes, tuple[bytes, ...]]] = []
    certs: list[TrustedCertEntry] = []
    for _ in range(reader.u32()):
        tag = reader.u32()
        alias = reader.utf()
        reader.take(8)  # creation time
        if tag == 1:
            epki = reader.blob()
            keys.append((alias, epki, _chain(reader, version)))
        elif tag == 2:
            if version == 2:
                reader.utf()
            certs.append(TrustedCertEntry(alias, reader.blob()))
        else:
            raise JksError(f"unknown JKS entry type {tag}")
    end = reader.pos
    digest = reader.take(_DIGEST)
    if store_password is not None:
        expected = hashlib.sha1(_password(store_password) + _WHITENER + data[:end]).digest()
        if not hmac.compare_digest(expected, digest):
            raise JksError("Keystore was tampered with, or password was incorrect")
    secret = key_password if key_password is not None else store_password
    entries = []
    for alias, epki, chain in keys:
        if secret is None:
            raise JksError(f"the key {alias!r} needs a password")
        entries.append(PrivateKeyEntry(alias, _decrypt_key(epki, _password(secret), alias), chain))
    return JksStore(tuple(entries), tuple(certs))


def _pem(label: str, der: bytes) -> str:
    text = base64.b64encode(der).decode()
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


def pem_key(pkcs8: bytes) -> str:
    return _pem("PRIVATE KEY", pkcs8)


def pem_certs(ders: tuple[bytes, ...] | list[bytes]) -> str:
    return "".join(_pem("CERTIFICATE", der) for der in ders)
