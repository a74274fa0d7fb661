"""librdkafka's own test 0081 (tests/0081-admin.c), its ACL part (`do_test_CreateAcls`,
`do_test_DescribeAcls`, `do_test_DeleteAcls`, the variant for brokers >= 2.0 with prefixed
patterns), as confluent-kafka's AdminClient exercises it: the same steps and assertions,
written here in Python, against a wirebroker with Kafka's authorizer setting
(`authorizer.class.name`, the admin client a super user, as 0081's broker runs with)
(compat/librdkafka-0081/FINDINGS.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from wirebroker.testing import running

TIMEOUT_S = 30
TOPIC = ResourceType.TOPIC
LITERAL, PREFIXED, MATCH = (
    ResourcePatternType.LITERAL,
    ResourcePatternType.PREFIXED,
    ResourcePatternType.MATCH,
)
READ, WRITE, ANY = AclOperation.READ, AclOperation.WRITE, AclOperation.ANY
ALLOW, ANY_PERMISSION = AclPermissionType.ALLOW, AclPermissionType.ANY
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",  # the admin client (PLAINTEXT) may do everything
}


@pytest.fixture(scope="module")
def admin() -> Iterator[AdminClient]:
    with running(overrides=AUTHORIZER) as broker:
        yield AdminClient({"bootstrap.servers": broker.bootstrap})


def _name(what: str) -> str:
    return f"0081-{what}-{uuid.uuid4().hex[:8]}"  # 0081: test_mk_topic_name, unique per run


def _create(admin: AdminClient, bindings: list[AclBinding]) -> None:
    futures = admin.create_acls(bindings, request_timeout=TIMEOUT_S)
    assert len(futures) == len(bindings)  # one result per binding
    for future in futures.values():
        assert future.result(timeout=TIMEOUT_S) is None  # no error


def _describe(admin: AdminClient, acl_filter: AclBindingFilter) -> list[AclBinding]:
    got: list[AclBinding] = admin.describe_acls(acl_filter, request_timeout=TIMEOUT_S).result(
        timeout=TIMEOUT_S
    )
    return got


def _delete(admin: AdminClient, acl_filter: AclBindingFilter) -> list[AclBinding]:
    futures = admin.delete_acls([acl_filter], request_timeout=TIMEOUT_S)
    assert len(futures) == 1  # one response per filter
    matched: list[AclBinding] = futures[acl_filter].result(timeout=TIMEOUT_S)
    return matched


def _fields(b: AclBinding) -> tuple[object, ...]:
    return (
        b.restype,
        b.name,
        b.resource_pattern_type,
        b.principal,
        b.host,
        b.operation,
        b.permission_type,
    )


def test_0081_create_acls(admin: AdminClient) -> None:
    topic1, topic2 = _name("create-1"), _name("create-2")
    _create(
        admin,
        [
            AclBinding(TOPIC, topic1, PREFIXED, "User:test1", "*", READ, ALLOW),
            AclBinding(TOPIC, topic2, LITERAL, "User:test2", "*", WRITE, ALLOW),
        ],
    )


def test_0081_describe_acls(admin: AdminClient) -> None:
    topic = _name("describe")
    read = AclBinding(TOPIC, topic, PREFIXED, "User:test1", "*", READ, ALLOW)
    write = AclBinding(TOPIC, topic, LITERAL, "User:test2", "*", WRITE, ALLOW)
    _create(admin, [read, write])
    # every pattern type that matches the name: both bindings, each as created
    found = _describe(admin, AclBindingFilter(TOPIC, topic, MATCH, None, None, ANY, ANY_PERMISSION))
    assert sorted(map(_fields, found), key=str) == sorted(map(_fields, [read, write]), key=str)
    # literal only, WRITE only: the second one
    found = _describe(
        admin, AclBindingFilter(TOPIC, topic, LITERAL, None, None, WRITE, ANY_PERMISSION)
    )
    assert [_fields(b) for b in found] == [_fields(write)]


def test_0081_delete_acls(admin: AdminClient) -> None:
    base = _name("delete")
    topic1, topic2 = f"{base}_1", f"{base}_2"
    read1 = AclBinding(TOPIC, topic1, PREFIXED, "User:test1", "*", READ, ALLOW)
    write1 = AclBinding(TOPIC, topic1, LITERAL, "User:test2", "*", WRITE, ALLOW)
    write2 = AclBinding(TOPIC, topic2, LITERAL, "User:test2", "*", WRITE, ALLOW)
    _create(admin, [read1, write1, write2])
    # MATCH on topic1: its literal binding and the prefixed one (a name is its own prefix);
    # not topic2's ("<base>_1" and "<base>_2": neither is a prefix of the other)
    by_match = AclBindingFilter(TOPIC, topic1, MATCH, None, None, ANY, ANY_PERMISSION)
    matched = _delete(admin, by_match)
    assert sorted(map(_fields, matched), key=str) == sorted(map(_fields, [read1, write1]), key=str)
    assert _describe(admin, by_match) == []  # gone
    literal2 = AclBindingFilter(TOPIC, topic2, LITERAL, None, None, ANY, ANY_PERMISSION)
    (only,) = _delete(admin, literal2)
    assert only.name == topic2 and _fields(only) == _fields(write2)
