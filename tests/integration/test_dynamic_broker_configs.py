"""Dynamic broker configs on running brokers: a cluster of three real `Broker`s over the
in-memory ZooKeeper (`_memory_cluster.py`) takes the cluster-wide default on every broker and a
per-broker config on that broker only, live (the partitions' log configs change without a
restart); a single broker keeps them over a restart; Kafka's own `kafka-configs` tool changes
them (ConfigCommand, compat/oracle)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
from _memory_cluster import Cluster, eventually, start_cluster, wait_roles

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.cluster import zk_layout as zl
from wirebroker.testing import running

TOPIC = "dyn"
BROKER = 4
SET, DELETE = 0, 1


@pytest.fixture
async def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Cluster]:
    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path, monkeypatch=monkeypatch)
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()


def incremental(name: str, ops: list[tuple[str, int, str | None]]) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": BROKER,
                "resource_name": name,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
        ],
        "validate_only": False,
    }


def retention(cluster: Cluster, node: int) -> set[int]:
    """retention.ms of broker `node`'s replicas of TOPIC."""
    broker = cluster.nodes[node].broker
    return {p.log.config.retention_ms for p in broker.replicas.partitions_of(TOPIC)}


async def test_the_default_on_every_broker_a_broker_config_on_its_broker(cluster: Cluster) -> None:
    assert await cluster.create_topic(0, TOPIC, 3, 3) == 0
    await wait_roles(cluster, TOPIC, 3)
    resp = await cluster.request(
        1, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental("", [("log.retention.ms", SET, "5000")])
    )
    assert resp.responses[0].error_code == ErrorCode.NONE, resp.responses[0].error_message
    await eventually(
        lambda: all(retention(cluster, n) == {5000} for n in range(3)), "the default everywhere"
    )
    resp = await cluster.request(
        2,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        incremental("2", [("log.retention.ms", SET, "7000")]),
    )
    assert resp.responses[0].error_code == ErrorCode.NONE, resp.responses[0].error_message
    # broker 2 answers once it applied its own: no wait needed there
    assert retention(cluster, 2) == {7000}
    assert (retention(cluster, 0), retention(cluster, 1)) == ({5000}, {5000})
    # another broker's id is refused there, as Kafka does
    resp = await cluster.request(
        0, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental("2", [("log.retention.ms", SET, "1")])
    )
    assert resp.responses[0].error_code == ErrorCode.INVALID_REQUEST
    # in ZooKeeper where Kafka's ZooKeeper mode kept them
    assert zl.decode_broker_config(
        "<default>", await cluster.zk_get("/config/brokers/<default>")
    ) == {"log.retention.ms": "5000"}
    assert zl.decode_broker_config("2", await cluster.zk_get("/config/brokers/2")) == {
        "log.retention.ms": "7000"
    }
    # described with the per-broker, then the default level
    resp = await cluster.request(
        2,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": BROKER,
                    "resource_name": "2",
                    "configuration_keys": ["log.retention.ms"],
                }
            ],
            "include_synonyms": True,
        },
    )
    (entry,) = resp.results[0].configs
    assert [(s.value, s.source) for s in entry.synonyms] == [("7000", 2), ("5000", 3), ("168", 5)]
    resp = await cluster.request(
        0,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        incremental("", [("log.retention.ms", DELETE, None)]),
    )
    assert resp.responses[0].error_code == ErrorCode.NONE
    await eventually(lambda: retention(cluster, 0) == {604800000}, "the default removed")
    assert retention(cluster, 2) == {7000}


def test_a_single_broker_keeps_them_over_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for attempt in range(2):
        with running(data_dir=data) as broker, Wire(broker.bootstrap) as wire:
            if attempt == 0:
                resp = wire.call(
                    ApiKey.INCREMENTAL_ALTER_CONFIGS,
                    1,
                    incremental("0", [("message.max.bytes", SET, "2000")]),
                )
                assert resp.responses[0].error_code == ErrorCode.NONE
                resp = wire.call(
                    ApiKey.INCREMENTAL_ALTER_CONFIGS,
                    1,
                    incremental("", [("log.retention.ms", SET, "9000")]),
                )
                assert resp.responses[0].error_code == ErrorCode.NONE
            resp = wire.call(
                ApiKey.DESCRIBE_CONFIGS,
                4,
                {
                    "resources": [
                        {
                            "resource_type": BROKER,
                            "resource_name": "0",
                            "configuration_keys": ["message.max.bytes", "log.retention.ms"],
                        }
                    ],
                    "include_synonyms": False,
                },
            )
            got = {c.name: (c.value, c.config_source) for c in resp.results[0].configs}
            assert got == {"message.max.bytes": ("2000", 2), "log.retention.ms": ("9000", 3)}, (
                attempt
            )


def test_kafka_configs_alters_and_describes_them(kafka_bootstrap: str) -> None:
    """Kafka's own kafka-configs (three JVM runs, about 6 s each)."""
    from compat.oracle.kafka import run_tool

    def configs(*args: str) -> str:
        done = run_tool(
            "org.apache.kafka.tools.ConfigCommand",
            ["--bootstrap-server", kafka_bootstrap, "--entity-type", "brokers", *args],
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    add = ("--alter", "--add-config")
    assert "Completed updating config for broker 0" in configs(
        "--entity-name", "0", *add, "log.cleaner.backoff.ms=20000"
    )
    assert "Completed updating default config for brokers in the cluster" in configs(
        "--entity-default", *add, "log.retention.ms=100000000"
    )
    described = configs("--entity-name", "0", "--describe", "--all")
    assert (
        "log.cleaner.backoff.ms=20000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.cleaner.backoff.ms=20000, DEFAULT_CONFIG:log.cleaner.backoff.ms=15000}"
    ) in described
    assert (
        "log.retention.ms=100000000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
        "log.retention.ms=100000000, DEFAULT_CONFIG:log.retention.hours=168}"
    ) in described


def test_max_connections_per_ip_applies_to_the_next_connection(tmp_path: Path) -> None:
    """A connection quota set at run time: the next connection over it is closed at accept
    (the one already open stays), and removing it lets connections in again."""
    versions = {"client_software_name": "t", "client_software_version": "1"}

    def answers(bootstrap: str) -> bool:
        try:
            with Wire(bootstrap, timeout=5) as other:
                return other.call(ApiKey.API_VERSIONS, 3, versions).error_code == 0
        except (OSError, ConnectionError):
            return False

    with running(data_dir=tmp_path / "data") as broker, Wire(broker.bootstrap) as wire:
        resp = wire.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            incremental("0", [("max.connections.per.ip", SET, "1")]),
        )
        assert resp.responses[0].error_code == ErrorCode.NONE
        assert not answers(broker.bootstrap)  # `wire` holds the one connection allowed
        assert wire.call(ApiKey.API_VERSIONS, 3, versions).error_code == 0
        resp = wire.call(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            incremental("0", [("max.connections.per.ip", DELETE, None)]),
        )
        assert resp.responses[0].error_code == ErrorCode.NONE
        assert answers(broker.bootstrap)
