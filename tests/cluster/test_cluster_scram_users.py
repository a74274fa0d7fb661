"""SCRAM users on a real 3-broker cluster (real ZooKeeper, broker processes): a user created
with kafka-python's admin client through broker 0 is described by every broker (each mirrors
`/config/users` by watches), deleted through broker 2, and a broker restarted afterwards
knows the users as they are in ZooKeeper (Kafka's ZooKeeper-mode node and notification)."""

from __future__ import annotations

import json

from _cluster import ClusterProcesses, wait_until
from kafka import KafkaAdminClient
from kafka.admin import ScramMechanism, UserScramCredentialUpsertion

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def described(cluster: ClusterProcesses, node: int, user: str) -> list[tuple[int, int]] | None:
    """`user`'s (mechanism, iterations) as broker `node` describes them (None: unknown)."""
    with Wire(cluster.address(node), timeout=10) as wire:
        answer = wire.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": user}]})
    (result,) = answer.results
    if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
        return None
    assert result.error_code == ErrorCode.NONE, result.error_message
    return sorted((c.mechanism, c.iterations) for c in result.credential_infos)


def test_a_user_created_through_one_broker_is_described_by_every_broker(
    cluster: ClusterProcesses,
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.address(0), request_timeout_ms=20_000)
    try:
        answer = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion("alice", SHA256, "alice-pw"),
                UserScramCredentialUpsertion("alice", SHA512, "alice-pw", iterations=8192),
            ]
        )
        assert answer == {"alice": "A user credential cannot be altered twice in the same request"}
        answer = admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion("alice", SHA512, "alice-pw", iterations=8192),
                UserScramCredentialUpsertion("bob", SHA256, "bob-pw"),
            ]
        )
        assert answer == {"alice": None, "bob": None}
    finally:
        admin.close()
    for node in range(3):
        wait_until(
            lambda node=node: described(cluster, node, "alice") == [(2, 8192)],
            15,
            f"broker {node} describing alice",
        )
    data, _stat = cluster.zk.get("/config/users/alice")
    assert list(json.loads(data)["config"]) == ["SCRAM-SHA-512"]
    changes = cluster.zk.get_children("/config/changes")
    entities = {
        json.loads(cluster.zk.get(f"/config/changes/{c}")[0])["entity_path"] for c in changes
    }
    assert {"users/alice", "users/bob"} <= entities

    # deleted through broker 2; broker 1, stopped meanwhile, learns it at its start
    cluster.kill9(1)
    with Wire(cluster.address(2), timeout=10) as wire:
        answer = wire.call(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {"deletions": [{"name": "bob", "mechanism": 1}], "upsertions": []},
        )
    assert [(r.user, r.error_code) for r in answer.results] == [("bob", ErrorCode.NONE)]
    assert described(cluster, 2, "bob") is None  # answered once applied there
    wait_until(lambda: described(cluster, 0, "bob") is None, 15, "broker 0 forgetting bob")
    cluster.restart(1)
    assert described(cluster, 1, "bob") is None
    assert described(cluster, 1, "alice") == [(2, 8192)]
