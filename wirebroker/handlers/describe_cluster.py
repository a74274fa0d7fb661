"""DescribeCluster (key 60), versions 0-2.

Answers as a Kafka 4.x broker endpoint (KafkaApis.handleDescribeCluster +
AuthHelper.computeDescribeClusterResponse):

    brokers                  the live brokers of `services.cluster`: node id, host, port,
                             rack (a single broker: itself, rack null)
    controller_id            the ZooKeeper-elected controller (a single broker: itself)
    endpoint_type (v1+)      1 (BROKER). A request for CONTROLLER (2) endpoints gets
                             MISMATCHED_ENDPOINT_TYPE "The request was sent to an endpoint of
                             type BROKER, but we wanted an endpoint of type CONTROLLER"; any
                             other type UNSUPPORTED_ENDPOINT_TYPE "Unsupported endpoint type
                             N" (v0 would answer INVALID_REQUEST, but v0 cannot ask).
    cluster_authorized_operations
                             -2147483648 unless requested; when requested, every operation
                             Kafka defines on the CLUSTER resource (no authorizer: all are
                             allowed): CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
                             DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.

`include_fenced_brokers` (v2) changes nothing: registered brokers are never fenced.
Skipped: throttling (throttle_time_ms 0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.handlers import _authz
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import ResourceType
from wirebroker.security.authorizer import CLUSTER_NAME

if TYPE_CHECKING:
    from protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse

ENDPOINT_BROKER = 1
ENDPOINT_CONTROLLER = 2
_ENDPOINT_NAMES = {ENDPOINT_BROKER: "BROKER", ENDPOINT_CONTROLLER: "CONTROLLER"}
AUTHORIZED_OPERATIONS_OMITTED = -2147483648

# AclOperation codes Kafka supports on the CLUSTER resource.
_CLUSTER_OPERATIONS = (5, 7, 8, 9, 10, 11, 12)
CLUSTER_AUTHORIZED_OPERATIONS = sum(1 << op for op in _CLUSTER_OPERATIONS)


@handler(ApiKey.DESCRIBE_CLUSTER)
async def handle(ctx: RequestContext, req: DescribeClusterRequest) -> DescribeClusterResponse:
    services = ctx.services
    requested = int(req.get("endpoint_type", ENDPOINT_BROKER))
    if requested not in _ENDPOINT_NAMES:
        return {
            "throttle_time_ms": 0,
            "error_code": (
                ErrorCode.INVALID_REQUEST
                if ctx.api_version == 0
                else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            ),
            "error_message": f"Unsupported endpoint type {requested}",
            "endpoint_type": ENDPOINT_BROKER,
            "cluster_id": "",
            "controller_id": -1,
            "brokers": [],
        }
    if requested != ENDPOINT_BROKER:
        return {
            "throttle_time_ms": 0,
            "error_code": (
                ErrorCode.INVALID_REQUEST
                if ctx.api_version == 0
                else ErrorCode.MISMATCHED_ENDPOINT_TYPE
            ),
            "error_message": "The request was sent to an endpoint of type BROKER, but we "
            f"wanted an endpoint of type {_ENDPOINT_NAMES[requested]}",
            "endpoint_type": ENDPOINT_BROKER,
            "cluster_id": "",
            "controller_id": -1,
            "brokers": [],
        }
    operations = AUTHORIZED_OPERATIONS_OMITTED
    if req["include_cluster_authorized_operations"]:  # 0 unless it may DESCRIBE the cluster
        operations = 0
        if _authz.cluster(ctx):
            operations = _authz.operations_bits(
                ctx, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_AUTHORIZED_OPERATIONS
            )
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "endpoint_type": ENDPOINT_BROKER,
        "cluster_id": services.cluster_id,
        "controller_id": services.cluster.controller_id(),
        "brokers": [
            {
                "broker_id": b.node_id,
                "host": host,
                "port": port,
                "rack": b.rack,
                "is_fenced": False,
            }
            for b, host, port in ctx.brokers()
        ],
        "cluster_authorized_operations": operations,
    }
