"""The (api, resource type) -> operation table (wirebroker.security.checks) and the handlers'
helpers over it (wirebroker.handlers._authz): what Kafka 4.4's KafkaApis asks per API, that the
helpers ask the authorizer with the request's principal and host, and that without an
authorizer nothing is refused."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import load_handlers
from wirebroker.security.acls import AclBinding, AclOperation, NoAuthorizer, ResourceType
from wirebroker.security.authorizer import AclAuthorizer
from wirebroker.security.checks import CHECKS, DENIED, operation

A, R, Op = ApiKey, ResourceType, AclOperation


@pytest.mark.parametrize(
    ("api", "rtype", "op"),
    [
        (A.PRODUCE, R.TOPIC, Op.WRITE),
        (A.PRODUCE, R.TRANSACTIONAL_ID, Op.WRITE),
        (A.FETCH, R.TOPIC, Op.READ),
        (A.FETCH, R.CLUSTER, Op.CLUSTER_ACTION),
        (A.LIST_OFFSETS, R.TOPIC, Op.DESCRIBE),
        (A.METADATA, R.TOPIC, Op.DESCRIBE),
        (A.CREATE_TOPICS, R.CLUSTER, Op.CREATE),
        (A.DELETE_TOPICS, R.TOPIC, Op.DELETE),
        (A.CREATE_PARTITIONS, R.TOPIC, Op.ALTER),
        (A.DESCRIBE_CONFIGS, R.TOPIC, Op.DESCRIBE_CONFIGS),
        (A.INCREMENTAL_ALTER_CONFIGS, R.CLUSTER, Op.ALTER_CONFIGS),
        (A.JOIN_GROUP, R.GROUP, Op.READ),
        (A.OFFSET_COMMIT, R.TOPIC, Op.READ),
        (A.OFFSET_FETCH, R.GROUP, Op.DESCRIBE),
        (A.OFFSET_FETCH, R.TOPIC, Op.DESCRIBE),
        (A.DESCRIBE_GROUPS, R.GROUP, Op.DESCRIBE),
        (A.DELETE_GROUPS, R.GROUP, Op.DELETE),
        (A.OFFSET_DELETE, R.GROUP, Op.DELETE),
        (A.FIND_COORDINATOR, R.TRANSACTIONAL_ID, Op.DESCRIBE),
        (A.INIT_PRODUCER_ID, R.CLUSTER, Op.IDEMPOTENT_WRITE),
        (A.END_TXN, R.TRANSACTIONAL_ID, Op.WRITE),
        (A.WRITE_TXN_MARKERS, R.CLUSTER, Op.CLUSTER_ACTION),
        (A.DELETE_RECORDS, R.TOPIC, Op.DELETE),
        (A.ELECT_LEADERS, R.CLUSTER, Op.ALTER),
        (A.DESCRIBE_ACLS, R.CLUSTER, Op.DESCRIBE),
        (A.CREATE_ACLS, R.CLUSTER, Op.ALTER),
        (A.DELETE_ACLS, R.CLUSTER, Op.ALTER),
        (A.DESCRIBE_USER_SCRAM_CREDENTIALS, R.CLUSTER, Op.DESCRIBE),
        (A.ALTER_USER_SCRAM_CREDENTIALS, R.CLUSTER, Op.ALTER),
    ],
)
def test_what_each_api_asks(api: ApiKey, rtype: ResourceType, op: AclOperation) -> None:
    assert operation(int(api), rtype) == op


def test_an_api_asks_nothing_of_a_resource_it_does_not_touch() -> None:
    with pytest.raises(KeyError):
        operation(int(A.PRODUCE), R.GROUP)


def test_every_checked_api_but_the_quota_ones_is_served() -> None:
    served = set(load_handlers())
    unserved = {api for api, _rtype in CHECKS if int(api) not in served}
    assert unserved <= {A.DESCRIBE_CLIENT_QUOTAS, A.ALTER_CLIENT_QUOTAS}


def test_every_resource_type_checked_has_its_error() -> None:
    assert {rtype for _api, rtype in CHECKS} <= set(DENIED)
    assert DENIED[R.TOPIC] == ErrorCode.TOPIC_AUTHORIZATION_FAILED == 29
    assert DENIED[R.GROUP] == ErrorCode.GROUP_AUTHORIZATION_FAILED == 30
    assert DENIED[R.CLUSTER] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED == 31
    assert DENIED[R.TRANSACTIONAL_ID] == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED == 53


def ctx(api: ApiKey, authorizer: Any, principal: str = "User:bob", host: str = "10.0.0.7") -> Any:
    return SimpleNamespace(
        header=SimpleNamespace(api_key=int(api)),
        services=SimpleNamespace(authorizer=authorizer),
        session=SimpleNamespace(principal=principal),
        client_host=host,
    )


def allow(
    rtype: int, name: str, op: int, principal: str = "User:bob", host: str = "*"
) -> AclBinding:
    return AclBinding(rtype, name, 3, principal, host, op, 3)


def test_the_helpers_ask_with_the_principal_host_and_the_apis_operation() -> None:
    acls = AclAuthorizer([allow(R.TOPIC, "t", Op.WRITE, host="10.0.0.7")])
    assert _authz.allowed(ctx(A.PRODUCE, acls), R.TOPIC, "t")
    assert not _authz.allowed(ctx(A.PRODUCE, acls, host="10.0.0.8"), R.TOPIC, "t")
    assert not _authz.allowed(ctx(A.PRODUCE, acls, principal="User:eve"), R.TOPIC, "t")
    assert not _authz.allowed(ctx(A.FETCH, acls), R.TOPIC, "t")  # READ is not WRITE
    assert _authz.allowed(ctx(A.METADATA, acls), R.TOPIC, "t")  # DESCRIBE implied by WRITE
    assert _authz.denied_names(ctx(A.PRODUCE, acls), R.TOPIC, ["t", "u", "t"]) == {"u"}
    assert not _authz.cluster(ctx(A.CREATE_ACLS, acls))


def test_super_users_and_no_authorizer_pass_everything() -> None:
    supers = AclAuthorizer(super_users=["User:admin"])
    assert _authz.cluster(ctx(A.CREATE_ACLS, supers, principal="User:admin"))
    assert not _authz.cluster(ctx(A.CREATE_ACLS, supers))
    none = NoAuthorizer()
    assert _authz.cluster(ctx(A.FETCH, none))
    assert _authz.denied_names(ctx(A.PRODUCE, none), R.TOPIC, ["t"]) == set()
    assert _authz.allowed_by_type(ctx(A.INIT_PRODUCER_ID, none), R.TOPIC, Op.WRITE)


def test_authorized_operations_bits() -> None:
    acls = AclAuthorizer([allow(R.TOPIC, "t", Op.READ), allow(R.TOPIC, "t", Op.ALTER_CONFIGS)])
    everything = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
    bits = _authz.operations_bits(ctx(A.METADATA, acls), R.TOPIC, "t", everything)
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE) | (1 << Op.DESCRIBE_CONFIGS) | (
        1 << Op.ALTER_CONFIGS
    )
    assert _authz.operations_bits(ctx(A.METADATA, NoAuthorizer()), R.TOPIC, "t", everything) == (
        everything
    )


def test_config_resources_map_to_their_acl_resources() -> None:
    acls = AclAuthorizer([allow(R.TOPIC, "t", Op.DESCRIBE_CONFIGS)])
    describe = ctx(A.DESCRIBE_CONFIGS, acls)
    assert _authz.config_refusal(describe, 2, "t") is None
    assert _authz.config_refusal(describe, 2, "u") == (
        ErrorCode.TOPIC_AUTHORIZATION_FAILED,
        "Topic authorization failed.",
    )
    assert _authz.config_refusal(describe, 4, "0") == (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
        "Cluster authorization failed.",
    )
    assert _authz.config_refusal(describe, 32, "g")[0] == ErrorCode.GROUP_AUTHORIZATION_FAILED  # type: ignore[index]
    alter = ctx(A.ALTER_CONFIGS, acls)
    assert _authz.config_refusal(alter, 2, "t") is not None  # DESCRIBE_CONFIGS is not ALTER


def test_a_refusal_is_one_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="wirebroker.authorizer")
    assert not _authz.allowed(ctx(A.PRODUCE, AclAuthorizer()), R.TOPIC, "t")
    assert [r.getMessage() for r in caplog.records] == [
        "Principal = User:bob is Denied operation = WRITE from host = 10.0.0.7 on resource = "
        "TOPIC:t"
    ]
