"""FindCoordinator (API key 10): serves v0-6.

Requests
    v0        `key` is a group id (no key type).
    v1-3      `key` + `key_type`; one answer at the top level (error_code, error_message,
              node_id, host, port).
    v4-6      `key_type` + batched `coordinator_keys`; one `coordinators` entry per key, in
              request order (duplicates answered twice, as Kafka).

Per key
    key_type 0 (group)      the live leader of the group's `__consumer_offsets` partition
                            (abs(Java hashCode(key)) % its partition count,
                            `GroupCoordinatorRuntime.partition_for`) as `Services.leader_of`
                            gives it (node id, advertised host and port; a single broker is the
                            leader of every partition), error NONE; COORDINATOR_NOT_AVAILABLE
                            when that partition has no live leader (Kafka's getCoordinator). The
                            first such request creates `__consumer_offsets`
                            (`GroupCoordinatorRuntime.find_coordinator`); Kafka answers that one
                            with COORDINATOR_NOT_AVAILABLE while its controller creates the
                            topic; wirebroker waits (up to 2 s, `TopicAdmin.wait_settled`) until
                            the new partitions have leaders, so the answer is final at once
                            (a single broker elects itself within a few checkpoints), and
                            COORDINATOR_NOT_AVAILABLE only when that takes longer.
                            COORDINATOR_NOT_AVAILABLE too while this broker's coordinator is not
                            active (not started, shut down) or the topic cannot be created. The
                            answer does not wait for the coordinator to load the partition: the
                            group APIs answer COORDINATOR_LOAD_IN_PROGRESS meanwhile. The
                            empty group id is a valid key (Kafka hashes it to partition 0; the
                            group APIs then answer INVALID_GROUP_ID where Kafka does).
    key_type 1 (transaction) the same for a transactional id and `__transaction_state`
                            (`TxnCoordinatorRuntime.ensure_topic` creates it on the first
                            request; `partition_for` picks the partition). No transaction
                            coordinator: COORDINATOR_NOT_AVAILABLE. The empty id is hashed like
                            any other (the transactional APIs answer INVALID_REQUEST for it).
    key_type 2 (share)      (v6 only) the key "groupId:topicId:partition" of a share partition
                            (`wirebroker.share_coordinator.keys`): the leader of its
                            `__share_group_state` partition, created on the first request
                            (`ShareCoordinatorRuntime.ensure_topic`); a malformed key, a
                            version below 6 or no share coordinator: INVALID_REQUEST (Kafka's
                            answers).
    any other key type      INVALID_REQUEST for every key (Kafka fails the whole request).

Errors answer node_id -1, host "", port -1. error_message (v1-3) is Kafka's text of the error,
"NONE" on success (Kafka sends `Errors.NONE.message()`); v4+ per-key entries carry an empty
message (success and errors alike, Kafka's answer) except for the whole-request
INVALID_REQUEST, which has Kafka's text. Skipped: authorization
(GROUP_AUTHORIZATION_FAILED), throttling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.group.runtime import OFFSETS_TOPIC
from wirebroker.handlers import _authz
from wirebroker.handlers.registry import handler
from wirebroker.security.acls import AclOperation, ResourceType
from wirebroker.share_coordinator.config import SHARE_STATE_TOPIC
from wirebroker.share_coordinator.keys import parse_coordinator_key
from wirebroker.txn.runtime import TXN_TOPIC

if TYPE_CHECKING:
    from protocol.messages.find_coordinator import (
        Coordinator,
        FindCoordinatorRequest,
        FindCoordinatorResponse,
    )
    from wirebroker.handlers.context import RequestContext

__all__ = ["KEY_TYPE_GROUP", "KEY_TYPE_SHARE", "KEY_TYPE_TRANSACTION", "handle"]

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2
_BATCHED_VERSION = 4
_SHARE_VERSION = 6

#: Kafka's `Errors.X.message()` for the errors this handler returns.
_MESSAGES = {
    ErrorCode.NONE: "NONE",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    ErrorCode.INVALID_REQUEST: (
        "This most likely occurs because of a request being malformed by the client library "
        "or the message was sent to an incompatible broker. See the broker logs for more "
        "details."
    ),
}


_NO_NODE = (-1, "", -1)
#: How long a request waits for the leaders of a `__consumer_offsets` being created.
_CREATE_WAIT_S = 2.0


def _never_led(ctx: RequestContext, topic: str, partition: int) -> bool:
    """The partition is not known yet or never had a leader (a new topic), as opposed to
    having lost its leader."""
    view = ctx.services.cluster.partition(topic, partition)
    return view is None or view.leader_epoch < 0


def _coordinator_partition(
    ctx: RequestContext, key_type: int, key: str
) -> tuple[ErrorCode, str, int]:
    """The error so far, the coordinator's topic and the key's partition there."""
    if key_type == KEY_TYPE_SHARE:
        share = ctx.services.share_coordinator
        spk = parse_coordinator_key(key)
        if share is None or spk is None:
            return ErrorCode.INVALID_REQUEST, SHARE_STATE_TOPIC, -1
        return share.ensure_topic(), SHARE_STATE_TOPIC, share.partition_for(spk)
    if key_type == KEY_TYPE_TRANSACTION:
        txn = ctx.services.txn_coordinator
        if txn is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, TXN_TOPIC, -1
        return txn.ensure_topic(), TXN_TOPIC, txn.partition_for(key)
    coordinator = ctx.services.group_coordinator
    if coordinator is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, OFFSETS_TOPIC, -1
    return coordinator.find_coordinator(key), OFFSETS_TOPIC, coordinator.partition_for(key)


async def _lookup(
    ctx: RequestContext, key_type: int, key: str
) -> tuple[ErrorCode, tuple[int, str, int]]:
    """The error for one key (INVALID_REQUEST for an unknown key type, and for share keys
    before v6) and the coordinator's (node id, host, port); -1, "", -1 with an error."""
    if key_type not in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE):
        return ErrorCode.INVALID_REQUEST, _NO_NODE
    if key_type == KEY_TYPE_SHARE:
        if ctx.api_version < _SHARE_VERSION:
            return ErrorCode.INVALID_REQUEST, _NO_NODE
        if not _authz.cluster(ctx, AclOperation.CLUSTER_ACTION):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _NO_NODE
    else:
        rtype = ResourceType.GROUP if key_type == KEY_TYPE_GROUP else ResourceType.TRANSACTIONAL_ID
        if not _authz.allowed(ctx, rtype, key):  # DESCRIBE
            return _authz.denied_code(rtype), _NO_NODE
    error, topic, partition = _coordinator_partition(ctx, key_type, key)
    if error is not ErrorCode.NONE:
        return error, _NO_NODE
    node = ctx.services.cluster.leader(topic, partition)
    if node is None and _never_led(ctx, topic, partition):
        # Being created (by this request or another): wait for its leaders, briefly.
        await ctx.services.admin.wait_settled([topic], _CREATE_WAIT_S)
        node = ctx.services.cluster.leader(topic, partition)
    address = None if node is None else ctx.address(node)
    if node is None or address is None:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, _NO_NODE
    return ErrorCode.NONE, (node.node_id, address[0], address[1])


@handler(ApiKey.FIND_COORDINATOR)
async def handle(ctx: RequestContext, req: FindCoordinatorRequest) -> FindCoordinatorResponse:
    version = ctx.api_version
    key_type = int(req.get("key_type", KEY_TYPE_GROUP) or 0) if version >= 1 else KEY_TYPE_GROUP
    valid_type = key_type in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE)
    if version >= _BATCHED_VERSION:
        coordinators: list[Coordinator] = []
        for key in list(req.get("coordinator_keys") or []):
            error, (node_id, host, port) = await _lookup(ctx, key_type, key)
            coordinators.append(
                {
                    "key": key,
                    "node_id": node_id,
                    "host": host,
                    "port": port,
                    "error_code": int(error),
                    "error_message": "" if valid_type else _MESSAGES[error],
                }
            )
        return {"throttle_time_ms": 0, "coordinators": coordinators}
    key = str(req.get("key") or "")
    error, (node_id, host, port) = await _lookup(ctx, key_type, key)
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "error_message": _MESSAGES.get(error, error.name),
        "node_id": node_id,
        "host": host,
        "port": port,
    }
