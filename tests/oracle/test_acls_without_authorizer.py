"""The ACL APIs as a broker without an authorizer answers them: the same requests and the same
assertions against Apache Kafka 4.4 (the oracle, no `authorizer.class.name`: its default) and
against wirebroker. Kafka serves DescribeAcls, CreateAcls and DeleteAcls v1-3 and refuses
every ask with SECURITY_DISABLED, in two texts; a request with an UNKNOWN (0) code in a filter
or creation fails to parse and the connection is closed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode

DESCRIBE_TEXT = "No Authorizer is configured on the broker"
CHANGE_TEXT = "No Authorizer is configured."
ANY_FILTER = {
    "resource_type_filter": 1,
    "resource_name_filter": None,
    "pattern_type_filter": 1,
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,
    "permission_type": 1,
}
READ_TOPIC = {
    "resource_type": 2,
    "resource_name": "oracle-acl-topic",
    "resource_pattern_type": 3,
    "principal": "User:oracle",
    "host": "*",
    "operation": 3,
    "permission_type": 3,
}


@pytest.fixture(params=["kafka", "wirebroker"])
def bootstrap(request: pytest.FixtureRequest) -> str:
    if request.param == "kafka":
        return str(request.getfixturevalue("apache_kafka"))
    return str(request.getfixturevalue("kafka_broker_session").bootstrap)


@pytest.fixture
def wire(bootstrap: str) -> Iterator[Wire]:
    with Wire(bootstrap) as w:
        yield w


def test_the_acl_apis_are_advertised_v1_to_3(wire: Wire) -> None:
    answer = wire.call(
        ApiKey.API_VERSIONS, 3, {"client_software_name": "o", "client_software_version": "1"}
    )
    versions = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
    assert [versions.get(api) for api in (29, 30, 31)] == [(1, 3)] * 3


@pytest.mark.parametrize("version", [1, 2, 3])
def test_every_ask_is_refused_security_disabled(wire: Wire, version: int) -> None:
    described = wire.call(
        ApiKey.DESCRIBE_ACLS, version, {**ANY_FILTER, "resource_name_filter": "x"}
    )
    assert (described.error_code, described.error_message, described.resources) == (
        ErrorCode.SECURITY_DISABLED,
        DESCRIBE_TEXT,
        [],
    )
    created = wire.call(ApiKey.CREATE_ACLS, version, {"creations": [READ_TOPIC, READ_TOPIC]})
    assert [(r.error_code, r.error_message) for r in created.results] == [
        (ErrorCode.SECURITY_DISABLED, CHANGE_TEXT)
    ] * 2
    deleted = wire.call(ApiKey.DELETE_ACLS, version, {"filters": [ANY_FILTER, ANY_FILTER]})
    assert [(r.error_code, r.error_message, r.matching_acls) for r in deleted.filter_results] == [
        (ErrorCode.SECURITY_DISABLED, CHANGE_TEXT, [])
    ] * 2
    assert wire.call(ApiKey.CREATE_ACLS, version, {"creations": []}).results == []
    assert wire.call(ApiKey.DELETE_ACLS, version, {"filters": []}).filter_results == []


def test_a_code_other_than_unknown_is_refused_as_any_ask(wire: Wire) -> None:
    odd = {**ANY_FILTER, "resource_type_filter": 99, "pattern_type_filter": 99, "operation": 99}
    assert wire.call(ApiKey.DESCRIBE_ACLS, 3, odd).error_code == ErrorCode.SECURITY_DISABLED
    creation = {**READ_TOPIC, "resource_type": 1, "resource_pattern_type": 4, "operation": 99}
    (result,) = wire.call(ApiKey.CREATE_ACLS, 3, {"creations": [creation]}).results
    assert result.error_code == ErrorCode.SECURITY_DISABLED


UNKNOWN = [
    (ApiKey.DESCRIBE_ACLS, {**ANY_FILTER, "resource_type_filter": 0}),
    (ApiKey.DESCRIBE_ACLS, {**ANY_FILTER, "permission_type": 0}),
    (ApiKey.CREATE_ACLS, {"creations": [READ_TOPIC, {**READ_TOPIC, "operation": 0}]}),
    (ApiKey.DELETE_ACLS, {"filters": [{**ANY_FILTER, "pattern_type_filter": 0}]}),
]


@pytest.mark.parametrize(("api", "body"), UNKNOWN)
def test_an_unknown_code_closes_the_connection(bootstrap: str, api: ApiKey, body: Any) -> None:
    with Wire(bootstrap) as w, pytest.raises(ConnectionError):
        w.call(api, 2, body)
