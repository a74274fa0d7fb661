"""An ACL authorizer as Apache Kafka 4.4's StandardAuthorizer: the same ACL requests and the
same assertions against a Kafka started with it (`authorizer.class.name`, super.users=User:admin,
allow.everyone.if.no.acl.found=true, so that its own PLAINTEXT traffic, User:ANONYMOUS, keeps
working), against wirebroker's `AclAuthorizer` (wirebroker/security/authorizer.py) driven
directly, and against a wirebroker with the same settings (its ACLs in ZooKeeper, the
handlers' checks).

- CreateAcls: Kafka's checks in its order and texts (CLUSTER name, empty name, unknown codes,
  principal, host, CIDR); a creation with an ANY/MATCH code fails the whole request,
  UNKNOWN_SERVER_ERROR with no text, nothing created.
- DescribeAcls / DeleteAcls: ANY, MATCH, LITERAL and PREFIXED filters, wildcard names, codes
  Kafka does not know (no match; DeleteAcls refuses them per filter), two delete filters
  matching the same ACLs.
- Decisions: the operations Kafka's Metadata v12 reports authorized on a topic for
  User:ANONYMOUS from 127.0.0.1 under a set of ACLs, against `authorized_operations`.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

import pytest
from _oracle_acls import ACL_FIELDS, ANONYMOUS

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.security.acls import AclBinding, AclBindingFilter, AclOperation
from wirebroker.security.authorizer import AclAuthorizer

TOPIC_OPS = [
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.CREATE,
    AclOperation.DELETE,
    AclOperation.ALTER,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
]
Acl = tuple[int, str, int, str, str, int, int]  # type, name, pattern, principal, host, op, perm


def creation(
    rtype: int = 2,
    name: str = "t",
    pattern: int = 3,
    principal: str = "User:bob",
    host: str = "*",
    op: int = 3,
    perm: int = 3,
) -> Acl:
    return (rtype, name, pattern, principal, host, op, perm)


def acl_filter(
    rtype: int = 1,
    name: str | None = None,
    pattern: int = 1,
    principal: str | None = None,
    host: str | None = None,
    op: int = 1,
    perm: int = 1,
) -> AclBindingFilter:
    return AclBindingFilter(rtype, name, pattern, principal, host, op, perm)


class AclApi(Protocol):
    def create(self, acls: Sequence[Acl]) -> list[tuple[int, str | None]]: ...
    def describe(self, f: AclBindingFilter) -> set[Acl]: ...
    def delete(
        self, filters: Sequence[AclBindingFilter]
    ) -> list[tuple[int, str | None, set[Acl]]]: ...
    def topic_operations(self, topic: str) -> set[int]: ...


def _filter_fields(f: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": f.resource_type,
        "resource_name_filter": f.resource_name,
        "pattern_type_filter": f.pattern_type,
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": f.operation,
        "permission_type": f.permission_type,
    }


class KafkaAcls:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def _call(self, api: ApiKey, body: dict[str, Any], version: int = 3) -> Any:
        with Wire(self.bootstrap) as wire:  # one connection per request: a bad one may close it
            return wire.call(api, version, body)

    def create(self, acls: Sequence[Acl]) -> list[tuple[int, str | None]]:
        body = {"creations": [dict(zip(ACL_FIELDS, a, strict=True)) for a in acls]}
        results = self._call(ApiKey.CREATE_ACLS, body).results
        return [(r.error_code, r.error_message or None) for r in results]

    def describe(self, f: AclBindingFilter) -> set[Acl]:
        answer = self._call(ApiKey.DESCRIBE_ACLS, _filter_fields(f))
        assert (answer.error_code, answer.error_message) == (0, "")
        return {
            (
                r.resource_type,
                r.resource_name,
                r.pattern_type,
                a.principal,
                a.host,
                a.operation,
                a.permission_type,
            )
            for r in answer.resources
            for a in r.acls
        }

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[tuple[int, str | None, set[Acl]]]:
        body = {"filters": [_filter_fields(f) for f in filters]}
        results = self._call(ApiKey.DELETE_ACLS, body).filter_results
        return [
            (
                r.error_code,
                r.error_message,
                {
                    (
                        m.resource_type,
                        m.resource_name,
                        m.pattern_type,
                        m.principal,
                        m.host,
                        m.operation,
                        m.permission_type,
                    )
                    for m in r.matching_acls
                },
            )
            for r in results
        ]

    def topic_operations(self, topic: str) -> set[int]:
        with Wire(self.bootstrap) as wire:
            body = {
                "topics": [{"name": topic}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": True,
            }
            (answer,) = wire.call(ApiKey.METADATA, 12, body).topics
        if answer.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
            return set()
        assert answer.error_code == 0
        return {op for op in TOPIC_OPS if answer.topic_authorized_operations & (1 << op)}


class CoreAcls:
    def __init__(self) -> None:
        self.authorizer = AclAuthorizer(
            super_users={"User:admin"}, allow_everyone_if_no_acl_found=True
        )

    def create(self, acls: Sequence[Acl]) -> list[tuple[int, str | None]]:
        outcomes, new = self.authorizer.plan_create([AclBinding(*a) for a in acls])
        self.authorizer.add(new)
        return [(0, None) if e is None else (int(e.code), e.message) for e in outcomes]

    def describe(self, f: AclBindingFilter) -> set[Acl]:
        return {_acl(b) for b in self.authorizer.acls(f)}

    def delete(self, filters: Sequence[AclBindingFilter]) -> list[tuple[int, str | None, set[Acl]]]:
        results, doomed = self.authorizer.plan_delete(filters)
        self.authorizer.remove(doomed)
        return [
            (0, None, {_acl(b) for b in r.deleted})
            if r.error is None
            else (int(r.error.code), r.error.message, set())
            for r in results
        ]

    def topic_operations(self, topic: str) -> set[int]:
        ops = self.authorizer.authorized_operations(ANONYMOUS, "127.0.0.1", 2, topic, TOPIC_OPS)
        return set(ops) if AclOperation.DESCRIBE in ops else set()


def _acl(b: AclBinding) -> Acl:
    return (
        b.resource_type,
        b.resource_name,
        b.pattern_type,
        b.principal,
        b.host,
        b.operation,
        b.permission_type,
    )


@pytest.fixture(params=["apache-kafka", "core", "wirebroker"])
def acl_api(request: pytest.FixtureRequest) -> AclApi:
    if request.param == "core":
        return CoreAcls()
    if request.param == "wirebroker":
        return KafkaAcls(str(request.getfixturevalue("wirebroker_with_authorizer")))
    return KafkaAcls(str(request.getfixturevalue("kafka_with_authorizer")))


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:8]


PRINCIPAL_TEXT = (
    "Could not parse principal from `bob` (no colon is present separating the principal type "
    "from the principal name)"
)
CREATIONS: list[tuple[dict[str, Any], int, str | None]] = [
    ({}, 0, None),
    ({"rtype": 99}, 42, "Invalid resourceType UNKNOWN"),
    (
        {"rtype": 4, "name": "x"},
        42,
        "The only valid name for the CLUSTER resource is kafka-cluster",
    ),
    ({"rtype": 4, "name": ""}, 42, "The only valid name for the CLUSTER resource is kafka-cluster"),
    ({"name": ""}, 42, "Invalid empty resource name"),
    ({"rtype": 99, "name": ""}, 42, "Invalid empty resource name"),
    ({"pattern": 99, "op": 99}, 42, "Invalid patternType UNKNOWN"),
    ({"op": 99, "perm": 99}, 42, "Invalid operation UNKNOWN"),
    ({"perm": 99, "principal": "bob"}, 42, "Invalid permissionType UNKNOWN"),
    ({"principal": "bob", "host": ""}, 42, PRINCIPAL_TEXT),
    ({"principal": "User:"}, 0, None),
    ({"host": ""}, 42, "Host pattern cannot be null or empty"),
    ({"host": "10.0.0.0/8"}, 0, None),
    (
        {"host": "10.0.0.0/33"},
        42,
        "Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]",
    ),
    ({"host": "abc/def"}, 42, "Invalid CIDR notation 'abc/def': Could not parse [abc/def]"),
    (
        {"host": "fe80::/129"},
        42,
        "Invalid CIDR notation 'fe80::/129': Could not parse "
        "[fe80::/129] - prefix length must be between 0 and 128",
    ),
    ({"host": "zz::/10"}, 42, "Invalid CIDR notation 'zz::/10': Could not parse [zz::]"),
    ({"pattern": 4, "name": "*"}, 0, None),
    ({"op": 15}, 0, None),
    ({"rtype": 7}, 0, None),
]


@pytest.mark.parametrize(("changes", "code", "text"), CREATIONS)
def test_creation_checks(
    acl_api: AclApi, unique: str, changes: dict[str, Any], code: int, text: str | None
) -> None:
    changes = {"name": f"c{unique}", "principal": f"User:c{unique}", **changes}
    principal = changes["principal"]
    acl = creation(**changes)
    assert acl_api.create([acl]) == [(code, text)]
    if code == 0:
        assert acl_api.describe(acl_filter(principal=principal)) == {acl}
        acl_api.delete([acl_filter(principal=principal)])


@pytest.mark.parametrize(
    "bad", [{"rtype": 1}, {"pattern": 1}, {"pattern": 2}, {"op": 1}, {"perm": 1}]
)
def test_an_any_code_fails_the_whole_request(
    acl_api: AclApi, unique: str, bad: dict[str, Any]
) -> None:
    principal = f"User:a{unique}"
    good = creation(name=f"a{unique}", principal=principal)
    worse = creation(**{"name": f"a{unique}", "principal": principal, **bad})
    assert acl_api.create([good, worse]) == [(ErrorCode.UNKNOWN, None)] * 2
    assert acl_api.describe(acl_filter(principal=principal)) == set()


def test_filters_and_deletes(acl_api: AclApi, unique: str) -> None:
    p, x = f"User:f{unique}", f"x{unique}-"
    stored = [
        creation(2, x, 4, p),
        creation(2, x + "a", 3, p),
        creation(2, "*", 3, p),
        creation(2, x + "a", 4, p),
        creation(2, x + "ab", 3, p),
        creation(3, x + "a", 3, p),
    ]
    assert acl_api.create([*stored, stored[0]]) == [(0, None)] * 7
    try:
        s = dict(enumerate(stored))

        def described(**kw: Any) -> set[Acl]:
            return acl_api.describe(acl_filter(principal=p, **kw))

        assert described() == set(stored)
        assert described(name=x + "a", pattern=2) == {s[0], s[1], s[2], s[3], s[5]}
        assert described(name=x + "a") == {s[1], s[3], s[5]}
        assert described(name=x + "a", pattern=3) == {s[1], s[5]}
        assert described(name=x + "a", pattern=4) == {s[3]}
        assert described(name="*", pattern=3) == described(name="*", pattern=2) == {s[2]}
        assert described(rtype=2, name=x + "ab", pattern=2) == {s[0], s[2], s[3], s[4]}
        for unknown in ({"rtype": 99}, {"pattern": 99}, {"op": 99}, {"perm": 99}, {"op": 8}):
            assert described(**unknown) == set()
        assert described(host="*", op=3, perm=3) == set(stored)

        unknown_filters = [
            acl_filter(99, principal=p),
            acl_filter(pattern=99, principal=p),
            acl_filter(op=99, principal=p),
            acl_filter(perm=99, principal=p),
        ]
        match = acl_filter(name=x + "a", pattern=2, principal=p)
        assert acl_api.delete([*unknown_filters, match, match]) == [
            (42, "Unknown patternFilter.", set()),
            (42, "Unknown patternFilter.", set()),
            (42, "Unknown entryFilter.", set()),
            (42, "Unknown entryFilter.", set()),
            (0, None, {s[0], s[1], s[2], s[3], s[5]}),
            (0, None, {s[0], s[1], s[2], s[3], s[5]}),
        ]
        assert described() == {s[4]}
        assert acl_api.delete([acl_filter(principal=p)]) == [(0, None, {s[4]})]
    finally:  # a '*' ACL left behind would change every later decision
        acl_api.delete([acl_filter(principal=p)])


def _operations_until(acl_api: AclApi, topic: str, expected: set[int]) -> set[int]:
    """Kafka's broker applies ACL changes a moment after the controller answers: ask until
    the answer is `expected` (or the last answer at a 30 s deadline)."""
    deadline = time.monotonic() + 30
    while True:
        got = acl_api.topic_operations(topic)
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


ALL_TOPIC_OPS = set(TOPIC_OPS)
R, W, D, DC, AC = (
    AclOperation.READ,
    AclOperation.WRITE,
    AclOperation.DESCRIBE,
    AclOperation.DESCRIBE_CONFIGS,
    AclOperation.ALTER_CONFIGS,
)
# (ACLs on the topic T, or a prefix of it "T[:-1]" marked by pattern 4) -> authorized ops
DECISIONS: list[tuple[list[dict[str, Any]], set[int]]] = [
    ([], ALL_TOPIC_OPS),
    ([{"op": R}], {R, D}),
    ([{"op": AC}], set()),  # no DESCRIBE: Metadata hides the topic
    ([{"op": AC}, {"op": D}], {AC, DC, D}),
    ([{"op": AclOperation.ALL, "pattern": 4}, {"op": W, "perm": 2}], ALL_TOPIC_OPS - {W}),
    ([{"op": R, "principal": "User:*"}], {R, D}),
    ([{"op": R, "principal": "User:other"}], set()),
    ([{"op": D}, {"op": R, "perm": 2}], {D}),
    ([{"op": AclOperation.ALL, "host": "127.0.0.1"}], ALL_TOPIC_OPS),
    ([{"op": AclOperation.ALL, "host": "10.0.0.1"}], set()),
    ([{"op": AclOperation.ALL, "host": "127.0.0.0/8"}], ALL_TOPIC_OPS),
    (
        [{"op": AclOperation.ALL}, {"op": AclOperation.ALL, "perm": 2, "host": "127.0.0.0/24"}],
        set(),
    ),
    ([{"op": W}, {"op": AclOperation.DELETE}, {"op": R, "perm": 2}], {W, AclOperation.DELETE, D}),
    ([{"op": W}, {"op": D, "perm": 2}], set()),
]


@pytest.mark.parametrize(("acls", "expected"), DECISIONS)
def test_decisions_on_a_topic(
    acl_api: AclApi, unique: str, acls: list[dict[str, Any]], expected: set[int]
) -> None:
    topic = f"d{unique}"
    if isinstance(acl_api, KafkaAcls):  # Kafka or a wirebroker
        with Wire(acl_api.bootstrap) as wire:
            wire.create_topic(topic)
    made = []
    for spec in acls:
        spec = {"principal": ANONYMOUS, **spec}
        name = topic[:-1] if spec.get("pattern") == 4 else topic
        made.append(creation(2, name, spec.pop("pattern", 3), **spec))
    assert acl_api.create(made) == [(0, None)] * len(made)
    try:
        assert _operations_until(acl_api, topic, expected) == expected
    finally:
        acl_api.delete([acl_filter(2, topic), acl_filter(2, topic[:-1])])


def test_kafka_sends_an_empty_text_for_a_created_acl(
    kafka_with_authorizer: str, unique: str
) -> None:
    """Kafka's CreateAcls answers a creation with error_message "" (not null); DeleteAcls
    answers null (the adapters above compare texts with "" as None)."""
    creation_fields = creation(name=f"e{unique}", principal=f"User:e{unique}")
    body = dict(zip(ACL_FIELDS, creation_fields, strict=True))
    with Wire(kafka_with_authorizer) as wire:
        (created,) = wire.call(ApiKey.CREATE_ACLS, 3, {"creations": [body]}).results
        assert (created.error_code, created.error_message) == (0, "")
        fields = _filter_fields(acl_filter(principal=f"User:e{unique}"))
        (deleted,) = wire.call(ApiKey.DELETE_ACLS, 3, {"filters": [fields]}).filter_results
        assert (deleted.error_code, deleted.error_message, len(deleted.matching_acls)) == (
            0,
            None,
            1,
        )
