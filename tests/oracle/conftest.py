"""Fixtures of the tests that hold wirebroker to Apache Kafka's answers: each such test runs
once per broker of `any_broker` (a wirebroker, a 3-broker wirebroker cluster, the oracle) and
makes the same assertions, so an assertion that Kafka itself fails is found at once.

    any_broker        "host:port[,...]" of each broker in turn (params "wirebroker",
                      "wirebroker-cluster" (skipped without ZooKeeper), "apache-kafka")
    single_broker     the same without the cluster (for what needs one broker's config)
    wirebroker_module one wirebroker for the module (`wirebroker.testing.running`)
    unique            unique("prefix") -> a topic name no earlier test or run has used (the
                      oracle is shared by a whole test run and keeps its topics)
    kafka_with_authorizer, wirebroker_with_authorizer
                      a Kafka of its own and a wirebroker, both with the StandardAuthorizer
                      settings of _oracle_acls.py (per module)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from _oracle_acls import SETTINGS as ACL_SETTINGS

from compat.oracle.kafka import ApacheKafka
from wirebroker.testing import running

_SINGLE = ["wirebroker", "apache-kafka"]


@pytest.fixture(scope="module")
def wirebroker_module() -> Iterator[str]:
    with running() as broker:
        yield broker.bootstrap


def _bootstrap(request: pytest.FixtureRequest, which: str) -> str:
    if which == "wirebroker":
        return str(request.getfixturevalue("wirebroker_module"))
    if which == "wirebroker-cluster":
        return str(request.getfixturevalue("kafka_cluster").bootstrap)
    return str(request.getfixturevalue("apache_kafka"))


@pytest.fixture(params=["wirebroker", "wirebroker-cluster", "apache-kafka"])
def any_broker(request: pytest.FixtureRequest) -> str:
    return _bootstrap(request, request.param)


@pytest.fixture(params=_SINGLE)
def single_broker(request: pytest.FixtureRequest) -> str:
    return _bootstrap(request, request.param)


@pytest.fixture
def unique() -> Callable[[str], str]:
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def kafka_with_authorizer() -> Iterator[str]:
    with ApacheKafka(overrides=ACL_SETTINGS) as kafka:
        yield kafka.bootstrap


@pytest.fixture(scope="module")
def wirebroker_with_authorizer() -> Iterator[str]:
    with running(overrides=ACL_SETTINGS) as broker:
        yield broker.bootstrap
