"""librdkafka's own test 0081 (tests/0081-admin.c), its SCRAM part
(`do_test_UserScramCredentials`), as confluent-kafka's AdminClient exercises it: the same steps
and assertions, written here in Python, against a wirebroker and against Apache Kafka 4.4, the
oracle (compat/librdkafka-0081/FINDINGS.md says what of 0081 is covered).

The steps, run three times in 0081 (main queue, temp queue, and with NUL bytes inside the
password and salt; here: plain and NUL bytes): describe an unknown user -> one description, its
error RESOURCE_NOT_FOUND, no credentials; upsert SCRAM-SHA-256, 10000 iterations -> one
response for the user, no error; describe -> one credential, SCRAM-SHA-256 and 10000
iterations; delete it -> one response, no error; describe -> RESOURCE_NOT_FOUND again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from wirebroker.testing import running

TIMEOUT_S = 30


@pytest.fixture(scope="module", params=["wirebroker", "kafka"])
def admin(request: pytest.FixtureRequest) -> Iterator[AdminClient]:
    """An AdminClient of a wirebroker, and of Apache Kafka 4.4 (the oracle: the same
    assertions hold there, as 0081 expects of a Kafka >= 2.7)."""
    if request.param == "kafka":
        yield AdminClient({"bootstrap.servers": request.getfixturevalue("apache_kafka")})
        return
    with running() as broker:
        yield AdminClient({"bootstrap.servers": broker.bootstrap})


def _describe_not_found(admin: AdminClient, user: str) -> None:
    futures = admin.describe_user_scram_credentials([user], request_timeout=TIMEOUT_S)
    assert list(futures) == [user]  # one description, for that user
    with pytest.raises(KafkaException) as failed:
        futures[user].result(timeout=TIMEOUT_S)
    assert failed.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND


def _alter(admin: AdminClient, alteration: object, user: str) -> None:
    futures = admin.alter_user_scram_credentials([alteration], request_timeout=TIMEOUT_S)
    assert list(futures) == [user]  # one response, for that user
    assert futures[user].result(timeout=TIMEOUT_S) is None  # NO_ERROR


@pytest.mark.parametrize("null_bytes", [False, True], ids=["plain", "null-bytes"])
def test_0081_user_scram_credentials(admin: AdminClient, null_bytes: bool) -> None:
    user = f"testuserforscram-{uuid.uuid4().hex[:8]}"  # 0081: a unique name per run
    password, salt = b"password", b"salt"
    if null_bytes:  # 0081's null_bytes variant
        password, salt = b"\0as\0word", b"s\0l\0"
    _describe_not_found(admin, user)

    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10000)
    _alter(admin, UserScramCredentialUpsertion(user, info, password, salt), user)

    futures = admin.describe_user_scram_credentials([user], request_timeout=TIMEOUT_S)
    assert list(futures) == [user]
    description = futures[user].result(timeout=TIMEOUT_S)
    assert description.user == user
    (credential,) = description.scram_credential_infos
    assert (credential.mechanism, credential.iterations) == (ScramMechanism.SCRAM_SHA_256, 10000)

    _alter(admin, UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256), user)
    _describe_not_found(admin, user)
