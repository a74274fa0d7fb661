"""A pytest plugin (`-p sasl_shim`) that lets kafka-python's own SASL tests
(`test/integration/test_sasl_integration.py`) run against secured wirebrokers.

Those tests skip themselves when KAFKA_URI is set (an external broker cannot be reconfigured),
and otherwise ask the suite's `kafka_broker_factory` for a broker
`KafkaFixture.instance(0, transport="SASL_PLAINTEXT", sasl_mechanism=M, partitions=4)`, which
spawns Apache Kafka from its distribution with the user `alice` / `alice-secret`
(`KafkaFixture.broker_user` / `broker_password`; SCRAM credentials added at format time). The
runner runs that file a second time without KAFKA_URI and with this plugin, which replaces
`KafkaFixture.instance` (nothing in the tests): it starts a `wirebroker.testing.BrokerHandle`
with that security protocol (its users are alice / alice-secret and bob / bob-secret, every
mechanism enabled) and returns the suite's own `KafkaFixture` as an external one on that
broker's secured listener, with the transport and mechanism the test asked for, so the
suite's `client_params` give its clients SASL settings. `get_topic_names`, which runs
`kafka-topics.sh` with a config file from the suite's `servers/` resources (not in the sdist),
is answered with kafka-python's own `KafkaAdminClient.list_topics()` over the same SASL
settings. The broker stops when the suite's factory closes the fixture.
"""

from __future__ import annotations

from typing import Any

import pytest


def _install() -> None:
    from kafka import KafkaAdminClient
    from test.integration import fixtures

    from wirebroker.testing import BrokerHandle

    kafka_fixture = fixtures.KafkaFixture

    def instance(
        cls: Any,
        broker_id: int,
        *,
        transport: str = "PLAINTEXT",
        sasl_mechanism: str | None = None,
        partitions: int = 4,
        replicas: int = 1,
        **_ignored: Any,
    ) -> Any:
        if transport not in ("SASL_PLAINTEXT", "SASL_SSL", "SSL"):
            raise RuntimeError(f"sasl_shim: only secured brokers are shimmed, not {transport}")
        handle = BrokerHandle(
            security=transport,
            sasl_mechanism=sasl_mechanism or "PLAIN",
            overrides={"num.partitions": str(partitions)},
        ).start()
        host, _, port = handle.bootstrap.rpartition(":")
        fixture = cls(
            host,
            int(port),
            broker_id,
            external=True,
            transport=transport,
            sasl_mechanism=sasl_mechanism,
            partitions=partitions,
            replicas=replicas,
        )
        fixture.wirebroker = handle

        def get_topic_names() -> list[str]:
            params = fixture._enrich_client_params({}, client_id="sasl_shim_list")
            with KafkaAdminClient(**params) as admin:
                return list(admin.list_topics())

        def close() -> None:
            handle.stop()

        fixture.get_topic_names = get_topic_names
        fixture.close = close
        return fixture

    kafka_fixture.instance = classmethod(instance)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    _install()
