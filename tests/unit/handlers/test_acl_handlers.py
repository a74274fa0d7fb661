"""The ACL APIs (DescribeAcls, CreateAcls, DeleteAcls, v1-3) through the real dispatcher and
handlers: without an authorizer (wirebroker.security.acls.NoAuthorizer, Kafka's default) every
ask is refused SECURITY_DISABLED with Kafka 4.4's texts (asked of it:
tests/oracle/test_acls_without_authorizer.py); an UNKNOWN code closes the connection with one
warning, as Kafka; and an authorizer plugged into the services is what the handlers answer
with (its bindings encoded as Kafka does)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from tests.unit.net.netwire import stub_services
from wirebroker.handlers.context import Services
from wirebroker.handlers.dispatcher import CLOSE, Dispatcher
from wirebroker.handlers.registry import load_handlers
from wirebroker.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclDeleteResult,
    AclError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

PEER = "198.51.100.7:40000"
VERSIONS = [1, 2, 3]
SECURITY_DISABLED = ErrorCode.SECURITY_DISABLED

ANY_FILTER = {
    "resource_type_filter": ResourceType.ANY,
    "resource_name_filter": None,
    "pattern_type_filter": PatternType.ANY,
    "principal_filter": None,
    "host_filter": None,
    "operation": AclOperation.ANY,
    "permission_type": AclPermissionType.ANY,
}
READ_TOPIC = {
    "resource_type": ResourceType.TOPIC,
    "resource_name": "orders",
    "resource_pattern_type": PatternType.LITERAL,
    "principal": "User:alice",
    "host": "*",
    "operation": AclOperation.READ,
    "permission_type": AclPermissionType.ALLOW,
}


async def ask(
    api: ApiKey, version: int, body: dict[str, Any], services: Services | None = None
) -> Any:
    """The decoded answer, or CLOSE."""
    dispatcher = Dispatcher(services or stub_services(), load_handlers())
    frame = encode_request(api, version, 9, "acls", body)[4:]
    reply = await dispatcher.dispatch(frame, "198.51.100.7", PEER)
    if reply.close:
        return CLOSE
    assert reply.response is not None
    correlation_id, answer = decode_response(api, version, reply.response[4:])
    assert correlation_id == 9
    return answer


def test_the_acl_apis_are_advertised_v1_to_3() -> None:
    handlers = load_handlers()
    for api in (ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS):
        spec = handlers[int(api)]
        assert (spec.advertised_min, spec.max_version) == (1, 3)


@pytest.mark.parametrize("version", VERSIONS)
async def test_without_an_authorizer_describe_is_refused(version: int) -> None:
    answer = await ask(ApiKey.DESCRIBE_ACLS, version, ANY_FILTER)
    assert (answer.error_code, answer.error_message, answer.resources) == (
        SECURITY_DISABLED,
        "No Authorizer is configured on the broker",
        [],
    )


@pytest.mark.parametrize("version", VERSIONS)
async def test_without_an_authorizer_each_creation_is_refused(version: int) -> None:
    answer = await ask(ApiKey.CREATE_ACLS, version, {"creations": [READ_TOPIC, READ_TOPIC]})
    assert [(r.error_code, r.error_message) for r in answer.results] == [
        (SECURITY_DISABLED, "No Authorizer is configured.")
    ] * 2
    assert (await ask(ApiKey.CREATE_ACLS, version, {"creations": []})).results == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_without_an_authorizer_each_deletion_is_refused(version: int) -> None:
    answer = await ask(ApiKey.DELETE_ACLS, version, {"filters": [ANY_FILTER, ANY_FILTER]})
    assert [(r.error_code, r.error_message, r.matching_acls) for r in answer.filter_results] == [
        (SECURITY_DISABLED, "No Authorizer is configured.", [])
    ] * 2
    assert (await ask(ApiKey.DELETE_ACLS, version, {"filters": []})).filter_results == []


UNKNOWN_CASES = [
    (ApiKey.DESCRIBE_ACLS, {**ANY_FILTER, field: 0})
    for field in ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")
] + [
    (ApiKey.DELETE_ACLS, {"filters": [ANY_FILTER, {**ANY_FILTER, "operation": 0}]}),
    (ApiKey.CREATE_ACLS, {"creations": [READ_TOPIC, {**READ_TOPIC, "resource_type": 0}]}),
    (ApiKey.CREATE_ACLS, {"creations": [{**READ_TOPIC, "resource_pattern_type": 0}]}),
]


@pytest.mark.parametrize(("api", "body"), UNKNOWN_CASES)
async def test_an_unknown_code_closes_the_connection(
    api: ApiKey, body: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="wirebroker.net")
    assert await ask(api, 2, body) is CLOSE
    (record,) = [r for r in caplog.records if "closing connection" in r.getMessage()]
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "UNKNOWN" in record.getMessage()


async def test_a_code_kafka_does_not_know_is_not_unknown() -> None:
    """Kafka checks for the UNKNOWN code (0) only: 99 is refused as any other ask."""
    answer = await ask(ApiKey.DESCRIBE_ACLS, 3, {**ANY_FILTER, "operation": 99})
    assert answer.error_code == SECURITY_DISABLED


class OneAcl:
    """An authorizer holding one ACL, to see the handlers encode what an authorizer says."""

    acl = AclBinding(2, "orders", 3, "User:alice", "*", 3, 3)
    enabled = True

    def __init__(self) -> None:
        self.asked: list[Any] = []

    def authorize(self, principal: str, host: str, op: int, rtype: int, name: str) -> bool:
        return True  # the handlers' own checks pass: what it answers is under test

    def authorize_by_resource_type(self, principal: str, host: str, op: int, rtype: int) -> bool:
        return True

    async def describe_acls(self, acl_filter: AclBindingFilter) -> list[AclBinding]:
        self.asked.append(acl_filter)
        return [self.acl, AclBinding(2, "orders", 3, "User:bob", "10.0.0.1", 4, 2)]

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclError | None]:
        self.asked.extend(bindings)
        return [None, AclError(ErrorCode.INVALID_REQUEST, "no")][: len(bindings)]

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        self.asked.extend(filters)
        return [AclDeleteResult(deleted=(self.acl,))] * len(filters)


async def test_an_authorizer_plugged_in_answers() -> None:
    services = stub_services()
    services.authorizer = authorizer = OneAcl()
    described = await ask(
        ApiKey.DESCRIBE_ACLS, 3, {**ANY_FILTER, "principal_filter": "User:x"}, services
    )
    assert (described.error_code, described.error_message) == (ErrorCode.NONE, "")
    (resource,) = described.resources
    assert (resource.resource_type, resource.resource_name, resource.pattern_type) == (
        2,
        "orders",
        3,
    )
    assert [(a.principal, a.host, a.operation, a.permission_type) for a in resource.acls] == [
        ("User:alice", "*", 3, 3),
        ("User:bob", "10.0.0.1", 4, 2),
    ]
    assert authorizer.asked == [AclBindingFilter(1, None, 1, "User:x", None, 1, 1)]
    created = await ask(ApiKey.CREATE_ACLS, 3, {"creations": [READ_TOPIC, READ_TOPIC]}, services)
    assert [(r.error_code, r.error_message) for r in created.results] == [
        (ErrorCode.NONE, ""),
        (ErrorCode.INVALID_REQUEST, "no"),
    ]
    assert authorizer.asked[1] == OneAcl.acl
    deleted = await ask(ApiKey.DELETE_ACLS, 3, {"filters": [ANY_FILTER]}, services)
    (result,) = deleted.filter_results
    (matching,) = result.matching_acls
    assert (result.error_code, matching.error_code, matching.resource_name, matching.principal) == (
        ErrorCode.NONE,
        ErrorCode.NONE,
        "orders",
        "User:alice",
    )
