"""One side's connection: a request frame out, what the broker did about it back.

The harness compares reactions, not just bodies, so an exchange never raises for what a
broker may legitimately do: it returns an `Outcome` of one of these kinds

    answer       a response frame with our correlation id, decoded by this repository's codecs
    no-answer    nothing came back where none is due (Produce acks=0): a follow-up ApiVersions
                 on the same connection was answered first
    closed       the broker closed the connection instead of answering
    timeout      no answer within the step's deadline (the connection is dropped)
    undecodable  an answer came back but our codecs cannot decode it (the error is kept: a
                 codec bug to report, or a version our codecs do not know)
    not-sent     the request could not be built (a value an earlier step should have given
                 was missing, e.g. after that step failed on this side)

A closed or timed-out connection is replaced by a fresh one for the next step.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol.codec import decode_response, encode_request

ANSWER = "answer"
NO_ANSWER = "no-answer"
CLOSED = "closed"
TIMEOUT = "timeout"
UNDECODABLE = "undecodable"
NOT_SENT = "not-sent"

CLIENT_ID = "conformance"
_LENGTH = struct.Struct(">i")
_PROBE_API = 18  # ApiVersions v0: the follow-up that shows an acks=0 Produce got no answer

Decoder = Callable[[bytes], tuple[int, Any]]


@dataclass(frozen=True)
class Outcome:
    """What one side did with one request (see the module docstring for `kind`)."""

    kind: str
    body: Any = None
    detail: str = ""


@dataclass(frozen=True)
class Request:
    """A request ready to send: its frame (length prefix included), its correlation id and
    how to decode the answer (None: our generated codec for `api`/`version`)."""

    api: int
    version: int
    frame: bytes
    correlation: int
    decoder: Decoder | None = None


class Connection:
    """A blocking socket to one broker, opened on first use and again after a close."""

    def __init__(self, bootstrap: str, timeout: float = 15.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.address = (host, int(port))
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._correlation = 0

    def next_correlation(self) -> int:
        self._correlation += 1
        return self._correlation

    def request(self, api: int, version: int, body: Any) -> Request:
        """A request through our codecs (raises `EncodeError` when the body does not fit)."""
        correlation = self.next_correlation()
        frame = encode_request(api, version, correlation, CLIENT_ID, body)
        return Request(api, version, frame, correlation)

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None

    def _socket(self) -> socket.socket:
        if self._sock is None:
            self._sock = socket.create_connection(self.address, timeout=self.timeout)
        return self._sock

    def exchange(
        self, req: Request, *, answer_due: bool = True, timeout: float | None = None
    ) -> Outcome:
        """Send `req` and read what comes back (see `Outcome`)."""
        sock = self._socket()
        sock.settimeout(timeout or self.timeout)
        try:
            sock.sendall(req.frame)
            if not answer_due:
                probe = self.request(_PROBE_API, 0, {})
                sock.sendall(probe.frame)
            frame = self._read_frame(sock)
        except TimeoutError:
            self.close()
            return Outcome(TIMEOUT)
        except (ConnectionError, OSError) as exc:
            self.close()
            return Outcome(CLOSED, detail=type(exc).__name__)
        if frame is None:
            self.close()
            return Outcome(CLOSED)
        if not answer_due:
            (correlation,) = _LENGTH.unpack_from(frame, 0)
            if correlation == probe.correlation:
                return Outcome(NO_ANSWER)
            # An answer to the acks=0 request after all; the probe's answer follows it.
            with contextlib.suppress(OSError, TimeoutError):
                self._read_frame(sock)
        return self._decode(req, frame)

    def _decode(self, req: Request, frame: bytes) -> Outcome:
        try:
            if req.decoder is not None:
                correlation, body = req.decoder(frame)
            else:
                correlation, body = decode_response(req.api, req.version, frame)
        except Exception as exc:  # any codec failure is a finding, never a crash
            self.close()
            return Outcome(UNDECODABLE, detail=f"{type(exc).__name__}: {exc}"[:300])
        if correlation != req.correlation:
            self.close()
            return Outcome(
                UNDECODABLE, detail=f"correlation id {correlation}, sent {req.correlation}"
            )
        return Outcome(ANSWER, body=body)

    @staticmethod
    def _read_frame(sock: socket.socket) -> bytes | None:
        head = _recv_exact(sock, 4)
        if head is None:
            return None
        (size,) = _LENGTH.unpack(head)
        if size < 4 or size > 256 * 1024 * 1024:
            raise ConnectionError(f"bad frame size {size}")
        return _recv_exact(sock, size)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)
