"""DescribeUserScramCredentials v0 and AlterUserScramCredentials v0: the same alterations and
the same assertions against Apache Kafka 4.4 (the oracle), a wirebroker, a wirebroker cluster
(over the wire, as to Kafka) and wirebroker's credential store driven directly
(wirebroker/security/credentials.py). Kafka's codes and texts per user: duplicates, empty
names, unknown mechanisms, iteration bounds, missing credentials, an empty salted password."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.security.credentials import CredentialStore, ScramDeletion, ScramUpsertion

Deletion = tuple[str, int]
Upsertion = tuple[str, int, int, bytes, bytes]  # name, mechanism, iterations, salt, salted
SALTED = bytes(range(32))

TWICE = "A user credential cannot be altered twice in the same request"
DESCRIBE_MISSING = "Attempt to describe a user credential that does not exist: "
DESCRIBE_TWICE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


class ScramApi(Protocol):
    def alter(
        self, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
    ) -> dict[str, tuple[int, str | None]]: ...

    def describe(
        self, users: Sequence[str] | None
    ) -> dict[str, tuple[int, str | None, list[tuple[int, int]]]]: ...


class KafkaScram:
    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    def alter(
        self, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
    ) -> dict[str, tuple[int, str | None]]:
        body: dict[str, Any] = {
            "deletions": [{"name": n, "mechanism": m} for n, m in deletions],
            "upsertions": [
                {"name": n, "mechanism": m, "iterations": i, "salt": s, "salted_password": p}
                for n, m, i, s, p in upsertions
            ],
        }
        names = sorted({n for n, *_ in (*deletions, *upsertions) if n})
        before = self.describe(names) if names else {}
        answer = self.wire.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body)
        results = {r.user: (r.error_code, r.error_message) for r in answer.results}
        self._settle({u: before[u] for u, (code, _) in results.items() if code == 0})
        return results

    def _settle(self, before: dict[str, tuple[int, str | None, list[tuple[int, int]]]]) -> None:
        """Wait (up to 5 s) until the broker describes each altered user differently: Kafka's
        controller answers an alteration and its broker's metadata image learns it a moment
        later (wirebroker answers once the answering broker applied it)."""
        deadline = time.monotonic() + 5
        while before and time.monotonic() < deadline:
            now = self.describe(list(before))
            before = {u: old for u, old in before.items() if now[u] == old}

    def describe(
        self, users: Sequence[str] | None
    ) -> dict[str, tuple[int, str | None, list[tuple[int, int]]]]:
        names = None if users is None else [{"name": u} for u in users]
        answer = self.wire.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": names})
        assert (answer.error_code, answer.error_message) == (0, "")
        return {
            r.user: (
                r.error_code,
                r.error_message,
                sorted((c.mechanism, c.iterations) for c in r.credential_infos),
            )
            for r in answer.results
        }


class CoreScram:
    def __init__(self) -> None:
        self.store = CredentialStore()

    def alter(
        self, deletions: Sequence[Deletion], upsertions: Sequence[Upsertion]
    ) -> dict[str, tuple[int, str | None]]:
        results = self.store.alter(
            [ScramDeletion(*d) for d in deletions], [ScramUpsertion(*u) for u in upsertions]
        )
        return {r.user: (r.error_code, r.error_message) for r in results}

    def describe(
        self, users: Sequence[str] | None
    ) -> dict[str, tuple[int, str | None, list[tuple[int, int]]]]:
        return {
            r.user: (r.error_code, r.error_message, sorted(r.credentials))
            for r in self.store.describe(users)
        }


@pytest.fixture(params=["apache-kafka", "wirebroker", "wirebroker-cluster", "core"])
def scram_api(request: pytest.FixtureRequest) -> Iterator[ScramApi]:
    if request.param == "core":
        yield CoreScram()
        return
    bootstrap = {
        "apache-kafka": "apache_kafka",
        "wirebroker": "wirebroker_module",
        "wirebroker-cluster": "kafka_cluster",
    }[request.param]
    broker = request.getfixturevalue(bootstrap)
    with Wire(str(getattr(broker, "bootstrap", broker)).split(",")[0]) as wire:
        yield KafkaScram(wire)


@pytest.fixture
def user() -> str:
    return f"scram-{uuid.uuid4().hex[:10]}"


def test_upsert_describe_delete(scram_api: ScramApi, user: str) -> None:
    alice, bob = user + "-alice", user + "-bob"
    assert scram_api.alter(
        [], [(alice, 1, 4096, b"salt", SALTED), (bob, 2, 16384, b"", SALTED)]
    ) == {alice: (0, None), bob: (0, None)}
    assert scram_api.alter([], [(alice, 2, 8192, b"salt", SALTED)]) == {alice: (0, None)}
    assert scram_api.describe([alice, bob]) == {
        alice: (0, "", [(1, 4096), (2, 8192)]),
        bob: (0, "", [(2, 16384)]),
    }
    everyone = scram_api.describe(None)
    assert everyone[alice] == (0, "", [(1, 4096), (2, 8192)]) and bob in everyone
    assert scram_api.describe([]) == everyone
    assert scram_api.alter([(alice, 1)], [(bob, 2, 5000, b"s", SALTED)]) == {
        alice: (0, None),
        bob: (0, None),
    }
    assert scram_api.describe([alice, bob]) == {
        alice: (0, "", [(2, 8192)]),
        bob: (0, "", [(2, 5000)]),
    }
    assert scram_api.alter([(alice, 2)], []) == {alice: (0, None)}
    assert scram_api.describe([alice]) == {alice: (91, DESCRIBE_MISSING + alice, [])}
    assert alice not in scram_api.describe(None)


def test_describe_refusals(scram_api: ScramApi, user: str) -> None:
    scram_api.alter([], [(user, 1, 4096, b"salt", SALTED)])
    assert scram_api.describe([user, user + "-x", user, "", user]) == {
        user: (ErrorCode.DUPLICATE_RESOURCE, DESCRIBE_TWICE + user, []),
        user + "-x": (ErrorCode.RESOURCE_NOT_FOUND, DESCRIBE_MISSING + user + "-x", []),
        "": (ErrorCode.RESOURCE_NOT_FOUND, DESCRIBE_MISSING, []),
    }


def test_alteration_refusals(scram_api: ScramApi, user: str) -> None:
    u = [f"{user}-{i}" for i in range(8)]
    answer = scram_api.alter(
        [(u[0], 1), (u[1], 0)],
        [
            (u[2], 1, 4095, b"s", SALTED),
            (u[3], 2, 16385, b"s", SALTED),
            (u[4], 3, 4096, b"s", SALTED),
            (u[5], -1, 4096, b"s", SALTED),
            ("", 1, 4096, b"s", SALTED),
            (u[6], 1, 16384, b"s", SALTED),
            (u[7], 1, 4096, b"s", b""),
        ],
    )
    assert answer == {
        u[0]: (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        u[1]: (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        u[2]: (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        u[3]: (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
        u[4]: (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        u[5]: (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        u[6]: (0, None),
        u[7]: (ErrorCode.UNKNOWN, None),  # UNKNOWN_SERVER_ERROR: HMAC with an empty key
    }
    described = scram_api.describe(u)
    assert [u for u, (code, _, _) in described.items() if code == 0] == [u[6]]


def test_a_user_altered_twice(scram_api: ScramApi, user: str) -> None:
    a, b, c, d, e = (f"{user}-{x}" for x in "abcde")
    scram_api.alter([], [(x, 1, 4096, b"s", SALTED) for x in (a, b, c)])
    answer = scram_api.alter(
        [(a, 1), (a, 2), (b, 1), (d, 1), (a, 1)],
        [
            (b, 2, 4096, b"s", SALTED),
            (c, 2, 4096, b"s", SALTED),
            (c, 2, 4096, b"s", SALTED),
            (d, 1, 4096, b"s", SALTED),
            (e, 1, 100, b"s", SALTED),
            (e, 1, 4096, b"s", SALTED),
        ],
    )
    assert answer == {
        a: (ErrorCode.DUPLICATE_RESOURCE, TWICE),  # the second names another mechanism
        b: (ErrorCode.DUPLICATE_RESOURCE, TWICE),  # a deletion and an upsertion
        c: (ErrorCode.DUPLICATE_RESOURCE, TWICE),
        d: (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        e: (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),  # the first error stays
    }
    described = scram_api.describe([a, b, c, d, e])
    assert {x: info for x, (_, _, info) in described.items()} == {
        a: [(1, 4096)],
        b: [(1, 4096)],
        c: [(1, 4096)],
        d: [],
        e: [],
    }
