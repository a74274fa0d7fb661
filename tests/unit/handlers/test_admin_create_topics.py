"""CreateTopics handler: every error path, validate_only, defaults and the v5+/v7 fields."""

from __future__ import annotations

import uuid

import pytest

import wirebroker.handlers.create_topics  # noqa: F401  (registers the handler)
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.config import ConfigSource

KEY = ApiKey.CREATE_TOPICS
ZERO = uuid.UUID(int=0)


def topic(name, partitions=1, rf=-1, configs=None, assignments=None):
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
        "assignments": [
            {"partition_index": i, "broker_ids": b} for i, b in (assignments or {}).items()
        ],
    }


async def create(call, *topics, version=7, validate_only=False):
    resp = await call(
        KEY, version, {"topics": list(topics), "timeout_ms": 1000, "validate_only": validate_only}
    )
    return {t.name: t for t in resp.topics}, resp


async def test_create_success_v7_reports_id_partitions_and_configs(call, services):
    by_name, _ = await create(call, topic("orders", 3, 1, {"retention.ms": "1000"}))
    r = by_name["orders"]
    assert r.error_code == ErrorCode.NONE
    assert r.error_message is None
    info = services.cluster.topic("orders")
    assert info is not None and info.partitions == 3
    assert r.topic_id == info.topic_id != ZERO
    assert r.num_partitions == 3 and r.replication_factor == 1
    configs = {c.name: c for c in r.configs}
    assert configs["retention.ms"].value == "1000"
    assert configs["retention.ms"].config_source == ConfigSource.TOPIC_CONFIG
    assert configs["segment.bytes"].config_source == ConfigSource.DEFAULT_CONFIG
    assert configs["segment.bytes"].value == "1073741824"
    assert not configs["retention.ms"].read_only and not configs["retention.ms"].is_sensitive
    assert [c.name for c in r.configs] == sorted(configs)
    assert len(services.replicas.partitions_of("orders")) == 3
    assert services.logs.get("orders", 2) is not None


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6, 7])
async def test_every_version_creates(call, services, version):
    by_name, _ = await create(call, topic(f"t{version}", 2), version=version)
    assert by_name[f"t{version}"].error_code == ErrorCode.NONE
    assert services.cluster.topic(f"t{version}").partitions == 2


async def test_defaults_come_from_broker_config(make_services, call_with):
    services = make_services(**{"num.partitions": "4", "log.segment.bytes": "2000000"})
    resp = await call_with(services, KEY, 7, {"topics": [topic("d", -1, -1)]})
    r = resp.topics[0]
    assert r.error_code == ErrorCode.NONE
    assert r.num_partitions == 4 and r.replication_factor == 1
    seg = next(c for c in r.configs if c.name == "segment.bytes")
    assert seg.value == "2000000"
    assert seg.config_source == ConfigSource.STATIC_BROKER_CONFIG
    assert services.cluster.topic("d").partitions == 4


async def test_validate_only_creates_nothing(call, services):
    by_name, _ = await create(
        call, topic("v", 2, 1, {"cleanup.policy": "compact"}), validate_only=True
    )
    r = by_name["v"]
    assert r.error_code == ErrorCode.NONE
    assert r.num_partitions == 2
    assert {c.name: c.value for c in r.configs}["cleanup.policy"] == "compact"
    assert services.cluster.topic("v") is None
    assert services.logs.get("v", 0) is None
    # ... and errors are still reported in validate-only mode
    by_name, _ = await create(call, topic("v", 2, 3), validate_only=True)
    assert by_name["v"].error_code == ErrorCode.INVALID_REPLICATION_FACTOR


async def test_already_exists(call):
    await create(call, topic("dup"))
    by_name, _ = await create(call, topic("dup"))
    assert by_name["dup"].error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert by_name["dup"].error_message == "Topic 'dup' already exists."
    assert by_name["dup"].topic_id == ZERO
    assert by_name["dup"].num_partitions == -1


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "bad name", "x/y"])
async def test_invalid_topic_name(call, services, name):
    by_name, _ = await create(call, topic(name))
    assert by_name[name].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert by_name[name].error_message
    assert services.cluster.topic(name) is None


async def test_colliding_name(call):
    await create(call, topic("a.b"))
    by_name, _ = await create(call, topic("a_b"))
    assert by_name["a_b"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert by_name["a_b"].error_message == "Topic 'a_b' collides with existing topic: a.b"


@pytest.mark.parametrize("partitions", [0, -2, -100])
async def test_invalid_partitions(call, partitions):
    by_name, _ = await create(call, topic("p", partitions))
    assert by_name["p"].error_code == ErrorCode.INVALID_PARTITIONS
    assert by_name["p"].error_message == (
        "Number of partitions was set to an invalid non-positive value."
    )


@pytest.mark.parametrize("rf", [0, -2])
async def test_invalid_replication_factor_value(call, rf):
    by_name, _ = await create(call, topic("r", 1, rf))
    assert by_name["r"].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "larger than 0" in by_name["r"].error_message


async def test_replication_factor_above_broker_count(call, services):
    by_name, _ = await create(call, topic("r3", 1, 3))
    assert by_name["r3"].error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert by_name["r3"].error_message == (
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
        "cannot be reached because only 1 broker(s) are registered or some brokers have all "
        "their log directories cordoned."
    )
    assert services.cluster.topic("r3") is None


async def test_duplicate_topic_in_one_request(call, services):
    by_name, resp = await create(call, topic("x"), topic("ok"), topic("x"))
    assert by_name["x"].error_code == ErrorCode.INVALID_REQUEST
    assert by_name["x"].error_message == "Duplicate topic name."
    assert by_name["ok"].error_code == ErrorCode.NONE
    assert [t.name for t in resp.topics] == ["ok", "x"]
    assert services.cluster.topic("x") is None


async def test_cluster_metadata_topic_refused(call):
    by_name, _ = await create(call, topic("__cluster_metadata"))
    assert by_name["__cluster_metadata"].error_code == ErrorCode.INVALID_REQUEST


async def test_unknown_config(call, services):
    by_name, _ = await create(call, topic("c", configs={"no.such.config": "1"}))
    assert by_name["c"].error_code == ErrorCode.INVALID_CONFIG
    assert by_name["c"].error_message == "Unknown topic config name: no.such.config"
    assert services.cluster.topic("c") is None


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("retention.ms", "abc", "Not a number of type LONG"),
        ("retention.ms", "-5", "Value must be at least -1"),
        ("preallocate", "maybe", "Expected value to be either true or false"),
        ("cleanup.policy", "shred", "String must be one of"),
        ("message.timestamp.type", "Now", "String must be one of"),
    ],
)
async def test_bad_config_value_names_the_key(call, key, value, reason):
    by_name, _ = await create(call, topic("c", configs={key: value}))
    r = by_name["c"]
    assert r.error_code == ErrorCode.INVALID_CONFIG
    assert r.error_message.startswith(f"Invalid value {value} for configuration {key}: ")
    assert reason in r.error_message


async def test_null_config_value(call):
    by_name, _ = await create(call, topic("c", configs={"retention.ms": None}))
    assert by_name["c"].error_code == ErrorCode.INVALID_CONFIG
    assert by_name["c"].error_message == (
        "Null value not supported for topic configs: retention.ms"
    )


async def test_conflicting_compaction_lags(call):
    by_name, _ = await create(
        call, topic("c", configs={"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    )
    assert by_name["c"].error_code == ErrorCode.INVALID_CONFIG
    assert "min.compaction.lag.ms (10) > max.compaction.lag.ms (5)" in by_name["c"].error_message


async def test_manual_assignments(call, services):
    by_name, _ = await create(call, topic("m", -1, -1, assignments={0: [0], 1: [0]}))
    r = by_name["m"]
    assert r.error_code == ErrorCode.NONE, r.error_message
    assert r.num_partitions == 2 and r.replication_factor == 1
    assert services.cluster.topic("m").partitions == 2


@pytest.mark.parametrize(
    ("partitions", "rf", "fragment"),
    [
        (2, -1, "numPartitions was not set to -1"),
        (-1, 1, "replication factor was not set to -1"),
    ],
)
async def test_assignments_need_minus_one(call, partitions, rf, fragment):
    by_name, _ = await create(call, topic("m", partitions, rf, assignments={0: [0]}))
    assert by_name["m"].error_code == ErrorCode.INVALID_REQUEST
    assert fragment in by_name["m"].error_message


@pytest.mark.parametrize(
    ("assignments", "fragment"),
    [
        ({0: []}, "empty replica list"),
        ({0: [5]}, "includes broker 5, but no such broker is registered"),
        ({0: [0, 0]}, "includes the broker 0 more than once"),
        ({1: [0]}, "consecutive 0-based"),
        ({0: [0], 2: [0]}, "consecutive 0-based"),
    ],
)
async def test_bad_assignments(call, services, assignments, fragment):
    by_name, _ = await create(call, topic("m", -1, -1, assignments=assignments))
    assert by_name["m"].error_code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    assert fragment in by_name["m"].error_message
    assert services.cluster.topic("m") is None


async def test_repeated_partition_in_assignments(call):
    body = topic("m", -1, -1)
    body["assignments"] = [
        {"partition_index": 0, "broker_ids": [0]},
        {"partition_index": 0, "broker_ids": [0]},
    ]
    by_name, _ = await create(call, body)
    assert by_name["m"].error_code == ErrorCode.INVALID_REPLICATION_ASSIGNMENT
    assert "multiple manual partition assignments for partition 0" in by_name["m"].error_message


async def test_v4_response_has_no_configs_but_creates(call, services):
    resp = await call(KEY, 4, {"topics": [topic("old", 2)]}, raw=True)
    assert resp["topics"][0]["error_code"] == ErrorCode.NONE
    assert services.cluster.topic("old").partitions == 2


async def test_huge_partition_count_is_refused_without_creating(call, services):
    by_name, _ = await create(call, topic("huge", 2**31 - 1))
    assert by_name["huge"].error_code == ErrorCode.POLICY_VIOLATION
    assert services.cluster.topic("huge") is None
    assert services.logs.all_logs() == {}
