"""ACLs enforced by the handlers, as Apache Kafka 4.4 with StandardAuthorizer answers: the same
requests to a Kafka of its own and to a wirebroker, both with `authorizer.class.name`,
super.users=User:admin and allow.everyone.if.no.acl.found=true (so that Kafka's own PLAINTEXT
traffic, User:ANONYMOUS, keeps working), and the same DENY ACLs for User:ANONYMOUS (made with
CreateAcls on each) on one topic, one group and one transactional id; the same assertions on
the answers of a denied Produce, Fetch, ListOffsets, Metadata (named, all topics), JoinGroup,
FindCoordinator, OffsetCommit, InitProducerId, DescribeConfigs, IncrementalAlterConfigs,
CreatePartitions, DeleteRecords, and DescribeAcls and DeleteTopics (allowed: no ACL on the
cluster, and Kafka 4.4's controller lets DELETE on the cluster delete any topic)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from _oracle_acls import ANONYMOUS

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.records import build_batch

TOPIC, GROUP, TXN_ID = 2, 3, 5
LITERAL, ALL, READ, WRITE, DENY = 3, 2, 3, 4, 2
NIL = uuid.UUID(int=0)


def call(bootstrap: str, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
    with Wire(bootstrap) as wire:
        return wire.call(api, version, body)


class Denied:
    """A broker with a topic (`open`), a denied topic (`shut`), group and transactional id."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        tag = uuid.uuid4().hex[:8]
        self.open, self.shut = f"open-{tag}", f"shut-{tag}"
        self.group, self.txn_id = f"g-{tag}", f"tx-{tag}"
        topics = [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            for name in (self.open, self.shut)
        ]
        created = self.call(
            ApiKey.CREATE_TOPICS, 5, {"topics": topics, "timeout_ms": 30000, "validate_only": False}
        )
        assert [t.error_code for t in created.topics] == [0, 0]
        denials = [(TOPIC, self.shut, ALL), (GROUP, self.group, READ), (TXN_ID, self.txn_id, WRITE)]
        creations = [
            {
                "resource_type": rtype,
                "resource_name": name,
                "resource_pattern_type": LITERAL,
                "principal": ANONYMOUS,
                "host": "*",
                "operation": op,
                "permission_type": DENY,
            }
            for rtype, name, op in denials
        ]
        answer = self.call(ApiKey.CREATE_ACLS, 3, {"creations": creations})
        assert [r.error_code for r in answer.results] == [0, 0, 0]
        self._until_denied()

    def _until_denied(self) -> None:
        """Kafka's broker applies ACLs a moment after its controller answered: until
        Metadata refuses the denied topic (30 s at most)."""
        body = {
            "topics": [{"topic_id": NIL, "name": self.shut}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        deadline = time.monotonic() + 30
        while self.call(ApiKey.METADATA, 12, body).topics[0].error_code != 29:
            assert time.monotonic() < deadline, "the ACLs never applied"
            time.sleep(0.05)

    def call(self, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
        return call(self.bootstrap, api, version, body)


@pytest.fixture(scope="module", params=["apache-kafka", "wirebroker"])
def denied(request: pytest.FixtureRequest) -> Denied:
    fixture = "kafka" if request.param == "apache-kafka" else "wirebroker"
    return Denied(str(request.getfixturevalue(f"{fixture}_with_authorizer")))


def test_produce_to_a_denied_topic(denied: Denied) -> None:
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": t, "partition_data": [{"index": 0, "records": build_batch([(b"k", b"v")])}]}
            for t in (denied.shut, denied.open)
        ],
    }
    answer = denied.call(ApiKey.PRODUCE, 9, body)
    by_topic = {t.name: t.partition_responses[0] for t in answer.responses}
    shut = by_topic[denied.shut]
    assert (shut.error_code, shut.base_offset, shut.log_start_offset, shut.error_message) == (
        29,
        -1,
        -1,
        None,
    )
    assert by_topic[denied.open].error_code == 0


def test_fetch_and_list_offsets_of_a_denied_topic(denied: Denied) -> None:
    fetch = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": denied.shut,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    answer = denied.call(ApiKey.FETCH, 12, fetch)
    assert answer.error_code == 0
    (p,) = answer.responses[0].partitions
    assert (p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset) == (
        29,
        -1,
        -1,
        -1,
    )
    assert (p.aborted_transactions, bytes(p.records or b"")) == ([], b"")
    offsets = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": denied.shut,
                "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}],
            }
        ],
    }
    (lp,) = denied.call(ApiKey.LIST_OFFSETS, 7, offsets).topics[0].partitions
    assert (lp.error_code, lp.timestamp, lp.offset) == (29, -1, -1)


def test_metadata_hides_a_denied_topic(denied: Denied) -> None:
    named = {
        "topics": [{"topic_id": NIL, "name": n} for n in (denied.shut, denied.open)],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    answer = denied.call(ApiKey.METADATA, 12, named)
    by_name = {t.name: t for t in answer.topics}
    shut = by_name[denied.shut]
    assert (shut.error_code, shut.topic_id, shut.is_internal, shut.partitions) == (
        29,
        NIL,
        False,
        [],
    )
    assert by_name[denied.open].error_code == 0
    every = {**named, "topics": None}
    names = {t.name for t in denied.call(ApiKey.METADATA, 12, every).topics}
    assert denied.open in names and denied.shut not in names


def test_join_group_find_coordinator_and_offset_commit_of_a_denied_group(denied: Denied) -> None:
    join = {
        "group_id": denied.group,
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 10000,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    j = denied.call(ApiKey.JOIN_GROUP, 5, join)
    assert (j.error_code, j.generation_id, j.protocol_name, j.leader, j.member_id, j.members) == (
        30,
        -1,
        "",
        "",
        "",
        [],
    )
    found = denied.call(ApiKey.FIND_COORDINATOR, 3, {"key": denied.group, "key_type": 0})
    assert (found.error_code, found.node_id, found.host, found.port) == (30, -1, "", -1)
    commit = {
        "group_id": denied.group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [
            {
                "name": denied.open,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 0,
                        "committed_leader_epoch": -1,
                        "committed_metadata": None,
                    }
                ],
            }
        ],
    }
    (cp,) = denied.call(ApiKey.OFFSET_COMMIT, 8, commit).topics[0].partitions
    assert cp.error_code == 30


def test_init_producer_id_with_a_denied_transactional_id(denied: Denied) -> None:
    body = {
        "transactional_id": denied.txn_id,
        "transaction_timeout_ms": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    answer = denied.call(ApiKey.INIT_PRODUCER_ID, 4, body)
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (53, -1, -1)
    idempotent = denied.call(ApiKey.INIT_PRODUCER_ID, 4, {**body, "transactional_id": None})
    # no ACL on the cluster, allow.everyone.if.no.acl.found: not refused (a fresh Kafka may
    # still answer COORDINATOR_LOAD_IN_PROGRESS while its producer id block loads)
    assert idempotent.error_code in (0, 14)


def test_the_acl_apis_are_allowed_without_cluster_acls(denied: Denied) -> None:
    every = {
        "resource_type_filter": 1,
        "resource_name_filter": denied.shut,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    answer = denied.call(ApiKey.DESCRIBE_ACLS, 3, every)
    assert answer.error_code == 0
    assert [(r.resource_name, [a.operation for a in r.acls]) for r in answer.resources] == [
        (denied.shut, [ALL])
    ]


def test_admin_requests_on_a_denied_topic(denied: Denied) -> None:
    configs = denied.call(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": 2, "resource_name": denied.shut, "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    (described,) = configs.results
    assert (described.error_code, described.error_message, described.configs) == (
        29,
        "Topic authorization failed.",
        [],
    )
    altered = denied.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": denied.shut,
                    "configs": [{"name": "retention.ms", "config_operation": 0, "value": "1"}],
                }
            ],
            "validate_only": True,
        },
    )
    (one,) = altered.responses
    assert (one.error_code, one.error_message) == (29, "Topic authorization failed.")
    grown = denied.call(
        ApiKey.CREATE_PARTITIONS,
        3,
        {
            "topics": [{"name": denied.shut, "count": 2, "assignments": None}],
            "timeout_ms": 5000,
            "validate_only": True,
        },
    )
    (result,) = grown.results
    assert (result.error_code, result.error_message) == (29, None)
    records = denied.call(
        ApiKey.DELETE_RECORDS,
        2,
        {
            "topics": [{"name": denied.shut, "partitions": [{"partition_index": 0, "offset": 0}]}],
            "timeout_ms": 5000,
        },
    )
    (rp,) = records.topics[0].partitions
    assert (rp.error_code, rp.low_watermark) == (29, -1)
    # last: Kafka 4.4's controller deletes any topic for a principal that may DELETE the
    # cluster (no ACL on it here: allow.everyone.if.no.acl.found), whatever the topic's ACLs
    deleted = denied.call(
        ApiKey.DELETE_TOPICS,
        6,
        {"topics": [{"name": denied.shut, "topic_id": NIL}], "timeout_ms": 5000},
    )
    (dt,) = deleted.responses
    assert (dt.name, dt.error_code, dt.error_message) == (denied.shut, 0, None)


def test_create_topics_hides_configs_it_may_not_describe(denied: Denied) -> None:
    name = f"nocfg-{uuid.uuid4().hex[:8]}"
    deny = {
        "resource_type": TOPIC,
        "resource_name": name,
        "resource_pattern_type": LITERAL,
        "principal": ANONYMOUS,
        "host": "*",
        "operation": 10,  # DESCRIBE_CONFIGS
        "permission_type": DENY,
    }
    assert [
        r.error_code for r in denied.call(ApiKey.CREATE_ACLS, 3, {"creations": [deny]}).results
    ] == [0]
    describe = {
        "resources": [{"resource_type": 2, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": False,
        "include_documentation": False,
    }
    deadline = time.monotonic() + 30  # until Kafka's broker applied the ACL
    while denied.call(ApiKey.DESCRIBE_CONFIGS, 4, describe).results[0].error_code != 29:
        assert time.monotonic() < deadline, "the ACL never applied"
        time.sleep(0.05)
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout_ms": 30000,
        "validate_only": False,
    }
    (created,) = denied.call(ApiKey.CREATE_TOPICS, 7, body).topics
    # created, but what it may not DESCRIBE_CONFIGS is not told
    assert (created.error_code, created.topic_config_error_code) == (0, 29)
    assert (created.num_partitions, created.replication_factor, created.configs) == (-1, -1, [])
    assert created.topic_id != NIL


def test_group_configs_of_a_denied_group(denied: Denied) -> None:
    """The GROUP config resource (type 32): DESCRIBE_CONFIGS / ALTER_CONFIGS on the group,
    refused on a group whose ACLs allow neither."""
    described = denied.call(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {"resource_type": 32, "resource_name": denied.group, "configuration_keys": None}
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    (result,) = described.results
    assert (result.error_code, result.error_message, result.configs) == (
        30,
        "Group authorization failed.",
        [],
    )
    session = {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "50000"}
    altered = denied.call(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {"resource_type": 32, "resource_name": denied.group, "configs": [session]}
            ],
            "validate_only": True,
        },
    )
    (one,) = altered.responses
    assert (one.error_code, one.error_message) == (30, "Group authorization failed.")
    # another group (no ACL: allow.everyone.if.no.acl.found) is described
    other = denied.call(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": f"{denied.group}-x",
                    "configuration_keys": None,
                }
            ],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    assert (other.results[0].error_code, len(other.results[0].configs)) == (0, 21)
