"""AlterReplicaLogDirs (key 34), versions 1-2.

Moves partition replicas between the broker's log dirs. wirebroker does not move data between
log dirs, so only moves that need no data movement succeed. Per partition, in this order:

    path is not one of log.dirs (compared as absolute paths)    LOG_DIR_NOT_FOUND
    the partition is not hosted here (unknown topic/partition)  NONE: Kafka only remembers the
                                                                 dir for a replica created
                                                                 later; wirebroker places new
                                                                 replicas itself, so this is
                                                                 accepted and has no effect
    the replica already lives in `path`                         NONE (nothing to do)
    the replica lives in another log dir                        KAFKA_STORAGE_ERROR: moving a
                                                                 replica is not implemented
                                                                 (Kafka copies it to a future
                                                                 replica and swaps)

Results are grouped by topic in request order. Skipped: authorization, throttling.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler

if TYPE_CHECKING:
    from protocol.messages.alter_replica_log_dirs import (
        AlterReplicaLogDirPartitionResult,
        AlterReplicaLogDirsRequest,
        AlterReplicaLogDirsResponse,
    )


def _abs(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.path.expanduser(path))


@handler(ApiKey.ALTER_REPLICA_LOG_DIRS)
async def handle(
    ctx: RequestContext, req: AlterReplicaLogDirsRequest
) -> AlterReplicaLogDirsResponse:
    dirs = {_abs(d) for d in ctx.services.config.log_dirs}
    logs = ctx.services.logs
    hosted = logs.all_logs()
    results: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
    allowed = _authz.cluster(ctx)  # ALTER
    for entry in req["dirs"]:
        target = _abs(entry["path"])
        for topic in entry["topics"]:
            out = results.setdefault(topic["name"], [])
            for index in topic["partitions"]:
                key = (topic["name"], index)
                if not allowed:
                    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                elif target not in dirs:
                    code = ErrorCode.LOG_DIR_NOT_FOUND
                elif key in hosted and _abs(logs.log_dir_of(*key)) != target:
                    code = ErrorCode.KAFKA_STORAGE_ERROR  # would need a move
                else:
                    code = ErrorCode.NONE  # already there, or not hosted here
                out.append({"partition_index": index, "error_code": code})
    return {
        "throttle_time_ms": 0,
        "results": [{"topic_name": name, "partitions": parts} for name, parts in results.items()],
    }
