"""wirebroker.security.credentials: the store's alter/describe rules (the oracle test,
tests/oracle/test_scram_credentials.py, holds them to Kafka's answers), its use by the SCRAM
server, and the ZooKeeper `/config/users/<user>` encoding."""

from __future__ import annotations

import json

import pytest
from kafka.admin import UserScramCredentialUpsertion
from kafka.net.sasl.scram import ScramClient

from protocol.errors import ErrorCode
from wirebroker.security.credentials import (
    CredentialChange,
    CredentialStore,
    DescribedUser,
    ScramDeletion,
    ScramUpsertion,
    UserAlterResult,
    credentials_in_configs,
    decode_credential,
    encode_credential,
    parse_user_node,
    user_node,
    with_credential,
)
from wirebroker.security.scram import (
    ScramCredential,
    ScramError,
    ScramMechanism,
    ScramServer,
    credential_from_password,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512
CRED = ScramCredential(b"\x00\x01salt", b"k" * 32, b"s" * 32, 4096)


def upsertion(user: str, mechanism: int = 1, iterations: int = 4096) -> ScramUpsertion:
    return ScramUpsertion(user, mechanism, iterations, b"salt", b"p" * 32)


def test_an_upsertion_from_kafka_python_authenticates_its_user() -> None:
    store = CredentialStore()
    sent = UserScramCredentialUpsertion("alice", "SCRAM-SHA-512", "pw", iterations=8192)
    results = store.alter(
        [], [ScramUpsertion("alice", 2, sent.iterations, sent.salt, sent.salted_password)]
    )
    assert results == [UserAlterResult("alice")]
    server = ScramServer(SHA512, store.lookup(SHA512))
    client = ScramClient("alice", "pw", "SCRAM-SHA-512")
    client.process_server_first_message(server.evaluate(client.first_message()))
    client.process_server_final_message(server.evaluate(client.final_message()))
    assert server.authorization_id == "alice"
    with pytest.raises(ScramError, match="Invalid user credentials"):  # no SHA-256 one
        ScramServer(SHA256, store.lookup(SHA256)).evaluate(b"n,,n=alice,r=abc")


def test_plan_alter_changes_nothing_until_applied() -> None:
    store = CredentialStore({"bob": {SHA256: CRED}})
    results, changes = store.plan_alter([ScramDeletion("bob", 1)], [upsertion("carol", 2)])
    assert results == [UserAlterResult("bob"), UserAlterResult("carol")]
    assert store.users() == {"bob": {SHA256: CRED}}
    assert [(c.user, c.mechanism, c.credential is None) for c in changes] == [
        ("bob", SHA256, True),
        ("carol", SHA512, False),
    ]
    store.apply(changes)
    assert list(store.users()) == ["carol"]
    assert store.describe(None) == [DescribedUser("carol", credentials=((2, 4096),))]


def test_answers_deletions_then_upsertions_then_refusals() -> None:
    store = CredentialStore({"d": {SHA256: CRED}})
    results = store.alter([ScramDeletion("x", 1), ScramDeletion("d", 1)], [upsertion("u")])
    assert [r.user for r in results] == ["d", "u", "x"]
    assert results[2].error_code == ErrorCode.RESOURCE_NOT_FOUND


def test_iteration_bounds_are_inclusive() -> None:
    store = CredentialStore()
    codes = [
        store.alter([], [upsertion(f"u{i}", iterations=i)])[0].error_code
        for i in (4095, 4096, 16384, 16385)
    ]
    assert codes == [
        ErrorCode.UNACCEPTABLE_CREDENTIAL,
        ErrorCode.NONE,
        ErrorCode.NONE,
        ErrorCode.UNACCEPTABLE_CREDENTIAL,
    ]


def test_duplicate_drops_the_first_alteration() -> None:
    store = CredentialStore({"a": {SHA256: CRED}})
    results = store.alter([ScramDeletion("a", 1)], [upsertion("a", 2)])
    assert results == [
        UserAlterResult(
            "a",
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        )
    ]
    assert store.users() == {"a": {SHA256: CRED}}


def test_describe_in_mechanism_order_and_empty_store() -> None:
    store = CredentialStore()
    assert store.describe(None) == [] and store.describe([]) == []
    store.set("a", SHA512, CRED)
    store.set("a", SHA256, CRED)
    assert store.describe(["a"]) == [DescribedUser("a", credentials=((1, 4096), (2, 4096)))]
    store.apply([CredentialChange("a", SHA512, None), CredentialChange("a", SHA256, None)])
    assert store.users() == {}
    assert CredentialStore({"empty": {}}).users() == {}


def test_credential_text_round_trip() -> None:
    text = encode_credential(CRED)
    assert text == (
        "salt=AAFzYWx0,stored_key=a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=,"
        "server_key=c3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3M=,iterations=4096"
    )
    assert decode_credential(text) == CRED
    real = credential_from_password(SHA512, "pw")
    assert decode_credential(encode_credential(real)) == real


@pytest.mark.parametrize(
    "text",
    [
        "",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=x",
        "salt=A,stored_key=AAAA,server_key=AAAA,iterations=4096",
        "salt=AAAA,stored_key=AAAA,server_key=AAAA,iterations=4096,extra=1",
        "salt=AAAA,stored_key,server_key=AAAA,iterations=4096",
    ],
)
def test_bad_credential_text(text: str) -> None:
    with pytest.raises(ValueError, match="Credentials not valid"):
        decode_credential(text)


def test_user_node_round_trip_keeps_other_configs() -> None:
    configs = {"producer_byte_rate": "1024"}
    configs = with_credential(configs, SHA256, CRED)
    data = user_node(configs)
    assert json.loads(data) == {
        "version": 1,
        "config": {"producer_byte_rate": "1024", "SCRAM-SHA-256": encode_credential(CRED)},
    }
    assert parse_user_node(data) == configs
    assert credentials_in_configs(parse_user_node(data)) == {SHA256: CRED}
    assert with_credential(configs, SHA256, None) == {"producer_byte_rate": "1024"}


@pytest.mark.parametrize("data", [b"", b"[]", b'{"version":1}', b'{"config":{"a":1}}', b"\xff"])
def test_bad_user_node(data: bytes) -> None:
    with pytest.raises(ValueError, match="not a user config node"):
        parse_user_node(data)


def test_refusals_kafka_makes_per_user() -> None:
    store = CredentialStore({"known": {SHA256: CRED}})
    results = store.alter(
        [ScramDeletion("known", 0)],
        [upsertion(""), ScramUpsertion("nosalted", 1, 4096, b"salt", b""), upsertion("x", 9)],
    )
    assert {r.user: (r.error_code, r.error_message) for r in results} == {
        "known": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        "nosalted": (ErrorCode.UNKNOWN, None),
        "x": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
    }
    assert store.users() == {"known": {SHA256: CRED}}


def test_describe_refusals() -> None:
    store = CredentialStore({"a": {SHA256: CRED}})
    assert store.describe(["a", "b", "a", "a"]) == [
        DescribedUser(
            "a",
            ErrorCode.DUPLICATE_RESOURCE,
            "Cannot describe SCRAM credentials for the same user twice in a single request: a",
        ),
        DescribedUser(
            "b",
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: b",
        ),
    ]
