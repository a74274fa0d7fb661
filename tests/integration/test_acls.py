"""ACLs enforced (issue 34), with real clients over SASL_PLAINTEXT (SCRAM-SHA-256): one broker
for the module with `authorizer.class.name` set, alice a super user, bob an ordinary user.

What passing proves: kafka-python's and confluent-kafka's admin clients create, describe and
delete ACLs (literal and prefixed); bob's produce is refused TOPIC_AUTHORIZATION_FAILED until
an ACL allows it; Metadata hides the topics bob may not describe; a DENY beats an ALLOW; a
prefixed ALLOW covers the names it starts; bob may not touch the ACLs (CLUSTER_AUTHORIZATION_
FAILED) nor join a group he may not read, consumes in a group with READ on it and the topic,
commits a transaction with WRITE on its id, lists and describes only the groups he may
describe; `wirebroker acl` and Kafka's kafka-acls manage them; a broker restarted on its data
directory still holds its ACLs (kept in its topic store)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AclBinding, AclBindingFilter, AdminClient
from confluent_kafka.admin import AclOperation as CfOp
from confluent_kafka.admin import AclPermissionType as CfPerm
from confluent_kafka.admin import ResourcePatternType as CfPattern
from confluent_kafka.admin import ResourceType as CfType
from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import ClusterAuthorizationFailedError, GroupAuthorizationFailedError

from wirebroker.cli import main
from wirebroker.testing import BrokerHandle

TIMEOUT_S = 20
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # alice: the clients' default user and the inter-broker one; ANONYMOUS: the handle's
    # INTERNAL listener (its helpers create topics there)
    "super.users": "User:alice;User:ANONYMOUS",
}
EVERY_ACL = ACLFilter(
    principal=None,
    host=None,
    operation=ACLOperation.ANY,
    permission_type=ACLPermissionType.ANY,
    resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
)


def secured_broker(**kwargs: Any) -> BrokerHandle:
    overrides = {**AUTHORIZER, "group.initial.rebalance.delay.ms": 0}
    return BrokerHandle(
        security="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256", overrides=overrides, **kwargs
    )


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerHandle]:
    with secured_broker() as handle:
        yield handle


def as_bob(config: dict[str, Any], kafka_python: bool = True) -> dict[str, Any]:
    if kafka_python:
        return {**config, "sasl_plain_username": "bob", "sasl_plain_password": "bob-secret"}
    return {**config, "sasl.username": "bob", "sasl.password": "bob-secret"}


@pytest.fixture
def admin(broker: BrokerHandle) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(**broker.kafka_python_config, request_timeout_ms=TIMEOUT_S * 1000)
    yield client
    client.delete_acls([EVERY_ACL])
    client.close()


@pytest.fixture
def bob_admin(broker: BrokerHandle) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(
        **as_bob(broker.kafka_python_config), request_timeout_ms=TIMEOUT_S * 1000
    )
    yield client
    client.close()


def topic_acl(
    name: str,
    operation: ACLOperation,
    permission: ACLPermissionType = ACLPermissionType.ALLOW,
    principal: str = "User:bob",
    pattern: ACLResourcePatternType = ACLResourcePatternType.LITERAL,
) -> ACL:
    return ACL(
        principal, "*", operation, permission, ResourcePattern(ResourceType.TOPIC, name, pattern)
    )


def test_kafka_python_creates_describes_and_deletes_acls(admin: KafkaAdminClient) -> None:
    literal = topic_acl("orders", ACLOperation.WRITE)
    prefixed = topic_acl("ord", ACLOperation.READ, pattern=ACLResourcePatternType.PREFIXED)
    created = admin.create_acls([literal, prefixed])
    assert created["failed"] == [] and len(created["succeeded"]) == 2
    acls, error = admin.describe_acls(EVERY_ACL)
    assert error.errno == 0
    assert {(a.resource_pattern.resource_name, a.operation) for a in acls} == {
        ("orders", ACLOperation.WRITE),
        ("ord", ACLOperation.READ),
    }
    only_prefixed = ACLFilter(
        None,
        None,
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(ResourceType.TOPIC, None, ACLResourcePatternType.PREFIXED),
    )
    [(_filter, deleted, error)] = admin.delete_acls([only_prefixed])
    assert error.errno == 0
    assert [acl.resource_pattern.resource_name for acl in deleted] == ["ord"]
    acls, _error = admin.describe_acls(EVERY_ACL)
    assert [a.resource_pattern.resource_name for a in acls] == ["orders"]


def test_confluent_kafka_creates_describes_and_deletes_acls(broker: BrokerHandle) -> None:
    admin = AdminClient(broker.client_config)
    binding = AclBinding(
        CfType.GROUP, "billing", CfPattern.LITERAL, "User:bob", "*", CfOp.READ, CfPerm.ALLOW
    )
    for future in admin.create_acls([binding]).values():
        assert future.result(timeout=TIMEOUT_S) is None
    any_group = AclBindingFilter(
        CfType.GROUP, None, CfPattern.ANY, None, None, CfOp.ANY, CfPerm.ANY
    )
    described = admin.describe_acls(any_group).result(timeout=TIMEOUT_S)
    assert described == [binding]
    (deleted,) = admin.delete_acls([any_group]).values()
    assert deleted.result(timeout=TIMEOUT_S) == [binding]
    assert admin.describe_acls(any_group).result(timeout=TIMEOUT_S) == []


def test_bob_may_not_touch_the_acls(admin: KafkaAdminClient, bob_admin: KafkaAdminClient) -> None:
    with pytest.raises(ClusterAuthorizationFailedError):
        bob_admin.describe_acls(EVERY_ACL)
    created = bob_admin.create_acls([topic_acl("mine", ACLOperation.ALL)])
    assert created == {"succeeded": [], "failed": [ClusterAuthorizationFailedError]}


def _produce(broker: BrokerHandle, topic: str) -> Any:
    producer = Producer(
        {**as_bob(broker.client_config, kafka_python=False), "message.timeout.ms": 5000}
    )
    outcome: list[Any] = []
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(TIMEOUT_S)
    return outcome[0]


def test_bob_is_refused_produce_until_an_acl_allows_it(
    broker: BrokerHandle, admin: KafkaAdminClient
) -> None:
    broker.create_topic("payments")
    admin.create_acls([topic_acl("payments", ACLOperation.DESCRIBE)])  # sees it, may not write
    refused = _produce(broker, "payments")
    assert refused is not None and refused.name() == "TOPIC_AUTHORIZATION_FAILED"
    admin.create_acls([topic_acl("payments", ACLOperation.WRITE)])
    assert _produce(broker, "payments") is None
    assert [m.value for m in broker.read_to_end("payments")] == [b"v"]


def test_metadata_hides_topics_deny_beats_allow_and_prefixes_cover(
    broker: BrokerHandle, admin: KafkaAdminClient, bob_admin: KafkaAdminClient
) -> None:
    for name in ("pub-a", "pub-b", "secret", "denied"):
        broker.create_topic(name)
    admin.create_acls(
        [
            topic_acl("pub-", ACLOperation.DESCRIBE, pattern=ACLResourcePatternType.PREFIXED),
            topic_acl("denied", ACLOperation.DESCRIBE, principal="User:*"),
            topic_acl("denied", ACLOperation.DESCRIBE, ACLPermissionType.DENY),
        ]
    )
    visible = set(bob_admin.list_topics())
    assert {"pub-a", "pub-b"} <= visible
    assert not visible & {"secret", "denied"}
    assert "secret" in set(admin.list_topics())  # alice, a super user, sees every topic


def test_bob_may_not_join_a_group_he_may_not_read(
    broker: BrokerHandle, admin: KafkaAdminClient
) -> None:
    broker.create_topic("audit")
    admin.create_acls([topic_acl("audit", ACLOperation.READ)])
    consumer = KafkaConsumer(
        "audit",
        group_id="auditors",
        consumer_timeout_ms=5000,
        **as_bob(broker.kafka_python_config),
    )
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=5000)
            next(iter(consumer))
    finally:
        consumer.close()


def test_a_restarted_broker_keeps_its_acls(tmp_path: Path) -> None:
    data = tmp_path / "data"
    acl = topic_acl("kept", ACLOperation.READ, pattern=ACLResourcePatternType.PREFIXED)
    with secured_broker(data_dir=data) as first:
        admin = KafkaAdminClient(**first.kafka_python_config)
        assert admin.create_acls([acl])["failed"] == []
        admin.close()
    with secured_broker(data_dir=data) as second:
        admin = KafkaAdminClient(**second.kafka_python_config)
        acls, _error = admin.describe_acls(EVERY_ACL)
        admin.close()
    assert [(a.principal, a.resource_pattern.resource_name) for a in acls] == [("User:bob", "kept")]


def _cli(capfd: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capfd.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capfd.readouterr()
    return code, out, err


def _command_config(tmp_path: Path, user: str, password: str) -> str:
    path = tmp_path / f"{user}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";\n'
    )
    return str(path)


def test_the_acl_cli_adds_lists_and_removes(
    broker: BrokerHandle,
    admin: KafkaAdminClient,
    capfd: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    common = [
        "-b",
        broker.bootstrap,
        "--command-config",
        _command_config(tmp_path, "alice", "alice-secret"),
    ]
    code, out, err = _cli(
        capfd,
        "acl",
        "add",
        *common,
        "--allow-principal",
        "User:bob",
        "--operation",
        "Read",
        "--operation",
        "describe-configs",
        "--topic",
        "cli-",
        "--resource-pattern-type",
        "prefixed",
        "--format",
        "json",
    )
    assert code == 0, err
    assert sorted(a["operation"] for a in json.loads(out)["added"]) == ["DESCRIBE_CONFIGS", "READ"]
    code, out, err = _cli(capfd, "acl", "list", *common, "--topic", "cli-", "--format", "json")
    assert code == 0, err
    assert {
        (a["resource_name"], a["pattern_type"], a["principal"]) for a in json.loads(out)["acls"]
    } == {("cli-", "PREFIXED", "User:bob")}
    code, out, err = _cli(
        capfd,
        "acl",
        "remove",
        *common,
        "--topic",
        "cli-",
        "--resource-pattern-type",
        "prefixed",
        "--operation",
        "Read",
        "--format",
        "json",
    )
    assert code == 0, err
    assert [a["operation"] for a in json.loads(out)["removed"]] == ["READ"]
    # bob may not: one line, exit 1
    bob = [
        "-b",
        broker.bootstrap,
        "--command-config",
        _command_config(tmp_path, "bob", "bob-secret"),
    ]
    code, _out, err = _cli(capfd, "acl", "add", *bob, "--allow-principal", "User:bob", "--cluster")
    assert code == 1
    assert err.strip() == "wirebroker: error: ACLs not created: ClusterAuthorizationFailedError"


def test_kafka_acls_adds_and_lists(
    broker: BrokerHandle, admin: KafkaAdminClient, tmp_path: Path
) -> None:
    """Kafka's own kafka-acls (AclCommand; two JVM runs, a few seconds each), as alice."""
    from compat.oracle.kafka import run_tool

    config = _command_config(tmp_path, "alice", "alice-secret")

    def acls(*args: str) -> str:
        base = ["--bootstrap-server", broker.bootstrap, "--command-config", config]
        done = run_tool("org.apache.kafka.tools.AclCommand", [*base, *args])
        assert done.returncode == 0, done.stderr
        return done.stdout

    acls("--add", "--allow-principal", "User:bob", "--operation", "Read", "--group", "tools-")
    listed = acls("--list", "--group", "tools-")
    assert "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)" in listed
    found, _error = admin.describe_acls(EVERY_ACL)
    assert [(a.resource_pattern.resource_name, a.operation) for a in found] == [
        ("tools-", ACLOperation.READ)
    ]


def test_bob_consumes_in_a_group_with_read_on_the_topic_and_the_group(
    broker: BrokerHandle, admin: KafkaAdminClient
) -> None:
    """READ implies DESCRIBE: FindCoordinator, JoinGroup, SyncGroup, OffsetFetch, ListOffsets,
    Fetch and OffsetCommit all pass with just these two ACLs."""
    broker.create_topic("ledger")
    broker.produce("ledger", [b"one", b"two"])
    group = ACL(
        "User:bob",
        "*",
        ACLOperation.READ,
        ACLPermissionType.ALLOW,
        ResourcePattern(ResourceType.GROUP, "readers", ACLResourcePatternType.LITERAL),
    )
    admin.create_acls([topic_acl("ledger", ACLOperation.READ), group])
    consumer = KafkaConsumer(
        "ledger",
        group_id="readers",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
        **as_bob(broker.kafka_python_config),
    )
    try:
        values = [m.value for _, m in zip(range(2), consumer, strict=False)]
        consumer.commit()
        committed = consumer.committed(TopicPartition("ledger", 0))  # OffsetFetch
    finally:
        consumer.close()
    assert (values, committed) == ([b"one", b"two"], 2)


def _txn_acl(name: str, operation: ACLOperation = ACLOperation.WRITE) -> ACL:
    pattern = ResourcePattern(ResourceType.TRANSACTIONAL_ID, name, ACLResourcePatternType.LITERAL)
    return ACL("User:bob", "*", operation, ACLPermissionType.ALLOW, pattern)


def test_bob_commits_a_transaction_with_write_on_its_id_and_the_topic(
    broker: BrokerHandle, admin: KafkaAdminClient
) -> None:
    """InitProducerId, AddPartitionsToTxn, Produce, EndTxn (and the markers, the broker's own
    requests as alice) with WRITE on the transactional id and the topic; without the id's
    ACL, InitProducerId is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
    broker.create_topic("escrow")
    admin.create_acls([topic_acl("escrow", ACLOperation.WRITE)])
    config = {**as_bob(broker.client_config, kafka_python=False), "transactional.id": "bob-tx"}
    refused = Producer(config)
    with pytest.raises(KafkaException) as caught:
        refused.init_transactions(10)
    assert caught.value.args[0].name() == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"
    admin.create_acls([_txn_acl("bob-tx")])
    producer = Producer(config)
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("escrow", b"held")
    producer.commit_transaction(TIMEOUT_S)
    assert [m.value for m in broker.read_to_end("escrow")] == [b"held"]


def test_bob_lists_and_describes_only_the_groups_he_may_describe(
    broker: BrokerHandle, admin: KafkaAdminClient, bob_admin: KafkaAdminClient
) -> None:
    broker.create_topic("census")
    for group in ("seen-g", "hidden-g"):  # alice commits an offset for each (no member)
        consumer = KafkaConsumer(group_id=group, **broker.kafka_python_config)
        consumer.assign([TopicPartition("census", 0)])
        consumer.commit({TopicPartition("census", 0): OffsetAndMetadata(0, "", -1)})
        consumer.close()
    seen = ResourcePattern(ResourceType.GROUP, "seen-g", ACLResourcePatternType.LITERAL)
    admin.create_acls([ACL("User:bob", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW, seen)])
    assert [g["group_id"] for g in bob_admin.list_groups()] == ["seen-g"]
    assert {"seen-g", "hidden-g"} <= {g["group_id"] for g in admin.list_groups()}
    assert bob_admin.describe_groups(["seen-g"])["seen-g"]["error"] is None
    with pytest.raises(GroupAuthorizationFailedError):  # its FindCoordinator, DESCRIBE denied
        bob_admin.describe_groups(["hidden-g"])
