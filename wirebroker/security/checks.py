"""What each API asks of the authorizer: (api, resource type) -> operation, as Kafka 4.4's
KafkaApis and AuthHelper ask it (read for semantics; the table is ours).

    CHECKS[(ApiKey.PRODUCE, ResourceType.TOPIC)]      -> AclOperation.WRITE
    operation(ApiKey.FETCH, ResourceType.CLUSTER)     -> CLUSTER_ACTION (a follower's fetch)

A handler asks `wirebroker.handlers._authz` (`allowed(ctx, TOPIC, name)`, `cluster(ctx)`,
...), which looks the operation up here by the request's API key, so each handler says only
*which* resources it touches and *how it answers* a refusal (Kafka answers some per partition,
some per resource, some for the whole request: the handlers' docstrings). Error codes by
resource type are `DENIED` (TOPIC_AUTHORIZATION_FAILED, GROUP_, TRANSACTIONAL_ID_, CLUSTER_).

Where Kafka asks more than one operation of one resource type in one API (Metadata: DESCRIBE
a topic, CREATE it or the cluster to auto-create it; CreateTopics: CREATE, then
DESCRIBE_CONFIGS for the configs it answers), the handler names the operation; the table
holds the main one. Pure: no trio, no I/O.
"""

from __future__ import annotations

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.security.acls import AclOperation, ResourceType

__all__ = ["CHECKS", "DENIED", "operation"]

_A = ApiKey
_R = ResourceType
_O = AclOperation

CHECKS: dict[tuple[ApiKey, ResourceType], AclOperation] = {
    # data path
    (_A.PRODUCE, _R.TOPIC): _O.WRITE,
    (_A.PRODUCE, _R.TRANSACTIONAL_ID): _O.WRITE,
    (_A.FETCH, _R.TOPIC): _O.READ,
    (_A.FETCH, _R.CLUSTER): _O.CLUSTER_ACTION,  # a follower's fetch
    (_A.LIST_OFFSETS, _R.TOPIC): _O.DESCRIBE,
    (_A.OFFSET_FOR_LEADER_EPOCH, _R.TOPIC): _O.DESCRIBE,
    (_A.OFFSET_FOR_LEADER_EPOCH, _R.CLUSTER): _O.CLUSTER_ACTION,  # a follower's ask
    (_A.DELETE_RECORDS, _R.TOPIC): _O.DELETE,
    (_A.DESCRIBE_PRODUCERS, _R.TOPIC): _O.READ,
    # metadata and topic administration
    (_A.METADATA, _R.TOPIC): _O.DESCRIBE,
    (_A.METADATA, _R.CLUSTER): _O.CREATE,  # auto-creation (or CREATE on the topic)
    (_A.DESCRIBE_TOPIC_PARTITIONS, _R.TOPIC): _O.DESCRIBE,
    (_A.CREATE_TOPICS, _R.CLUSTER): _O.CREATE,
    (_A.CREATE_TOPICS, _R.TOPIC): _O.CREATE,
    (_A.DELETE_TOPICS, _R.TOPIC): _O.DELETE,
    (_A.DELETE_TOPICS, _R.CLUSTER): _O.DELETE,  # KRaft's controller: any topic
    (_A.CREATE_PARTITIONS, _R.TOPIC): _O.ALTER,
    (_A.DESCRIBE_CONFIGS, _R.TOPIC): _O.DESCRIBE_CONFIGS,
    (_A.DESCRIBE_CONFIGS, _R.CLUSTER): _O.DESCRIBE_CONFIGS,  # BROKER, BROKER_LOGGER
    (_A.ALTER_CONFIGS, _R.TOPIC): _O.ALTER_CONFIGS,
    (_A.ALTER_CONFIGS, _R.CLUSTER): _O.ALTER_CONFIGS,
    (_A.INCREMENTAL_ALTER_CONFIGS, _R.TOPIC): _O.ALTER_CONFIGS,
    (_A.INCREMENTAL_ALTER_CONFIGS, _R.CLUSTER): _O.ALTER_CONFIGS,
    (_A.DESCRIBE_CLUSTER, _R.CLUSTER): _O.DESCRIBE,  # only for authorized operations
    (_A.DESCRIBE_LOG_DIRS, _R.CLUSTER): _O.DESCRIBE,
    (_A.ALTER_REPLICA_LOG_DIRS, _R.CLUSTER): _O.ALTER,
    (_A.ELECT_LEADERS, _R.CLUSTER): _O.ALTER,
    (_A.ALTER_PARTITION_REASSIGNMENTS, _R.CLUSTER): _O.ALTER,
    (_A.LIST_PARTITION_REASSIGNMENTS, _R.CLUSTER): _O.DESCRIBE,
    # groups
    (_A.FIND_COORDINATOR, _R.GROUP): _O.DESCRIBE,
    (_A.FIND_COORDINATOR, _R.TRANSACTIONAL_ID): _O.DESCRIBE,
    (_A.JOIN_GROUP, _R.GROUP): _O.READ,
    (_A.SYNC_GROUP, _R.GROUP): _O.READ,
    (_A.HEARTBEAT, _R.GROUP): _O.READ,
    (_A.LEAVE_GROUP, _R.GROUP): _O.READ,
    (_A.OFFSET_COMMIT, _R.GROUP): _O.READ,
    (_A.OFFSET_COMMIT, _R.TOPIC): _O.READ,
    (_A.OFFSET_FETCH, _R.GROUP): _O.DESCRIBE,
    (_A.OFFSET_FETCH, _R.TOPIC): _O.DESCRIBE,
    (_A.DESCRIBE_GROUPS, _R.GROUP): _O.DESCRIBE,
    (_A.CONSUMER_GROUP_HEARTBEAT, _R.GROUP): _O.READ,
    (_A.CONSUMER_GROUP_DESCRIBE, _R.GROUP): _O.DESCRIBE,
    (_A.LIST_GROUPS, _R.GROUP): _O.DESCRIBE,
    (_A.LIST_GROUPS, _R.CLUSTER): _O.DESCRIBE,  # every group at once
    (_A.DELETE_GROUPS, _R.GROUP): _O.DELETE,
    (_A.OFFSET_DELETE, _R.GROUP): _O.DELETE,
    (_A.OFFSET_DELETE, _R.TOPIC): _O.READ,
    # transactions and idempotence
    (_A.INIT_PRODUCER_ID, _R.TRANSACTIONAL_ID): _O.WRITE,
    (_A.INIT_PRODUCER_ID, _R.CLUSTER): _O.IDEMPOTENT_WRITE,  # or WRITE on some topic
    (_A.INIT_PRODUCER_ID, _R.TOPIC): _O.WRITE,  # KIP-679, by resource type
    (_A.ADD_PARTITIONS_TO_TXN, _R.TRANSACTIONAL_ID): _O.WRITE,
    (_A.ADD_PARTITIONS_TO_TXN, _R.TOPIC): _O.WRITE,
    (_A.ADD_PARTITIONS_TO_TXN, _R.CLUSTER): _O.CLUSTER_ACTION,  # a broker's verify_only batch
    (_A.ADD_OFFSETS_TO_TXN, _R.TRANSACTIONAL_ID): _O.WRITE,
    (_A.ADD_OFFSETS_TO_TXN, _R.GROUP): _O.READ,
    (_A.END_TXN, _R.TRANSACTIONAL_ID): _O.WRITE,
    (_A.TXN_OFFSET_COMMIT, _R.TRANSACTIONAL_ID): _O.WRITE,
    (_A.TXN_OFFSET_COMMIT, _R.GROUP): _O.READ,
    (_A.TXN_OFFSET_COMMIT, _R.TOPIC): _O.READ,
    (_A.WRITE_TXN_MARKERS, _R.CLUSTER): _O.CLUSTER_ACTION,
    (_A.DESCRIBE_TRANSACTIONS, _R.TRANSACTIONAL_ID): _O.DESCRIBE,
    (_A.DESCRIBE_TRANSACTIONS, _R.TOPIC): _O.DESCRIBE,
    (_A.LIST_TRANSACTIONS, _R.TRANSACTIONAL_ID): _O.DESCRIBE,
    # security
    (_A.DESCRIBE_ACLS, _R.CLUSTER): _O.DESCRIBE,
    (_A.CREATE_ACLS, _R.CLUSTER): _O.ALTER,
    (_A.DELETE_ACLS, _R.CLUSTER): _O.ALTER,
    (_A.DESCRIBE_USER_SCRAM_CREDENTIALS, _R.CLUSTER): _O.DESCRIBE,
    (_A.ALTER_USER_SCRAM_CREDENTIALS, _R.CLUSTER): _O.ALTER,
    (_A.DESCRIBE_CLIENT_QUOTAS, _R.CLUSTER): _O.DESCRIBE_CONFIGS,
    (_A.ALTER_CLIENT_QUOTAS, _R.CLUSTER): _O.ALTER_CONFIGS,
}

#: The error Kafka answers when an operation on a resource of the type is denied.
DENIED: dict[ResourceType, ErrorCode] = {
    _R.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    _R.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    _R.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    _R.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


def operation(api_key: int, resource_type: ResourceType) -> AclOperation:
    """The operation `api_key` needs on a resource of the type; KeyError if it needs none."""
    return CHECKS[(ApiKey(api_key), resource_type)]
