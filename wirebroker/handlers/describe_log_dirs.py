"""DescribeLogDirs (key 35), versions 1-5.

One result per configured log dir (Kafka 4.x ReplicaManager.describeLogDirs):

    error_code      0; KAFKA_STORAGE_ERROR when the directory cannot be examined (statvfs
                    fails: missing or unreadable), with no topics
    log_dir         the absolute path (not resolved through symlinks, as Kafka's
                    toAbsolutePath)
    topics          [{name, partitions: [{partition_index, partition_size (bytes of every
                    segment and index), offset_lag 0, is_future_key false}]}] for the
                    partitions in that dir; a topic with no selected partition is left out
    total_bytes,    (v4+) the file system's size and the space available to this process,
    usable_bytes    from os.statvfs
    is_cordoned     (v5) always false: wirebroker does not cordon log dirs

`topics` null selects every partition; otherwise only the listed (topic, partition) pairs,
unknown ones silently omitted. Top-level `error_code` (v3+) is 0.

Skipped: authorization, future replicas (no AlterReplicaLogDirs), throttling.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.describe_log_dirs import (
        DescribableLogDirTopic,
        DescribeLogDirsPartition,
        DescribeLogDirsRequest,
        DescribeLogDirsResponse,
        DescribeLogDirsResult,
        DescribeLogDirsTopic,
    )


def _configured_dirs(ctx: RequestContext) -> list[str]:
    seen: dict[str, None] = {}
    for d in ctx.services.config.log_dirs:
        seen.setdefault(os.path.abspath(os.path.expanduser(d)), None)
    return list(seen)


def _selected(
    ctx: RequestContext, topics: Iterable[DescribableLogDirTopic] | None
) -> set[tuple[str, int]]:
    logs = ctx.services.logs.all_logs()
    if topics is None:
        return set(logs)
    wanted = {(t["topic"], int(p)) for t in topics for p in (t["partitions"] or [])}
    return wanted & set(logs)


def _space(directory: str) -> tuple[int, int]:
    st = os.statvfs(directory)
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


@handler(ApiKey.DESCRIBE_LOG_DIRS)
async def handle(ctx: RequestContext, req: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not _authz.cluster(ctx):  # DESCRIBE
        denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "error_code": denied, "results": []}
    logs_service = ctx.services.logs
    all_logs = logs_service.all_logs()
    selected = _selected(ctx, req["topics"])
    by_dir: dict[str, dict[str, list[DescribeLogDirsPartition]]] = {}
    for topic, index in sorted(selected):
        directory = os.path.abspath(Path(logs_service.log_dir_of(topic, index)))
        by_dir.setdefault(directory, {}).setdefault(topic, []).append(
            {
                "partition_index": index,
                "partition_size": all_logs[(topic, index)].size_in_bytes(),
                "offset_lag": 0,
                "is_future_key": False,
            }
        )
    results: list[DescribeLogDirsResult] = []
    for directory in _configured_dirs(ctx):
        try:
            total, usable = _space(directory)
        except OSError:
            results.append(
                {
                    "error_code": ErrorCode.KAFKA_STORAGE_ERROR,
                    "log_dir": directory,
                    "topics": [],
                    "total_bytes": -1,
                    "usable_bytes": -1,
                }
            )
            continue
        topics: list[DescribeLogDirsTopic] = [
            {"name": name, "partitions": parts} for name, parts in by_dir.get(directory, {}).items()
        ]
        results.append(
            {
                "error_code": ErrorCode.NONE,
                "log_dir": directory,
                "topics": topics,
                "total_bytes": total,
                "usable_bytes": usable,
                "is_cordoned": False,
            }
        )
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": results}
