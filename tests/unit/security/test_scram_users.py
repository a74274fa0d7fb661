"""The SCRAM users a SASL listener asks (wirebroker.security.scram_users.ScramUsers.sasl_lookup):
the users altered through the API first, then the listener's JAAS entries, per mechanism."""

from __future__ import annotations

from wirebroker.security.credentials import ScramUpsertion
from wirebroker.security.scram import (
    ScramMechanism,
    credential_from_password,
    credential_from_salted_password,
    salted_password,
)
from wirebroker.security.scram_users import LocalScramUsers

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


async def test_the_api_users_first_then_the_jaas_ones() -> None:
    users = LocalScramUsers()
    salted = salted_password("sha256", "api-pw", b"salt", 4096)
    await users.alter([], [ScramUpsertion("alice", 1, 4096, b"salt", salted)])
    jaas = {SHA256: {"alice": credential_from_password(SHA256, "jaas-pw")}}
    jaas[SHA256]["bob"] = credential_from_password(SHA256, "bob-pw")
    lookup = users.sasl_lookup(lambda mechanism: jaas.get(mechanism, {}).get)
    assert lookup(SHA256)("alice") == credential_from_salted_password(SHA256, b"salt", salted, 4096)
    assert lookup(SHA256)("bob") is jaas[SHA256]["bob"]
    assert lookup(SHA512)("alice") is None and lookup(SHA256)("carol") is None
    # without JAAS users: the API's alone
    assert users.sasl_lookup()(SHA256)("bob") is None
    assert users.sasl_lookup()(SHA256)("alice") == users.credential(SHA256, "alice")
