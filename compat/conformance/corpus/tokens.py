"""Delegation tokens (KIP-48): CreateDelegationToken, RenewDelegationToken,
ExpireDelegationToken and DescribeDelegationToken, every version (issue 34).

On a PLAINTEXT listener without delegation.token.secret.key no token can be made: each
request is answered with the error a client gets there (the oracle is Kafka's default
single-node setup). The requests are the ones a client sends: a token for the caller with
one renewer, renew and expire a token by its HMAC (a made-up one), describe the tokens of
an owner.
"""

from __future__ import annotations

from compat.conformance.corpus.base import API, sweep_steps
from compat.conformance.script import Scenario

HMAC = b"conformance-hmac"  # no token has it


def sweep(create: list[int], renew: list[int], expire: list[int], describe: list[int]) -> Scenario:
    items = sweep_steps(
        "CreateDelegationToken",
        API.CREATE_DELEGATION_TOKEN,
        create,
        lambda ctx: {
            "owner_principal_type": None,
            "owner_principal_name": None,
            "renewers": [{"principal_type": "User", "principal_name": ctx.name("renewer")}],
            "max_lifetime_ms": -1,
        },
        "a token for the caller (v3+: no other owner) with one renewer",
    )
    items += sweep_steps(
        "RenewDelegationToken",
        API.RENEW_DELEGATION_TOKEN,
        renew,
        {"hmac": HMAC, "renew_period_ms": -1},
        "renew a token by an HMAC no token has",
    )
    items += sweep_steps(
        "ExpireDelegationToken",
        API.EXPIRE_DELEGATION_TOKEN,
        expire,
        {"hmac": HMAC, "expiry_time_period_ms": -1},
        "expire a token by an HMAC no token has, now",
    )
    items += sweep_steps(
        "DescribeDelegationToken",
        API.DESCRIBE_DELEGATION_TOKEN,
        describe,
        lambda ctx: {"owners": [{"principal_type": "User", "principal_name": ctx.name("owner")}]},
        "the tokens of one owner",
    )
    return Scenario("sweep delegation tokens", tuple(items))
