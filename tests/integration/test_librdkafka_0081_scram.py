"""librdkafka's own test 0081 (tests/0081-admin.c), its SCRAM part
(`do_test_UserScramCredentials`), as confluent-kafka's AdminClient exercises it: the same steps
and assertions, written here in Python, against a wirebroker and against Apache Kafka 4.4, the
oracle (compat/librdkafka-0081/FINDINGS.md says what of 0081 is covered).

The steps, run three times in 0081 (main queue, temp queue, and with NUL bytes inside the
password and salt; here: plain and NUL bytes): describe an unknown user -> one description, its
error RESOURCE_NOT_FOUND, no credentials; upsert SCRAM-SHA-256, 10000 iterations -> one
response for the user, no error; describe -> one credential, SCRAM-SHA-256 and 10000
iterations; delete it -> one response, no error; describe -> RESOURCE_NOT_FOUND again.

Apache Kafka (KRaft) acknowledges an alteration once its controller has committed it; the broker
that answers the next describe applies it from its metadata log a moment later, so against the
oracle a describe is repeated (a bounded number of round trips) until the alteration shows. A
wirebroker answers an alteration only after its own mirror of ZooKeeper holds it, so there the
first describe must already show it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)

from wirebroker.testing import running

TIMEOUT_S = 30
PROPAGATION_ROUND_TRIPS = 500  # Kafka: describes until a committed alteration shows


@dataclass(frozen=True)
class Admin:
    client: AdminClient
    round_trips: int  # describes allowed before the expected answer must show


@pytest.fixture(scope="module", params=["wirebroker", "kafka"])
def admin(request: pytest.FixtureRequest) -> Iterator[Admin]:
    """An AdminClient of a wirebroker, and of Apache Kafka 4.4 (the oracle: the same
    assertions hold there, as 0081 expects of a Kafka >= 2.7)."""
    if request.param == "kafka":
        bootstrap = request.getfixturevalue("apache_kafka")
        yield Admin(AdminClient({"bootstrap.servers": bootstrap}), PROPAGATION_ROUND_TRIPS)
        return
    with running() as broker:
        yield Admin(AdminClient({"bootstrap.servers": broker.bootstrap}), 1)


def _describe(admin: Admin, user: str, shows: Callable[[object], bool]) -> object:
    """Describe `user` (one description, for that user) until `shows` holds of the outcome
    (the description, or the KafkaException), at most `admin.round_trips` times; the last
    outcome."""
    outcome: object = None
    for _ in range(admin.round_trips):
        futures = admin.client.describe_user_scram_credentials([user], request_timeout=TIMEOUT_S)
        assert list(futures) == [user]
        try:
            outcome = futures[user].result(timeout=TIMEOUT_S)
        except KafkaException as failed:
            outcome = failed
        if shows(outcome):
            break
    return outcome


def _not_found(outcome: object) -> bool:
    return (
        isinstance(outcome, KafkaException)
        and outcome.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    )


def _describe_not_found(admin: Admin, user: str) -> None:
    outcome = _describe(admin, user, _not_found)
    assert _not_found(outcome), outcome


def _alter(admin: Admin, alteration: object, user: str) -> None:
    futures = admin.client.alter_user_scram_credentials([alteration], request_timeout=TIMEOUT_S)
    assert list(futures) == [user]  # one response, for that user
    assert futures[user].result(timeout=TIMEOUT_S) is None  # NO_ERROR


@pytest.mark.parametrize("null_bytes", [False, True], ids=["plain", "null-bytes"])
def test_0081_user_scram_credentials(admin: Admin, null_bytes: bool) -> None:
    user = f"testuserforscram-{uuid.uuid4().hex[:8]}"  # 0081: a unique name per run
    password, salt = b"password", b"salt"
    if null_bytes:  # 0081's null_bytes variant
        password, salt = b"\0as\0word", b"s\0l\0"
    _describe_not_found(admin, user)

    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10000)
    _alter(admin, UserScramCredentialUpsertion(user, info, password, salt), user)

    description = _describe(admin, user, lambda outcome: not isinstance(outcome, Exception))
    assert isinstance(description, UserScramCredentialsDescription), description
    assert description.user == user
    (credential,) = description.scram_credential_infos
    assert (credential.mechanism, credential.iterations) == (ScramMechanism.SCRAM_SHA_256, 10000)

    _alter(admin, UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256), user)
    _describe_not_found(admin, user)
