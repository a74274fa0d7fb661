"""Connection creation rate per client address (KIP-612, an `ip` client quota entity with
`connection_creation_rate`): the same sequence and the same assertions against Apache Kafka
4.4 (the oracle) and a wirebroker. The connections come from a loopback address of their
own (127.x.y.z, bound as the source), so the quota throttles no other test on a shared
broker. With a rate of 1 a second, ten connections opened at once are served (Kafka's rate
counts a first burst over ten windows); the 11th is accepted but not served: its request is
never answered and the broker closes it after the throttle time, (rate - quota) / quota x
the window, 1 s after the first connection; the next, still over the rate, is closed 2 s
after the first (Kafka closes throttled sockets on its acceptor's 500 ms poll, so up to
0.5 s later still). That a connection is served again once the rate is back under the quota
is tests/unit/security/test_connection_rates.py's (here it takes the burst's 11 s)."""

from __future__ import annotations

import random
import socket
import struct
import time
import uuid
from collections.abc import Iterator

import pytest

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request


def _call(sock: socket.socket, api: ApiKey, version: int, body: dict[str, object]) -> object:
    sock.sendall(encode_request(int(api), version, 1, "cr-oracle", body))
    head = sock.recv(4)
    if len(head) < 4:
        raise ConnectionError("closed without an answer")
    (size,) = struct.unpack(">i", head)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed mid-answer")
        data += chunk
    return decode_response(int(api), version, data)[1]


def _alter(bootstrap: str, ip: str, value: float, remove: bool = False) -> None:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        entry = {
            "entity": [{"entity_type": "ip", "entity_name": ip}],
            "ops": [{"key": "connection_creation_rate", "value": value, "remove": remove}],
        }
        answer = _call(
            sock, ApiKey.ALTER_CLIENT_QUOTAS, 1, {"entries": [entry], "validate_only": False}
        )
        assert [e.error_code for e in answer.entries] == [0]  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10  # Kafka's broker learns it from the metadata log
        while True:
            described = _call(
                sock,
                ApiKey.DESCRIBE_CLIENT_QUOTAS,
                1,
                {
                    "components": [{"entity_type": "ip", "match_type": 0, "match": ip}],
                    "strict": True,
                },
            )
            present = bool(described.entries)  # type: ignore[attr-defined]
            if present != remove:
                return
            assert time.monotonic() < deadline


@pytest.fixture
def source_ip(single_broker: str) -> Iterator[tuple[str, str]]:
    """(bootstrap, a fresh loopback address) with connection_creation_rate=1 on it."""
    ip = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
    _alter(single_broker, ip, 1.0)
    yield single_broker, ip
    _alter(single_broker, ip, 0.0, remove=True)


def _connect(bootstrap: str, source: str) -> socket.socket:
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    return socket.create_connection((host, int(port)), timeout=10, source_address=(source, 0))


def _api_versions(sock: socket.socket) -> int:
    body = {"client_software_name": "cr", "client_software_version": uuid.uuid4().hex[:4]}
    return int(_call(sock, ApiKey.API_VERSIONS, 3, body).error_code)  # type: ignore[attr-defined]


def _closed_unanswered(bootstrap: str, ip: str, since: float) -> float:
    """Open a connection, ask; it must be closed without an answer: when (s after `since`)."""
    with _connect(bootstrap, ip) as sock:  # accepted by TCP ...
        with pytest.raises(OSError):  # ... never answered: closed (or reset)
            _api_versions(sock)
        return time.monotonic() - since


def test_connections_over_the_ip_rate_are_closed_unserved(source_ip: tuple[str, str]) -> None:
    bootstrap, ip = source_ip
    first = time.monotonic()
    burst = [_connect(bootstrap, ip) for _ in range(10)]
    try:
        closed = _closed_unanswered(bootstrap, ip, first)
        for sock in burst:  # the ten within the rate are served
            assert _api_versions(sock) == 0
    finally:
        for sock in burst:
            sock.close()
    # 11 over the 10 s a first burst counts over: (1.1 - 1) / 1 x 10 s after the first
    assert 0.9 <= closed <= 1.7, closed
    # still over: 11 over 10 s + the part of the current second (a sample is a second;
    # the burst's sample counts until it is 11 s old): closed at the next whole second
    closed = _closed_unanswered(bootstrap, ip, first)
    assert 1.9 <= closed <= 2.7, closed
