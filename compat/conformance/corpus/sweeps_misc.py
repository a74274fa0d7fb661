"""Every version of the remaining APIs: ApiVersions, SASL, ACLs, quotas, SCRAM, quorum,
features, the listings (run last, as phase 2, when every other scenario has finished) and
the simple-consumer offset APIs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    DATA,
    batch,
    create,
    drop_empty_groups,
    produce_now,
    step,
    topic_id,
)
from compat.conformance.script import Ctx, Item, Scenario

Body = Callable[[Ctx], dict[str, Any]]

LISTING_PHASE = 2


def api_versions(versions: list[int]) -> Scenario:
    items: list[Item] = [
        step(
            f"ApiVersions.v{v}",
            API.API_VERSIONS,
            v,
            {"client_software_name": "conformance", "client_software_version": "1.0"},
            "what the broker serves (v3+: with the client's name and features)",
        )
        for v in versions
    ]
    return Scenario("sweep ApiVersions", tuple(items))


def sasl(handshake: list[int], authenticate: list[int]) -> Scenario:
    items: list[Item] = []
    for v in handshake:
        items.append(
            step(
                f"SaslHandshake.v{v}",
                API.SASL_HANDSHAKE,
                v,
                {"mechanism": "PLAIN"},
                "PLAIN on a PLAINTEXT listener",
            )
        )
    for v in authenticate:
        items.append(
            step(
                f"SaslAuthenticate.v{v}",
                API.SASL_AUTHENTICATE,
                v,
                {"auth_bytes": b"\0user\0secret"},
                "PLAIN credentials without a handshake, on a PLAINTEXT listener",
            )
        )
    return Scenario("sweep SASL", tuple(items))


_ANY_ACL = {
    "resource_type_filter": 1,
    "resource_name_filter": None,
    "pattern_type_filter": 1,
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,
    "permission_type": 1,
}


def acls(describe: list[int], create_: list[int], delete: list[int]) -> Scenario:
    items: list[Item] = []
    for v in describe:
        items.append(
            step(f"DescribeAcls.v{v}", API.DESCRIBE_ACLS, v, _ANY_ACL, "every ACL (no authorizer)")
        )
    for v in create_:
        items.append(
            step(
                f"CreateAcls.v{v}",
                API.CREATE_ACLS,
                v,
                lambda ctx: {
                    "creations": [
                        {
                            "resource_type": 2,
                            "resource_name": ctx.name("acl-topic"),
                            "resource_pattern_type": 3,
                            "principal": "User:conformance",
                            "host": "*",
                            "operation": 3,
                            "permission_type": 3,
                        }
                    ]
                },
                "allow User:conformance to read a topic (no authorizer)",
            )
        )
    for v in delete:
        items.append(
            step(
                f"DeleteAcls.v{v}",
                API.DELETE_ACLS,
                v,
                lambda ctx: {
                    "filters": [{**_ANY_ACL, "resource_name_filter": ctx.name("acl-topic")}]
                },
                "delete the ACLs of a topic (no authorizer)",
            )
        )
    return Scenario("sweep ACLs", tuple(items))


def quotas(describe: list[int], alter: list[int]) -> Scenario:
    items: list[Item] = []
    for v in describe:
        items.append(
            step(
                f"DescribeClientQuotas.v{v}",
                API.DESCRIBE_CLIENT_QUOTAS,
                v,
                lambda ctx: {
                    "components": [
                        {
                            "entity_type": "client-id",
                            "match_type": 0,
                            "match": ctx.name("quota-client"),
                        }
                    ],
                    "strict": False,
                },
                "quotas of one client id (none set)",
            )
        )
    for v in alter:
        items.append(
            step(
                f"AlterClientQuotas.v{v}",
                API.ALTER_CLIENT_QUOTAS,
                v,
                lambda ctx: {
                    "entries": [
                        {
                            "entity": [
                                {
                                    "entity_type": "client-id",
                                    "entity_name": ctx.name("quota-client"),
                                }
                            ],
                            "ops": [
                                {"key": "producer_byte_rate", "value": 1024.0, "remove": False}
                            ],
                        }
                    ],
                    "validate_only": True,
                },
                "validate a producer byte rate for one client id",
            )
        )
    return Scenario("sweep client quotas", tuple(items))


def scram(describe: list[int], alter: list[int]) -> Scenario:
    items: list[Item] = []
    for v in describe:
        items.append(
            step(
                f"DescribeUserScramCredentials.v{v}",
                API.DESCRIBE_USER_SCRAM_CREDENTIALS,
                v,
                lambda ctx: {"users": [{"name": ctx.name("scram-user")}]},
                "credentials of a user that has none",
            )
        )
    for v in alter:
        items.append(
            step(
                f"AlterUserScramCredentials.v{v}",
                API.ALTER_USER_SCRAM_CREDENTIALS,
                v,
                lambda ctx: {
                    "deletions": [{"name": ctx.name("scram-user"), "mechanism": 1}],
                    "upsertions": [],
                },
                "delete a credential that does not exist",
            )
        )
    return Scenario("sweep SCRAM", tuple(items))


def quorum_and_features(quorum: list[int], features: list[int]) -> Scenario:
    items: list[Item] = []
    for v in quorum:
        items.append(
            step(
                f"DescribeQuorum.v{v}",
                API.DESCRIBE_QUORUM,
                v,
                {
                    "topics": [
                        {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
                    ]
                },
                "the KRaft metadata quorum",
            )
        )
    for v in features:
        items.append(
            step(
                f"UpdateFeatures.v{v}",
                API.UPDATE_FEATURES,
                v,
                {
                    "timeout_ms": 10000,
                    "feature_updates": [
                        {
                            "feature": "conformance.unknown",
                            "max_version_level": 1,
                            "allow_downgrade": False,
                            "upgrade_type": 1,
                        }
                    ],
                    "validate_only": True,
                },
                "an unknown feature (validate only where the version can say so)",
            )
        )
    return Scenario("sweep quorum and features", tuple(items))


def find_coordinator(versions: list[int]) -> Scenario:
    items: list[Item] = []
    for v in versions:
        items.append(
            step(
                f"FindCoordinator.v{v}",
                API.FIND_COORDINATOR,
                v,
                lambda ctx: {
                    "key": ctx.name("sw-coordinator"),
                    "key_type": 0,
                    "coordinator_keys": [ctx.name("sw-coordinator")],
                },
                "a group's coordinator",
            )
        )
    return Scenario("sweep FindCoordinator", tuple(items))


OFFSETS_TOPIC, OFFSETS_GROUP = "sw-offsets", "sw-offsets-group"


def simple_commit(v: int, group: str = OFFSETS_GROUP, offset: int | None = None) -> Body:
    """OffsetCommit as a simple consumer (no membership) of partition 0 of the offsets topic."""

    def body(ctx: Ctx) -> dict[str, Any]:
        partition = {
            "partition_index": 0,
            "committed_offset": v if offset is None else offset,
            "committed_leader_epoch": -1,
            "commit_timestamp": -1,
            "committed_metadata": f"m{v}",
        }
        topic = {
            "name": ctx.name(OFFSETS_TOPIC),
            "topic_id": topic_id(ctx, OFFSETS_TOPIC),
            "partitions": [partition],
        }
        return {
            "group_id": ctx.name(group),
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "group_instance_id": None,
            "retention_time_ms": -1,
            "topics": [topic],
        }

    return body


def _offset_fetch(ctx: Ctx) -> dict[str, Any]:
    parts = {
        "name": ctx.name(OFFSETS_TOPIC),
        "topic_id": topic_id(ctx, OFFSETS_TOPIC),
        "partition_indexes": [0, 1],
    }
    group = {
        "group_id": ctx.name(OFFSETS_GROUP),
        "member_id": None,
        "member_epoch": -1,
        "topics": [parts],
    }
    return {
        "group_id": ctx.name(OFFSETS_GROUP),
        "topics": [parts],
        "groups": [group],
        "require_stable": True,
    }


def _offset_delete(ctx: Ctx) -> dict[str, Any]:
    partitions = [{"partition_index": 0}, {"partition_index": 1}]
    return {
        "group_id": ctx.name(OFFSETS_GROUP),
        "topics": [{"name": ctx.name(OFFSETS_TOPIC), "partitions": partitions}],
    }


def _delete_group_steps(v: int) -> list[Item]:
    name = f"sw-deletegroups-v{v}"
    return [
        step(
            f"DeleteGroups.v{v}.commit",
            API.OFFSET_COMMIT,
            9,
            simple_commit(v, name, 1),
            "a simple consumer's commit makes the group",
        ),
        step(
            f"DeleteGroups.v{v}",
            API.DELETE_GROUPS,
            v,
            lambda ctx: {"groups_names": [ctx.name(name)]},
            "delete an empty group that has offsets",
        ),
    ]


def offsets(
    commit: list[int], fetch: list[int], delete_groups: list[int], offset_delete: list[int]
) -> Scenario:
    """A simple consumer's offsets (no membership): commit, fetch, delete offsets and groups."""
    items: list[Item] = [create(OFFSETS_TOPIC, 2, DATA), produce_now(OFFSETS_TOPIC, 0, batch(20))]
    items += [
        step(
            f"OffsetCommit.v{v}",
            API.OFFSET_COMMIT,
            v,
            simple_commit(v),
            "commit offset (version) as a simple consumer",
        )
        for v in commit
    ]
    items += [
        step(
            f"OffsetFetch.v{v}",
            API.OFFSET_FETCH,
            v,
            _offset_fetch,
            "partition 0 (committed) and 1 (never)",
        )
        for v in fetch
    ]
    items += [
        step(
            f"OffsetDelete.v{v}",
            API.OFFSET_DELETE,
            v,
            _offset_delete,
            "delete the committed offsets of an empty group",
        )
        for v in offset_delete
    ]
    for v in delete_groups:
        items += _delete_group_steps(v)
    return Scenario("sweep offsets", tuple(items))


def listings(list_groups: list[int], list_txns: list[int], config_resources: list[int]) -> Scenario:
    """Listings of everything (run after every other scenario; foreign entries dropped),
    once the groups Kafka may have cleaned up by timer are gone on both sides."""
    items: list[Item] = [drop_empty_groups()]
    for v in list_groups:
        items.append(
            step(
                f"ListGroups.v{v}",
                API.LIST_GROUPS,
                v,
                {"states_filter": [], "types_filter": []},
                "every group",
                listing=True,
            )
        )
    for v in list_txns:
        items.append(
            step(
                f"ListTransactions.v{v}",
                API.LIST_TRANSACTIONS,
                v,
                lambda ctx: {
                    "state_filters": [],
                    "producer_id_filters": [],
                    "duration_filter": -1,
                    "transactional_id_pattern": ctx.side.names.token + ".*",
                },
                "every transaction (v2: this run's, by pattern)",
                listing=True,
            )
        )
    for v in config_resources:
        items.append(
            step(
                f"ListConfigResources.v{v}",
                API.LIST_CONFIG_RESOURCES,
                v,
                {"resource_types": []},
                "every config resource (v0: client metrics only)",
                listing=True,
            )
        )
    items.append(
        step(
            "Metadata.all_topics",
            API.METADATA,
            12,
            {
                "topics": None,
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
            "every topic",
            listing=True,
        )
    )
    return Scenario("listings", tuple(items), phase=LISTING_PHASE)
