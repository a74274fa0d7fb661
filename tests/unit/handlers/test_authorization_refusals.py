"""The handlers' refusals under an authorizer, through the real dispatcher: a principal no ACL
allows (User:ANONYMOUS, an `AclAuthorizer` without ACLs, so everything is denied) gets
Kafka's error where Kafka answers it (per partition, per resource, at the top), before the
handler touches any other service (the stub services have none). The APIs the integration
and oracle tests do not reach: the inter-broker ones, the cluster administration, SCRAM,
the ACL APIs themselves, the transaction APIs."""

from __future__ import annotations

from typing import Any

import pytest

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from tests.unit.net.netwire import stub_services
from wirebroker.handlers.dispatcher import Dispatcher
from wirebroker.handlers.registry import load_handlers
from wirebroker.security.authorizer import AclAuthorizer

CLUSTER = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
GROUP = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC = ErrorCode.TOPIC_AUTHORIZATION_FAILED


async def ask(api: ApiKey, version: int, body: dict[str, Any]) -> Any:
    services = stub_services()
    services.authorizer = AclAuthorizer()  # no ACLs, no super users: everything denied
    dispatcher = Dispatcher(services, load_handlers())
    frame = encode_request(api, version, 7, "authz", body)[4:]
    reply = await dispatcher.dispatch(frame, "198.51.100.7", "198.51.100.7:4000")
    assert not reply.close and reply.response is not None
    _correlation, answer = decode_response(api, version, reply.response[4:])
    return answer


async def test_write_txn_markers_needs_cluster_action() -> None:
    marker = {
        "producer_id": 5,
        "producer_epoch": 0,
        "transaction_result": True,
        "topics": [{"name": "t", "partition_indexes": [0, 1]}],
        "coordinator_epoch": 0,
    }
    answer = await ask(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [marker]})
    (partitions,) = [t.partitions for t in answer.markers[0].topics]
    assert [p.error_code for p in partitions] == [CLUSTER, CLUSTER]


async def test_cluster_administration_needs_alter_or_describe_on_the_cluster() -> None:
    elect = await ask(
        ApiKey.ELECT_LEADERS,
        2,
        {
            "election_type": 0,
            "topic_partitions": [{"topic": "t", "partitions": [0]}],
            "timeout_ms": 1000,
        },
    )
    assert elect.error_code == CLUSTER
    assert [p.error_code for p in elect.replica_election_results[0].partition_result] == [CLUSTER]
    moved = await ask(
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        0,
        {
            "timeout_ms": 1000,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1]}]}],
        },
    )
    assert (moved.error_code, moved.responses[0].partitions[0].error_code) == (CLUSTER, CLUSTER)
    listed = await ask(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout_ms": 1000, "topics": None})
    assert (listed.error_code, listed.topics) == (CLUSTER, [])
    dirs = await ask(ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": None})
    assert (dirs.error_code, dirs.results) == (CLUSTER, [])


async def test_scram_credentials_need_describe_or_alter_on_the_cluster() -> None:
    described = await ask(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": [{"name": "alice"}]})
    assert described.error_code == CLUSTER
    assert [(r.user, r.error_code) for r in described.results] == [("alice", CLUSTER)]
    altered = await ask(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        0,
        {"deletions": [{"name": "bob", "mechanism": 1}], "upsertions": []},
    )
    assert [(r.user, r.error_code) for r in altered.results] == [("bob", CLUSTER)]


@pytest.mark.parametrize("version", [1, 3])
async def test_the_acl_apis_need_alter_or_describe_on_the_cluster(version: int) -> None:
    acl_filter = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    described = await ask(ApiKey.DESCRIBE_ACLS, version, acl_filter)
    assert (described.error_code, described.resources) == (CLUSTER, [])
    creation = {
        "resource_type": 2,
        "resource_name": "t",
        "resource_pattern_type": 3,
        "principal": "User:x",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    created = await ask(ApiKey.CREATE_ACLS, version, {"creations": [creation, creation]})
    assert [r.error_code for r in created.results] == [CLUSTER, CLUSTER]
    deleted = await ask(ApiKey.DELETE_ACLS, version, {"filters": [acl_filter]})
    assert [r.error_code for r in deleted.filter_results] == [CLUSTER]


async def test_transactions_need_write_on_the_transactional_id() -> None:
    init = await ask(
        ApiKey.INIT_PRODUCER_ID,
        4,
        {
            "transactional_id": "tx",
            "transaction_timeout_ms": 1000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    assert (init.error_code, init.producer_id) == (TXN, -1)
    idempotent = await ask(
        ApiKey.INIT_PRODUCER_ID,
        4,
        {
            "transactional_id": None,
            "transaction_timeout_ms": 1000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    assert idempotent.error_code == CLUSTER  # no IDEMPOTENT_WRITE, no WRITE on any topic
    ids = {"transactional_id": "tx", "producer_id": 5, "producer_epoch": 0}
    ended = await ask(ApiKey.END_TXN, 3, {**ids, "committed": True})
    assert ended.error_code == TXN
    offsets = await ask(ApiKey.ADD_OFFSETS_TO_TXN, 3, {**ids, "group_id": "g"})
    assert offsets.error_code == TXN
    added = await ask(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        3,
        {
            "v3_and_below_transactional_id": "tx",
            "v3_and_below_producer_id": 5,
            "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": "t", "partitions": [0, 1]}],
        },
    )
    (topic,) = added.results_by_topic_v3_and_below
    assert [p.partition_error_code for p in topic.results_by_partition] == [TXN, TXN]
    commit = await ask(
        ApiKey.TXN_OFFSET_COMMIT,
        3,
        {
            **ids,
            "group_id": "g",
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 1,
                            "committed_leader_epoch": -1,
                            "committed_metadata": None,
                        }
                    ],
                }
            ],
        },
    )
    assert [p.error_code for p in commit.topics[0].partitions] == [TXN]
    described = await ask(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ["tx"]})
    assert [s.error_code for s in described.transaction_states] == [TXN]


async def test_brokers_batched_add_partitions_needs_cluster_action() -> None:
    answer = await ask(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        4,
        {
            "transactions": [
                {
                    "transactional_id": "tx",
                    "producer_id": 5,
                    "producer_epoch": 0,
                    "verify_only": True,
                    "topics": [{"name": "t", "partitions": [0]}],
                }
            ]
        },
    )
    assert (answer.error_code, answer.results_by_transaction) == (CLUSTER, [])
