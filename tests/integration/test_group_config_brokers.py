"""Group configs (the GROUP config resource, type 32) on running brokers: a cluster of three
real `Broker`s over the in-memory ZooKeeper (`_memory_cluster.py`) sees a change made through
another broker; a single broker keeps them over a restart; confluent-kafka's AdminClient and
Kafka's own `kafka-configs --entity-type groups` change and describe them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
from _memory_cluster import Cluster, eventually, start_cluster

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.cluster import zk_layout as zl
from wirebroker.testing import running

GROUP = 32
SET, DELETE = 0, 1
SESSION = "consumer.session.timeout.ms"


@pytest.fixture
async def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Cluster]:
    async with trio.open_nursery() as nursery:
        c = await start_cluster(nursery, tmp_path, monkeypatch=monkeypatch)
        yield c
        await c.stop_all()
        nursery.cancel_scope.cancel()


def incremental(group: str, ops: list[tuple[str, int, str | None]]) -> dict[str, Any]:
    return {
        "resources": [
            {
                "resource_type": GROUP,
                "resource_name": group,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
        ],
        "validate_only": False,
    }


def describe(group: str, keys: list[str] | None = None) -> dict[str, Any]:
    return {
        "resources": [{"resource_type": GROUP, "resource_name": group, "configuration_keys": keys}],
        "include_synonyms": True,
    }


def overrides(resp: Any) -> dict[str, tuple[str, int]]:
    return {
        c.name: (c.value, c.config_source) for c in resp.results[0].configs if c.config_source == 8
    }


async def test_a_change_through_one_broker_is_seen_by_every_broker(cluster: Cluster) -> None:
    heard: list[tuple[int, str, dict[str, str]]] = []
    for node in cluster.nodes:
        node_id = node.node_id
        node.broker.services.group_configs.add_listener(
            lambda group, configs, n=node_id: heard.append((n, group, dict(configs)))
        )
    resp = await cluster.request(
        1, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental("g1", [(SESSION, SET, "50000")])
    )
    assert resp.responses[0].error_code == ErrorCode.NONE, resp.responses[0].error_message
    # broker 1 answers once it applied the change: described there at once
    resp = await cluster.request(1, ApiKey.DESCRIBE_CONFIGS, 4, describe("g1"))
    assert overrides(resp) == {SESSION: ("50000", 8)}
    await eventually(
        lambda: all(
            n.broker.services.group_configs.get("g1") == {SESSION: "50000"} for n in cluster.nodes
        ),
        "every broker mirrored the group's configs",
    )
    assert sorted(n for n, _g, _c in heard) == [0, 1, 2]
    resp = await cluster.request(2, ApiKey.DESCRIBE_CONFIGS, 4, describe("g1", [SESSION]))
    (entry,) = resp.results[0].configs
    assert [(s.name, s.value, s.source) for s in entry.synonyms] == [
        (SESSION, "50000", 8),
        ("group.consumer.session.timeout.ms", "45000", 5),
    ]
    data = await cluster.zk_get("/config/groups/g1")
    assert zl.decode_group_config("/config/groups/g1", data) == {SESSION: "50000"}
    # refused where Kafka refuses, nothing written
    resp = await cluster.request(
        0, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental("g1", [(SESSION, SET, "1")])
    )
    assert (resp.responses[0].error_code, resp.responses[0].error_message) == (
        ErrorCode.INVALID_CONFIG,
        "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
    )
    resp = await cluster.request(
        0, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, incremental("g1", [(SESSION, DELETE, None)])
    )
    assert resp.responses[0].error_code == ErrorCode.NONE
    await eventually(
        lambda: all(n.broker.services.group_configs.get("g1") == {} for n in cluster.nodes),
        "every broker mirrored the deletion",
    )


def test_a_single_broker_keeps_them_over_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for attempt in range(2):
        with running(data_dir=data) as broker, Wire(broker.bootstrap) as wire:
            if attempt == 0:
                resp = wire.call(
                    ApiKey.INCREMENTAL_ALTER_CONFIGS,
                    1,
                    incremental(
                        "g/1",
                        [(SESSION, SET, "50000"), ("share.isolation.level", SET, "read_committed")],
                    ),
                )
                assert resp.responses[0].error_code == ErrorCode.NONE
            resp = wire.call(ApiKey.DESCRIBE_CONFIGS, 4, describe("g/1"))
            assert overrides(resp) == {
                SESSION: ("50000", 8),
                "share.isolation.level": ("read_committed", 8),
            }, attempt


def test_confluent_admin_client(kafka_bootstrap: str) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})

    def alter(value: str) -> None:
        entry = ConfigEntry(SESSION, value, incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ResourceType.GROUP, "ck-group", incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)

    alter("50000")
    (future,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, "ck-group")]).values()
    configs = future.result(timeout=30)
    assert len(configs) == 21
    session = configs[SESSION]
    assert (session.value, int(session.source), session.is_read_only) == ("50000", 8, False)
    assert [(s.name, s.value, int(s.source)) for s in session.synonyms.values()] == [
        (SESSION, "50000", 8),
        ("group.consumer.session.timeout.ms", "45000", 5),
    ]
    with pytest.raises(KafkaException) as info:
        alter("1")
    error = info.value.args[0]
    assert (error.code(), error.str()) == (
        40,
        "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
    )


def test_kafka_configs_alters_describes_and_deletes_them(kafka_bootstrap: str) -> None:
    """Kafka's own kafka-configs --entity-type groups (three JVM runs, about 6 s each)."""
    from compat.oracle.kafka import run_tool

    def configs(*args: str) -> str:
        done = run_tool(
            "org.apache.kafka.tools.ConfigCommand",
            [
                "--bootstrap-server",
                kafka_bootstrap,
                "--entity-type",
                "groups",
                "--entity-name",
                "tg",
                *args,
            ],
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "Completed updating config for group tg." in configs(
        "--alter", "--add-config", f"{SESSION}=50000"
    )
    assert configs("--describe") == (
        "Dynamic configs for group tg are:\n"
        "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
        "consumer.session.timeout.ms=50000, "
        "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}\n"
    )
    assert "Completed updating config for group tg." in configs(
        "--alter", "--delete-config", SESSION
    )
