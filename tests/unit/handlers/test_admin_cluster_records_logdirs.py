"""DescribeCluster, DeleteRecords and DescribeLogDirs handlers."""

from __future__ import annotations

import os

import pytest

import wirebroker.handlers.delete_records
import wirebroker.handlers.describe_cluster
import wirebroker.handlers.describe_log_dirs  # noqa: F401  (register the handlers)
from protocol.api import ApiKey
from protocol.errors import ErrorCode

CLUSTER = ApiKey.DESCRIBE_CLUSTER
DELETE_RECORDS = ApiKey.DELETE_RECORDS
LOG_DIRS = ApiKey.DESCRIBE_LOG_DIRS


# -- DescribeCluster ---------------------------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2])
async def test_describe_cluster(call, services, version):
    resp = await call(CLUSTER, version, {"include_cluster_authorized_operations": False})
    assert resp.error_code == ErrorCode.NONE
    assert resp.cluster_id == services.cluster_id
    assert resp.controller_id == 0
    assert [(b.broker_id, b.host, b.port, b.rack) for b in resp.brokers] == [
        (0, "127.0.0.1", 9092, None)
    ]
    assert resp.cluster_authorized_operations == -2147483648
    if version >= 1:
        assert resp.endpoint_type == 1
    if version >= 2:
        assert resp.brokers[0].is_fenced is False


async def test_describe_cluster_authorized_operations(call):
    resp = await call(CLUSTER, 1, {"include_cluster_authorized_operations": True})
    ops = {bit for bit in range(32) if resp.cluster_authorized_operations & (1 << bit)}
    assert ops == {5, 7, 8, 9, 10, 11, 12}


async def test_describe_cluster_endpoint_types(call):
    resp = await call(CLUSTER, 1, {"endpoint_type": 2})
    assert resp.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    assert "we wanted an endpoint of type CONTROLLER" in resp.error_message
    resp = await call(CLUSTER, 2, {"endpoint_type": 9})
    assert resp.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    assert resp.error_message == "Unsupported endpoint type 9"


# -- DeleteRecords -----------------------------------------------------------------------------
@pytest.fixture
def topic(services, produce):
    services.admin.create_topic("dr", 2, 1, {}, now_ms=services.clock())
    for _ in range(5):
        produce(services, "dr", 0, n=2)  # offsets 0..9
    return "dr"


async def delete_records(call, topic, partitions, version=2):
    resp = await call(
        DELETE_RECORDS,
        version,
        {
            "topics": [
                {
                    "name": topic,
                    "partitions": [{"partition_index": i, "offset": o} for i, o in partitions],
                }
            ],
            "timeout_ms": 1000,
        },
    )
    (t,) = resp.topics
    return {p.partition_index: (p.error_code, p.low_watermark) for p in t.partitions}


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_delete_records_moves_log_start_offset(call, services, topic, version):
    result = await delete_records(call, topic, [(0, 4)], version)
    assert result == {0: (ErrorCode.NONE, 4)}
    part = services.replicas.partition("dr", 0)
    assert part.log_start_offset == 4
    assert part.log_end_offset == 10


async def test_delete_records_minus_one_is_high_watermark(call, services, topic):
    result = await delete_records(call, topic, [(0, -1), (1, -1)])
    assert result == {0: (ErrorCode.NONE, 10), 1: (ErrorCode.NONE, 0)}
    assert services.replicas.partition("dr", 0).log_start_offset == 10


async def test_delete_records_never_moves_back(call, services, topic):
    await delete_records(call, topic, [(0, 6)])
    assert await delete_records(call, topic, [(0, 2)]) == {0: (ErrorCode.NONE, 6)}
    assert services.replicas.partition("dr", 0).log_start_offset == 6


@pytest.mark.parametrize("offset", [11, 1000, -2])
async def test_delete_records_out_of_range(call, services, topic, offset):
    result = await delete_records(call, topic, [(0, offset)])
    assert result == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert services.replicas.partition("dr", 0).log_start_offset == 0


async def test_delete_records_unknown(call, topic):
    assert await delete_records(call, "nope", [(0, 1)]) == {
        0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    }
    assert await delete_records(call, topic, [(7, 1)]) == {
        7: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)
    }


async def test_delete_records_internal_and_compacted(call, services):
    services.admin.create_topic("__consumer_offsets", 1, 1, {}, now_ms=services.clock())
    services.admin.create_topic(
        "compacted", 1, 1, {"cleanup.policy": "compact"}, now_ms=services.clock()
    )
    assert await delete_records(call, "__consumer_offsets", [(0, 0)]) == {
        0: (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)
    }
    assert await delete_records(call, "compacted", [(0, 0)]) == {
        0: (ErrorCode.POLICY_VIOLATION, -1)
    }


# -- DescribeLogDirs ---------------------------------------------------------------------------
async def describe_dirs(call, topics=None, version=4):
    resp = await call(LOG_DIRS, version, {"topics": topics})
    return resp


def sizes(result):
    return {
        (t.name, p.partition_index): p.partition_size for t in result.topics for p in t.partitions
    }


async def test_describe_log_dirs_all(call, services, produce):
    services.admin.create_topic("ld", 2, 1, {}, now_ms=services.clock())
    resp = await describe_dirs(call)
    assert resp.error_code == ErrorCode.NONE
    (result,) = resp.results
    assert result.error_code == ErrorCode.NONE
    assert result.log_dir == os.path.abspath(services.config.log_dirs[0])
    assert os.path.isabs(result.log_dir)
    before = sizes(result)
    assert set(before) == {("ld", 0), ("ld", 1)}
    assert all(
        p.offset_lag == 0 and p.is_future_key is False for t in result.topics for p in t.partitions
    )
    assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
    produce(services, "ld", 1, n=3, value=b"x" * 100)
    after = sizes((await describe_dirs(call)).results[0])
    assert after[("ld", 1)] > before[("ld", 1)] + 300
    assert after[("ld", 0)] == before[("ld", 0)]


async def test_describe_log_dirs_selected(call, services):
    services.admin.create_topic("a", 2, 1, {}, now_ms=services.clock())
    services.admin.create_topic("b", 1, 1, {}, now_ms=services.clock())
    resp = await describe_dirs(
        call, [{"topic": "a", "partitions": [1, 9]}, {"topic": "zz", "partitions": [0]}]
    )
    assert set(sizes(resp.results[0])) == {("a", 1)}
    resp = await describe_dirs(call, [])
    assert resp.results[0].topics == []


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5])
async def test_describe_log_dirs_versions(call, services, version):
    services.admin.create_topic("v", 1, 1, {}, now_ms=services.clock())
    resp = await describe_dirs(call, None, version)
    assert set(sizes(resp.results[0])) == {("v", 0)}


async def test_describe_log_dirs_several_dirs(make_services, call_with, tmp_path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    services = make_services(**{"log.dirs": ",".join(str(d) for d in dirs)})
    services.admin.create_topic("multi", 4, 1, {}, now_ms=services.clock())
    resp = await call_with(services, LOG_DIRS, 4, {"topics": None})
    assert [r.log_dir for r in resp.results] == [str(d) for d in dirs]
    found = set()
    for r in resp.results:
        for key in sizes(r):
            assert os.path.abspath(services.logs.log_dir_of(*key)) == r.log_dir
            found.add(key)
    assert found == {("multi", i) for i in range(4)}
