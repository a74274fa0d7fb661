"""SCRAM users (DescribeUserScramCredentials / AlterUserScramCredentials v0) with real clients:
kafka-python's and confluent-kafka's admin clients and Kafka's own kafka-configs against a
single broker (subprocess), which keeps them over a restart; a cluster of three real `Broker`s
over the in-memory ZooKeeper (`_memory_cluster.py`), where a user created through one broker is
described by the others and authenticates there (their mirrors), and the nodes are Kafka's
ZooKeeper-mode ones."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from _memory_cluster import Cluster, eventually, start_cluster
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from confluent_kafka.admin import ScramMechanism as ConfluentMechanism
from kafka import KafkaAdminClient
from kafka.admin import ScramMechanism as KafkaPythonMechanism
from kafka.admin import UserScramCredentialDeletion as KpDeletion
from kafka.admin import UserScramCredentialUpsertion as KpUpsertion
from kafka.errors import KafkaError

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.security.scram import ScramMechanism, ScramServer
from wirebroker.testing import BrokerHandle, running

TIMEOUT_S = 30
SHA256, SHA512 = KafkaPythonMechanism.SCRAM_SHA_256, KafkaPythonMechanism.SCRAM_SHA_512


def test_kafka_python_alters_and_describes_and_a_restart_keeps_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with running(data_dir=data) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20_000)
        try:
            answer = admin.alter_user_scram_credentials(
                [
                    KpUpsertion("alice", SHA256, "alice-secret"),
                    KpUpsertion("alice", SHA512, "alice-secret", iterations=8192),
                ]
            )
            assert answer == {
                "alice": "A user credential cannot be altered twice in the same request"
            }
            answer = admin.alter_user_scram_credentials(
                [
                    KpUpsertion("alice", SHA256, "alice-secret"),
                    KpUpsertion("bob", SHA512, "bob-secret", iterations=8192),
                    KpDeletion("carol", SHA256),
                ]
            )
            assert answer == {
                "alice": None,
                "bob": None,
                "carol": "Attempt to delete a user credential that does not exist",
            }
            described = admin.describe_user_scram_credentials()
            assert described == {
                "alice": {
                    "error": None,
                    "credential_infos": [{"mechanism": SHA256, "iterations": 4096}],
                },
                "bob": {
                    "error": None,
                    "credential_infos": [{"mechanism": SHA512, "iterations": 8192}],
                },
            }
        finally:
            admin.close()
    with running(data_dir=data) as broker:
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20_000)
        try:
            described = admin.describe_user_scram_credentials(["bob", "alice", "zed"])
            assert described["alice"]["credential_infos"] == [
                {"mechanism": SHA256, "iterations": 4096}
            ]
            assert described["bob"]["credential_infos"] == [
                {"mechanism": SHA512, "iterations": 8192}
            ]
            assert described["zed"]["error"] == (
                "Attempt to describe a user credential that does not exist: zed"
            )
            assert admin.alter_user_scram_credentials([KpDeletion("alice", SHA256)]) == {
                "alice": None
            }
            assert set(admin.describe_user_scram_credentials()) == {"bob"}
        finally:
            admin.close()


def test_confluent_kafka_alters_and_describes() -> None:
    with running() as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        info = ScramCredentialInfo(ConfluentMechanism.SCRAM_SHA_512, 10000)
        futures = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion("dora", info, b"dora-secret", b"some-salt"),
                UserScramCredentialUpsertion(
                    "eve",
                    ScramCredentialInfo(ConfluentMechanism.SCRAM_SHA_256, 4096),
                    b"eve-secret",
                ),
            ]
        )
        for future in futures.values():
            assert future.result(timeout=TIMEOUT_S) is None
        described = admin.describe_user_scram_credentials(["dora"])  # a future per user
        (dora,) = described["dora"].result(timeout=TIMEOUT_S).scram_credential_infos
        assert (dora.mechanism, dora.iterations) == (ConfluentMechanism.SCRAM_SHA_512, 10000)
        futures = admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("eve", ConfluentMechanism.SCRAM_SHA_256)]
        )
        assert futures["eve"].result(timeout=TIMEOUT_S) is None
        everyone = admin.describe_user_scram_credentials().result(timeout=TIMEOUT_S)
        assert set(everyone) == {"dora"}


@pytest.fixture
async def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Cluster]:
    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path, monkeypatch=monkeypatch)
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()


def upsertion(user: str, password: str, mechanism: ScramMechanism) -> dict[str, object]:
    import hashlib

    salt = b"cluster-salt"
    salted = hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, 4096)
    return {
        "name": user,
        "mechanism": mechanism.type_code,
        "iterations": 4096,
        "salt": salt,
        "salted_password": salted,
    }


async def test_a_user_created_through_one_broker_is_known_to_every_broker(
    cluster: Cluster,
) -> None:
    sha256 = ScramMechanism.SCRAM_SHA_256
    body = {"deletions": [], "upsertions": [upsertion("frank", "pw", sha256)]}
    resp = await cluster.request(0, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body)
    assert [(r.user, r.error_code) for r in resp.results] == [("frank", ErrorCode.NONE)]

    async def described_everywhere() -> bool:
        for node in range(3):
            resp = await cluster.request(
                node, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": "frank"}]}
            )
            (result,) = resp.results
            if result.error_code != ErrorCode.NONE:
                return False
            assert [(c.mechanism, c.iterations) for c in result.credential_infos] == [(1, 4096)]
        return True

    await eventually(described_everywhere, "the user described by every broker")
    # the credential every broker's SCRAM authentication would use
    for node in range(3):
        users = cluster.nodes[node].broker.services.scram_users
        server = ScramServer(sha256, users.lookup(sha256))
        assert server.evaluate(b"n,,n=frank,r=nonce").startswith(b"r=nonce")
    node = json.loads(await cluster.zk_get("/config/users/frank") or b"{}")
    assert list(node["config"]) == ["SCRAM-SHA-256"]
    # deleted through broker 2: refused on broker 1 once its mirror saw it
    body = {"deletions": [{"name": "frank", "mechanism": 1}], "upsertions": []}
    resp = await cluster.request(2, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, body)
    assert resp.results[0].error_code == ErrorCode.NONE

    def gone_everywhere() -> bool:
        return all(
            cluster.nodes[n].broker.services.scram_users.credential(sha256, "frank") is None
            for n in range(3)
        )

    await eventually(gone_everywhere, "the user gone everywhere")


def test_kafka_configs_adds_describes_and_deletes_a_user(kafka_bootstrap: str) -> None:
    """Kafka's own kafka-configs --entity-type users (three JVM runs, a few seconds each)."""
    from compat.oracle.kafka import run_tool

    def configs(*args: str) -> str:
        done = run_tool(
            "org.apache.kafka.tools.ConfigCommand",
            ["--bootstrap-server", kafka_bootstrap, "--entity-type", "users", *args],
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    # one mechanism per run: Kafka refuses a user altered twice in one request, and the tool
    # sends both mechanisms in one (DUPLICATE_RESOURCE, from Kafka 4.4 as from wirebroker)
    for mechanism in (
        "SCRAM-SHA-256=[iterations=8192,password=grace-pw]",
        "SCRAM-SHA-512=[password=grace-pw]",
    ):
        added = configs("--entity-name", "grace", "--alter", "--add-config", mechanism)
        assert "Completed updating config for user grace." in added
    # (described with kafka-python here; the tool's --describe of users lists their quotas)
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, request_timeout_ms=20_000)
    try:
        infos = admin.describe_user_scram_credentials(["grace"])["grace"]["credential_infos"]
        assert sorted((i["mechanism"], i["iterations"]) for i in infos) == [
            (SHA256, 8192),
            (SHA512, 4096),
        ]
        configs("--entity-name", "grace", "--alter", "--delete-config", "SCRAM-SHA-512")
        infos = admin.describe_user_scram_credentials(["grace"])["grace"]["credential_infos"]
        assert [(i["mechanism"], i["iterations"]) for i in infos] == [(SHA256, 8192)]
    finally:
        admin.close()


def _authenticates(
    handle: BrokerHandle, mechanism: str, user: str, password: str, *, expected: bool = True
) -> bool:
    """Whether kafka-python logs in as `user` on the broker's SASL listener (a refusal is
    answered at once, then the client retries until its timeout: short where one is
    expected, long where a success is)."""
    timeout_ms = 20_000 if expected else 2_000
    config = handle.kafka_python_config | {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }
    try:
        admin = KafkaAdminClient(
            **config, request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms
        )
    except KafkaError:
        return False
    try:
        admin.describe_cluster()
    finally:
        admin.close()
    return True


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_user_created_through_the_api_logs_in_over_sasl(mechanism: str) -> None:
    """A SASL_PLAINTEXT broker whose JAAS settings know alice: carol, created with
    AlterUserScramCredentials (as alice), logs in at once; a password changed through the API
    wins over the JAAS one; a deleted credential no longer logs in."""
    kp_mechanism = KafkaPythonMechanism[mechanism.replace("-", "_")]
    with BrokerHandle(security="SASL_PLAINTEXT", sasl_mechanism=mechanism).start() as handle:
        assert not _authenticates(handle, mechanism, "carol", "carol-pw", expected=False)
        admin = KafkaAdminClient(**handle.kafka_python_config, request_timeout_ms=20_000)
        try:
            answer = admin.alter_user_scram_credentials(
                [
                    KpUpsertion("carol", kp_mechanism, "carol-pw", iterations=4096),
                    KpUpsertion("alice", kp_mechanism, "alice-new-pw"),
                ]
            )
            assert answer == {"carol": None, "alice": None}
            assert _authenticates(handle, mechanism, "carol", "carol-pw")
            assert not _authenticates(handle, mechanism, "carol", "wrong", expected=False)
            assert _authenticates(handle, mechanism, "alice", "alice-new-pw")
            assert not _authenticates(
                handle, mechanism, "alice", "alice-secret", expected=False
            )  # the JAAS one
            assert admin.alter_user_scram_credentials([KpDeletion("carol", kp_mechanism)]) == {
                "carol": None
            }
            assert not _authenticates(handle, mechanism, "carol", "carol-pw", expected=False)
        finally:
            admin.close()
