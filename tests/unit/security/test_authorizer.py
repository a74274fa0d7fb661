"""wirebroker.security.authorizer: each of Kafka's rules, each tested so that breaking it
fails a test; the ACL APIs' filters, creations and deletions as Kafka 4.4 answered them
(tests/oracle/test_acl_authorizer.py asks Kafka the same); the ZooKeeper encoding."""

from __future__ import annotations

import json

import pytest

from protocol.errors import ErrorCode
from wirebroker.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from wirebroker.security.authorizer import (
    AclAuthorizer,
    acl_node_path,
    binding_matches,
    creation_error,
    decode_acl_node,
    encode_acl_node,
    parse_acl_node_path,
    parse_super_users,
)

Op = AclOperation
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
ALICE = "User:alice"
HOST = "10.0.0.1"


def acl(
    name: str = "t",
    *,
    rtype: int = TOPIC,
    pattern: int = LITERAL,
    principal: str = ALICE,
    host: str = "*",
    op: int = Op.READ,
    perm: int = ALLOW,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def may(
    authorizer: AclAuthorizer,
    op: int = Op.READ,
    name: str = "t",
    *,
    principal: str = ALICE,
    host: str = HOST,
    rtype: int = TOPIC,
) -> bool:
    return authorizer.authorize(principal, host, op, rtype, name)


# -- decisions


def test_no_acls_denies_unless_allow_everyone() -> None:
    assert not may(AclAuthorizer())
    assert may(AclAuthorizer(allow_everyone_if_no_acl_found=True))


def test_allow_everyone_only_where_no_acl_applies() -> None:
    authorizer = AclAuthorizer([acl(principal="User:bob")], allow_everyone_if_no_acl_found=True)
    assert not may(authorizer)  # an ACL applies to t (for bob): alice is denied
    assert may(authorizer, name="other")
    assert may(authorizer, rtype=GROUP)  # ACLs of another resource type do not apply


def test_literal_names_the_resource_and_operation() -> None:
    authorizer = AclAuthorizer([acl()])
    assert may(authorizer)
    assert not may(authorizer, name="t2")
    assert not may(authorizer, name="")
    assert not may(authorizer, Op.WRITE)
    assert not may(authorizer, rtype=GROUP)


def test_literal_wildcard_names_every_resource() -> None:
    authorizer = AclAuthorizer([acl("*")])
    assert may(authorizer, name="anything") and may(authorizer, name="*")
    assert not may(authorizer, rtype=GROUP, name="anything")


def test_prefixed() -> None:
    authorizer = AclAuthorizer([acl("pay-", pattern=PREFIXED)])
    assert may(authorizer, name="pay-") and may(authorizer, name="pay-eu")
    assert not may(authorizer, name="pay") and not may(authorizer, name="xpay-")


def test_prefixed_star_is_no_wildcard() -> None:
    authorizer = AclAuthorizer([acl("*", pattern=PREFIXED)])
    assert not may(authorizer, name="t")
    assert may(authorizer, name="*t")


def test_principal_wildcard_is_user_star() -> None:
    everyone = AclAuthorizer([acl(principal="User:*")])
    assert may(everyone) and may(everyone, principal="User:bob")
    assert may(everyone, principal="Group:x")  # Kafka matches User:* for any principal
    groups = AclAuthorizer([acl(principal="Group:*")])
    assert not may(groups, principal="Group:x") and not may(groups)
    assert not may(AclAuthorizer([acl(principal="User:bob")]))


@pytest.mark.parametrize(
    ("acl_host", "host", "allowed"),
    [
        ("*", "192.168.1.1", True),
        ("10.0.0.1", "10.0.0.1", True),
        ("10.0.0.1", "10.0.0.2", False),
        ("10.0.0.0/8", "10.200.3.4", True),
        ("10.0.0.0/8", "11.0.0.1", False),
        ("10.0.0.7/32", "10.0.0.7", True),
        ("10.1.2.3/8", "10.9.9.9", True),  # host bits set: a range all the same
        ("fe80::/10", "fe80::1", True),
        ("fe80::/10", "10.0.0.1", False),
        ("10.0.0.0/8", "not-an-ip", False),
    ],
)
def test_hosts(acl_host: str, host: str, allowed: bool) -> None:
    assert may(AclAuthorizer([acl(host=acl_host)]), host=host) is allowed


@pytest.mark.parametrize("implying", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE])
def test_describe_implied_by_allow(implying: int) -> None:
    assert may(AclAuthorizer([acl(op=implying)]), Op.DESCRIBE)


@pytest.mark.parametrize(
    "op", [Op.CREATE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, Op.CLUSTER_ACTION]
)
def test_describe_not_implied_by_others(op: int) -> None:
    assert not may(AclAuthorizer([acl(op=op)]), Op.DESCRIBE)


def test_describe_configs_implied_by_alter_configs_only() -> None:
    assert may(AclAuthorizer([acl(op=Op.ALTER_CONFIGS)]), Op.DESCRIBE_CONFIGS)
    assert may(AclAuthorizer([acl(op=Op.DESCRIBE_CONFIGS)]), Op.DESCRIBE_CONFIGS)
    assert not may(AclAuthorizer([acl(op=Op.ALTER)]), Op.DESCRIBE_CONFIGS)
    assert not may(AclAuthorizer([acl(op=Op.DESCRIBE_CONFIGS)]), Op.ALTER_CONFIGS)
    assert not may(AclAuthorizer([acl(op=Op.DESCRIBE)]), Op.READ)  # no implication upwards


def test_implication_is_for_allow_only() -> None:
    authorizer = AclAuthorizer([acl(op=Op.DESCRIBE), acl(op=Op.READ, perm=DENY)])
    assert may(authorizer, Op.DESCRIBE)  # a DENY READ does not deny DESCRIBE
    assert not may(authorizer, Op.READ)
    denied = AclAuthorizer([acl(op=Op.DESCRIBE), acl(op=Op.ALTER_CONFIGS, perm=DENY)])
    assert may(denied, Op.DESCRIBE)


def test_all() -> None:
    authorizer = AclAuthorizer([acl(op=Op.ALL)])
    assert all(may(authorizer, op) for op in (Op.READ, Op.WRITE, Op.CLUSTER_ACTION, Op.DESCRIBE))
    deny_all = AclAuthorizer([acl(op=Op.READ), acl(op=Op.ALL, perm=DENY)])
    assert not may(deny_all, Op.READ) and not may(deny_all, Op.DESCRIBE)


@pytest.mark.parametrize(
    "deny",
    [
        acl(perm=DENY),
        acl(perm=DENY, principal="User:*"),
        acl("*", perm=DENY),
        acl("t", pattern=PREFIXED, perm=DENY),
        acl(perm=DENY, host=HOST),
        acl(perm=DENY, host="10.0.0.0/24"),
    ],
)
def test_deny_beats_allow(deny: AclBinding) -> None:
    for allow in (acl(), acl(op=Op.ALL), acl("*", principal="User:*")):
        assert not may(AclAuthorizer([allow, deny]))
        assert not may(AclAuthorizer([deny, allow]))


def test_a_deny_elsewhere_does_not_deny() -> None:
    authorizer = AclAuthorizer(
        [
            acl(),
            acl(perm=DENY, principal="User:bob"),
            acl(perm=DENY, host="10.0.0.2"),
            acl(perm=DENY, op=Op.WRITE),
            acl("t2", perm=DENY),
            acl("tt", pattern=PREFIXED, perm=DENY),
            acl(rtype=GROUP, perm=DENY),
        ]
    )
    assert may(authorizer)


def test_super_users() -> None:
    assert parse_super_users(" User:admin ; User:broker;;") == {"User:admin", "User:broker"}
    assert parse_super_users(None) == frozenset()
    authorizer = AclAuthorizer(
        [acl("*", principal="User:*", op=Op.ALL, perm=DENY)],
        super_users=parse_super_users("User:admin"),
    )
    assert may(
        authorizer, Op.CLUSTER_ACTION, "kafka-cluster", principal="User:admin", rtype=CLUSTER
    )
    assert not may(authorizer)


def test_authorized_operations() -> None:
    authorizer = AclAuthorizer([acl(op=Op.WRITE), acl(op=Op.ALTER_CONFIGS)])
    ops = [Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.DELETE]
    assert authorizer.authorized_operations(ALICE, HOST, TOPIC, "t", ops) == [
        Op.WRITE,
        Op.DESCRIBE,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    ]


def by_type(authorizer: AclAuthorizer, op: int = Op.WRITE) -> bool:
    return authorizer.authorize_by_resource_type(ALICE, HOST, op, TOPIC)


def test_authorize_by_resource_type() -> None:
    assert not by_type(AclAuthorizer())
    assert by_type(AclAuthorizer(allow_everyone_if_no_acl_found=True))
    assert AclAuthorizer(super_users={ALICE}).authorize_by_resource_type(ALICE, HOST, 4, TOPIC)
    assert by_type(AclAuthorizer([acl("a", op=Op.WRITE)]))
    assert by_type(AclAuthorizer([acl("a", op=Op.ALL)]))
    assert not by_type(AclAuthorizer([acl("a", op=Op.READ)]))
    assert not by_type(AclAuthorizer([acl("a", op=Op.WRITE)]), Op.DESCRIBE)  # no implication
    assert not by_type(AclAuthorizer([acl("a", op=Op.WRITE, rtype=GROUP)]))
    assert not by_type(AclAuthorizer([acl("a", op=Op.WRITE, principal="User:bob")]))
    assert not by_type(AclAuthorizer([acl("a", op=Op.WRITE, host="10.0.0.2")]))
    assert by_type(AclAuthorizer([acl("a", op=Op.WRITE, host="10.0.0.0/8")]))


def test_authorize_by_resource_type_denies() -> None:
    write = Op.WRITE
    assert not by_type(AclAuthorizer([acl("a", op=write), acl("a", op=write, perm=DENY)]))
    assert by_type(AclAuthorizer([acl("a", op=write), acl("b", op=write, perm=DENY)]))
    prefix_deny = acl("a", pattern=PREFIXED, op=write, perm=DENY)
    assert not by_type(AclAuthorizer([acl("ab", op=write), prefix_deny]))
    assert not by_type(AclAuthorizer([acl("ab", pattern=PREFIXED, op=write), prefix_deny]))
    assert by_type(AclAuthorizer([acl("b", op=write), prefix_deny]))
    wildcard_deny = acl("*", op=write, perm=DENY)
    assert not by_type(AclAuthorizer([acl("*", op=write), acl("b", op=write), wildcard_deny]))
    assert by_type(AclAuthorizer([acl("*", op=write), acl("b", op=write, perm=DENY)]))
    with pytest.raises(ValueError):
        AclAuthorizer().authorize_by_resource_type(ALICE, HOST, Op.ANY, TOPIC)
    with pytest.raises(ValueError):
        AclAuthorizer().authorize_by_resource_type(ALICE, HOST, Op.READ, ResourceType.ANY)


# -- filters (DescribeAcls, DeleteAcls)


def flt(
    name: str | None = None,
    *,
    rtype: int = ResourceType.ANY,
    pattern: int = PatternType.ANY,
    principal: str | None = None,
    host: str | None = None,
    op: int = Op.ANY,
    perm: int = AclPermissionType.ANY,
) -> AclBindingFilter:
    return AclBindingFilter(rtype, name, pattern, principal, host, op, perm)


STORED = [
    acl("x-", pattern=PREFIXED),
    acl("x-a"),
    acl("*"),
    acl("x-a", pattern=PREFIXED),
    acl("x-ab"),
    acl("x-a", rtype=GROUP),
]


def names(f: AclBindingFilter) -> set[tuple[int, str, int]]:
    return {
        (b.resource_type, b.resource_name, b.pattern_type) for b in AclAuthorizer(STORED).acls(f)
    }


def test_filters_as_kafka() -> None:
    g = GROUP
    assert names(flt("x-a", pattern=PatternType.MATCH)) == {
        (TOPIC, "*", LITERAL),
        (TOPIC, "x-", PREFIXED),
        (TOPIC, "x-a", LITERAL),
        (TOPIC, "x-a", PREFIXED),
        (g, "x-a", LITERAL),
    }
    assert len(names(flt(pattern=PatternType.MATCH))) == 6
    assert names(flt("x-a")) == {(TOPIC, "x-a", LITERAL), (TOPIC, "x-a", PREFIXED), (g, "x-a", 3)}
    assert names(flt("x-a", pattern=LITERAL)) == {(TOPIC, "x-a", LITERAL), (g, "x-a", LITERAL)}
    assert names(flt("x-a", pattern=PREFIXED)) == {(TOPIC, "x-a", PREFIXED)}
    assert names(flt("*", pattern=LITERAL)) == {(TOPIC, "*", LITERAL)}
    assert names(flt("*", pattern=PatternType.MATCH)) == {(TOPIC, "*", LITERAL)}
    assert names(flt("x-ab", rtype=TOPIC, pattern=PatternType.MATCH)) == {
        (TOPIC, "*", LITERAL),
        (TOPIC, "x-", PREFIXED),
        (TOPIC, "x-a", PREFIXED),
        (TOPIC, "x-ab", LITERAL),
    }
    for unknown in (flt(rtype=99), flt(pattern=99), flt(op=99), flt(perm=99), flt(rtype=0)):
        assert names(unknown) == set()


def test_entry_filters_are_exact() -> None:
    b = acl(principal="User:*", host="*", op=Op.ALL)
    assert binding_matches(flt(principal="User:*", host="*", op=Op.ALL, perm=ALLOW), b)
    assert not binding_matches(flt(principal=ALICE), b)  # no wildcard logic in filters
    assert not binding_matches(flt(host=HOST), b)
    assert not binding_matches(flt(op=Op.READ), b)
    assert not binding_matches(flt(perm=DENY), b)


# -- creations and deletions


def creation_text(b: AclBinding) -> str | None:
    error = creation_error(b)
    assert error is None or error.code == ErrorCode.INVALID_REQUEST
    return None if error is None else error.message


def test_creation_checks_in_kafkas_order() -> None:
    principal_text = (
        "Could not parse principal from `bob` (no colon is present separating the principal "
        "type from the principal name)"
    )
    cluster_text = "The only valid name for the CLUSTER resource is kafka-cluster"
    cases = {
        acl(): None,
        acl("kafka-cluster", rtype=CLUSTER): None,
        acl("kafka-cluster", rtype=CLUSTER, pattern=PREFIXED): None,
        acl("x", rtype=CLUSTER): cluster_text,
        acl("", rtype=CLUSTER): cluster_text,
        acl("", rtype=99): "Invalid empty resource name",
        acl(rtype=99, pattern=99): "Invalid resourceType UNKNOWN",
        acl(pattern=99, op=99): "Invalid patternType UNKNOWN",
        acl(op=99, perm=99): "Invalid operation UNKNOWN",
        acl(op=Op.TWO_PHASE_COMMIT): None,
        acl(perm=99, principal="bob"): "Invalid permissionType UNKNOWN",
        acl(principal="bob", host=""): principal_text,
        acl(principal="User:"): None,
        acl(principal=":x"): None,
        acl(host=""): "Host pattern cannot be null or empty",
        acl("*", pattern=PREFIXED): None,
        acl("a/b"): None,
    }
    assert {b: creation_text(b) for b in cases} == cases


@pytest.mark.parametrize(
    ("host", "problem"),
    [
        ("10.0.0.0/8", None),
        ("10.0.0.1/8", None),
        ("010.0.0.0/8", None),
        ("1.2.3.4/08", None),
        ("::1/128", None),
        ("fe80::/10", None),
        ("10.0.0.0/33", "Value [33] not in range [0,32]"),
        ("10.0.0.256/8", "Value [256] not in range [0,255]"),
        ("10.0.0.0/100", "Could not parse [10.0.0.0/100]"),
        ("10.0.0.0/", "Could not parse [10.0.0.0/]"),
        ("/8", "Could not parse [/8]"),
        ("abc/def", "Could not parse [abc/def]"),
        ("*/8", "Could not parse [*/8]"),
        (" 10.0.0.0/8", "Could not parse [ 10.0.0.0/8]"),
        ("1.2.3.4/-1", "Could not parse [1.2.3.4/-1]"),
        ("fe80::/129", "Could not parse [fe80::/129] - prefix length must be between 0 and 128"),
        ("zz::/10", "Could not parse [zz::]"),
        ("a:b/x", "Could not parse [a:b/x] - invalid prefix length"),
        ("fe80::1/10/3", "Could not parse [fe80::1/10/3] - invalid prefix length"),
    ],
)
def test_cidr_hosts(host: str, problem: str | None) -> None:
    expected = None if problem is None else f"Invalid CIDR notation '{host}': {problem}"
    assert creation_text(acl(host=host)) == expected


async def test_create_acls() -> None:
    authorizer = AclAuthorizer([acl()])
    outcomes = await authorizer.create_acls([acl(), acl("u"), acl("u"), acl(host="")])
    assert [None if e is None else e.code for e in outcomes] == [
        None,
        None,
        None,
        ErrorCode.INVALID_REQUEST,
    ]
    assert sorted(b.resource_name for b in authorizer.bindings()) == ["t", "u"]


@pytest.mark.parametrize(
    "bad",
    [
        acl(rtype=ResourceType.ANY),
        acl(pattern=PatternType.ANY),
        acl(pattern=PatternType.MATCH),
        acl(op=Op.ANY),
        acl(perm=AclPermissionType.ANY),
    ],
)
async def test_an_any_code_fails_the_whole_creation_request(bad: AclBinding) -> None:
    authorizer = AclAuthorizer()
    outcomes = await authorizer.create_acls([acl(), bad])
    assert [(e.code, e.message) for e in outcomes if e is not None] == [
        (ErrorCode.UNKNOWN, None)
    ] * 2
    assert authorizer.bindings() == []


async def test_delete_acls() -> None:
    authorizer = AclAuthorizer(STORED)
    results = await authorizer.delete_acls(
        [
            flt(rtype=99),
            flt(pattern=99),
            flt(op=99),
            flt(perm=0),
            flt("x-a", pattern=PatternType.MATCH),
            flt("x-a", pattern=PatternType.MATCH),
            flt("nothing"),
        ]
    )
    assert [(r.error.code, r.error.message) for r in results if r.error] == [
        (ErrorCode.INVALID_REQUEST, "Unknown patternFilter."),
        (ErrorCode.INVALID_REQUEST, "Unknown patternFilter."),
        (ErrorCode.INVALID_REQUEST, "Unknown entryFilter."),
        (ErrorCode.INVALID_REQUEST, "Unknown entryFilter."),
    ]
    assert len(results[4].deleted) == 5 and set(results[4].deleted) == set(results[5].deleted)
    assert results[6].deleted == () and results[6].error is None
    assert authorizer.bindings() == [acl("x-ab")]
    assert await authorizer.describe_acls(flt()) == [acl("x-ab")]


def test_plans_change_nothing() -> None:
    authorizer = AclAuthorizer([acl()])
    _, new = authorizer.plan_create([acl("u")])
    _, doomed = authorizer.plan_delete([flt()])
    assert (new, doomed) == ([acl("u")], [acl()])
    assert authorizer.bindings() == [acl()]
    authorizer.add(new)
    authorizer.remove(doomed)
    authorizer.remove(doomed)
    assert authorizer.bindings() == [acl("u")]


# -- ZooKeeper


def test_node_paths() -> None:
    assert acl_node_path(TOPIC, LITERAL, "orders") == "/kafka-acl/Topic/orders"
    assert acl_node_path(ResourceType.TRANSACTIONAL_ID, PREFIXED, "tx-") == (
        "/kafka-acl-extended/prefixed/TransactionalId/tx-"
    )
    assert acl_node_path(CLUSTER, LITERAL, "kafka-cluster") == "/kafka-acl/Cluster/kafka-cluster"
    assert acl_node_path(GROUP, LITERAL, "a/b%") == "/kafka-acl/Group/a%2Fb%25"
    assert acl_node_path(GROUP, LITERAL, "..") == "/kafka-acl/Group/%2E%2E"
    for rtype, pattern, name in [
        (GROUP, LITERAL, "a/b%"),
        (GROUP, LITERAL, ".."),
        (ResourceType.DELEGATION_TOKEN, PREFIXED, "*"),
        (ResourceType.USER, LITERAL, "User:x y"),
        (TOPIC, LITERAL, "*"),
    ]:
        assert parse_acl_node_path(acl_node_path(rtype, pattern, name)) == (rtype, pattern, name)
    with pytest.raises(ValueError):
        acl_node_path(TOPIC, PatternType.MATCH, "x")
    for bad in ["/kafka-acl/Topic", "/kafka-acl/Nope/x", "/other/Topic/x", "/kafka-acl/Topic/a/b"]:
        with pytest.raises(ValueError):
            parse_acl_node_path(bad)


def test_node_data_round_trip() -> None:
    bindings = [
        acl("t", op=Op.DESCRIBE_CONFIGS, perm=DENY, host="10.0.0.0/8"),
        acl("t", principal="User:*", op=Op.IDEMPOTENT_WRITE),
    ]
    data = encode_acl_node(bindings)
    assert json.loads(data) == {  # in a stable order (principal, host, operation, permission)
        "version": 1,
        "acls": [
            {
                "principal": "User:*",
                "permissionType": "Allow",
                "operation": "IdempotentWrite",
                "host": "*",
            },
            {
                "principal": ALICE,
                "permissionType": "Deny",
                "operation": "DescribeConfigs",
                "host": "10.0.0.0/8",
            },
        ],
    }
    assert sorted(decode_acl_node(TOPIC, LITERAL, "t", data), key=str) == sorted(bindings, key=str)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{}",
        b'{"acls":[{"principal":"User:a"}]}',
        b'{"acls":[{"principal":"User:a","host":"*","operation":"Fly","permissionType":"Allow"}]}',
        b"[1]",
    ],
)
def test_bad_node_data(data: bytes) -> None:
    with pytest.raises(ValueError, match="not an ACL node"):
        decode_acl_node(TOPIC, LITERAL, "t", data)
