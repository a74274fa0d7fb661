"""kafkajs 2.2.4 (Node) over TLS and SASL (issue 34), against `BrokerHandle(security=...)`
subprocesses (see test_security.py): produce and read back over SSL, SASL_PLAINTEXT PLAIN,
SASL_SSL PLAIN and SCRAM-SHA-256/512; a wrong password is refused."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from _kafkajs import JS_DIR, node, run_script
from _secured import secured_brokers

from wirebroker.testing import BrokerHandle
from wirebroker.testing._security import USERS

pytestmark = pytest.mark.compat

CASES = [
    ("SSL", "PLAIN"),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512"),
]


brokers = pytest.fixture(scope="module", name="brokers")(secured_brokers)


def _request(handle: BrokerHandle, topic: str, password: str | None = None) -> dict[str, Any]:
    secured = handle.secured
    assert secured is not None
    request: dict[str, Any] = {
        "mode": "produce_consume",
        "brokers": [handle.bootstrap],
        "topic": topic,
        "values": ["a", "b", "c"],
    }
    if secured.ca is not None:
        request["ca"] = secured.ca
    if "SASL" in secured.protocol:
        user = next(iter(USERS))
        request["sasl"] = {
            "mechanism": secured.mechanism.lower(),
            "username": user,
            "password": password or USERS[user],
        }
    return request


@pytest.mark.parametrize(("security", "mechanism"), CASES)
def test_kafkajs_produce_and_consume(
    brokers: dict[tuple[str, str], BrokerHandle], security: str, mechanism: str
) -> None:
    key = (security, mechanism)
    if key not in brokers:
        brokers[key] = BrokerHandle(security=security, sasl_mechanism=mechanism).start()
    handle = brokers[key]
    topic = handle.create_topic(f"kjs-{uuid.uuid4().hex[:8]}")
    result = run_script("security_client.js", _request(handle, topic), 30_000)
    assert result["values"] == ["a", "b", "c"]


def test_kafkajs_wrong_password_is_refused(
    brokers: dict[tuple[str, str], BrokerHandle],
) -> None:
    import json
    import subprocess

    handle = (
        brokers.get(("SASL_PLAINTEXT", "PLAIN")) or BrokerHandle(security="SASL_PLAINTEXT").start()
    )
    brokers[("SASL_PLAINTEXT", "PLAIN")] = handle
    request = _request(handle, "never", password="wrong") | {"timeoutMs": 30_000}
    proc = subprocess.run(
        [node(), str(JS_DIR / "security_client.js"), json.dumps(request)],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=40,
        check=False,
    )
    assert proc.returncode == 1
    assert "SASL PLAIN authentication failed" in proc.stdout or "Authentication" in proc.stdout
