"""Every version of the remaining APIs: ApiVersions, SASL, ACLs, quotas, SCRAM, quorum,
features, the listings (run last, as phase 2, when every other scenario has finished) and
the simple-consumer offset APIs."""

from __future__ import annotations

import contextlib
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
    sweep_steps,
    sweep_steps_v,
    topic_id,
)
from compat.conformance.script import Ctx, Do, HarnessError, Item, Scenario

Body = Callable[[Ctx], dict[str, Any]]

LISTING_PHASE = 2


def api_versions(versions: list[int]) -> Scenario:
    items = sweep_steps(
        "ApiVersions",
        API.API_VERSIONS,
        versions,
        {"client_software_name": "conformance", "client_software_version": "1.0"},
        "what the broker serves (v3+: with the client's name and features)",
    )
    return Scenario("sweep ApiVersions", tuple(items))


def sasl(handshake: list[int], authenticate: list[int]) -> Scenario:
    items = sweep_steps(
        "SaslHandshake",
        API.SASL_HANDSHAKE,
        handshake,
        {"mechanism": "PLAIN"},
        "PLAIN on a PLAINTEXT listener",
    )
    items += sweep_steps(
        "SaslAuthenticate",
        API.SASL_AUTHENTICATE,
        authenticate,
        {"auth_bytes": b"\0user\0secret"},
        "PLAIN credentials without a handshake, on a PLAINTEXT listener",
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
    items = sweep_steps(
        "DescribeAcls", API.DESCRIBE_ACLS, describe, _ANY_ACL, "every ACL (no authorizer)"
    )
    items += sweep_steps(
        "CreateAcls",
        API.CREATE_ACLS,
        create_,
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
    items += sweep_steps(
        "DeleteAcls",
        API.DELETE_ACLS,
        delete,
        lambda ctx: {"filters": [{**_ANY_ACL, "resource_name_filter": ctx.name("acl-topic")}]},
        "delete the ACLs of a topic (no authorizer)",
    )
    return Scenario("sweep ACLs", tuple(items))


def quotas(describe: list[int], alter: list[int]) -> Scenario:
    items = sweep_steps(
        "DescribeClientQuotas",
        API.DESCRIBE_CLIENT_QUOTAS,
        describe,
        lambda ctx: {
            "components": [
                {"entity_type": "client-id", "match_type": 0, "match": ctx.name("quota-client")}
            ],
            "strict": False,
        },
        "quotas of one client id (none set)",
    )
    items += sweep_steps(
        "AlterClientQuotas",
        API.ALTER_CLIENT_QUOTAS,
        alter,
        lambda ctx: {
            "entries": [
                {
                    "entity": [
                        {"entity_type": "client-id", "entity_name": ctx.name("quota-client")}
                    ],
                    "ops": [{"key": "producer_byte_rate", "value": 1024.0, "remove": False}],
                }
            ],
            "validate_only": True,
        },
        "validate a producer byte rate for one client id",
    )
    return Scenario("sweep client quotas", tuple(items))


def scram(describe: list[int], alter: list[int]) -> Scenario:
    items = sweep_steps(
        "DescribeUserScramCredentials",
        API.DESCRIBE_USER_SCRAM_CREDENTIALS,
        describe,
        lambda ctx: {"users": [{"name": ctx.name("scram-user")}]},
        "credentials of a user that has none",
    )
    items += sweep_steps(
        "AlterUserScramCredentials",
        API.ALTER_USER_SCRAM_CREDENTIALS,
        alter,
        lambda ctx: {
            "deletions": [{"name": ctx.name("scram-user"), "mechanism": 1}],
            "upsertions": [],
        },
        "delete a credential that does not exist",
    )
    if 0 in describe and 0 in alter:
        items += _scram_life()
    return Scenario("sweep SCRAM", tuple(items))


def _scram_life() -> list[Item]:
    """A user's credentials: two upserted (another user's refused), described, one deleted,
    described."""

    def upsertion(ctx: Ctx, mechanism: int, iterations: int, user: str = "scram-life") -> Any:
        return {
            "name": ctx.name(user),
            "mechanism": mechanism,
            "iterations": iterations,
            "salt": b"conformance-salt",
            "salted_password": bytes(range(32)),
        }

    def describe(ctx: Ctx) -> dict[str, Any]:
        return {"users": [{"name": ctx.name("scram-life")}]}

    alter, describe_api = API.ALTER_USER_SCRAM_CREDENTIALS, API.DESCRIBE_USER_SCRAM_CREDENTIALS
    return [
        step(
            "scram.upsert",
            alter,
            0,
            lambda ctx: {
                "deletions": [],
                "upsertions": [upsertion(ctx, 1, 4096), upsertion(ctx, 3, 4096, "scram-other")],
            },
            "upsert a credential, and another user's of an unknown mechanism",
        ),
        step(
            "scram.upsert-one",
            alter,
            0,
            lambda ctx: {"deletions": [], "upsertions": [upsertion(ctx, 2, 8192)]},
            "upsert a SCRAM-SHA-512 credential",
        ),
        _scram_settle([1, 2]),
        step("scram.describe", describe_api, 0, describe, "the user's credentials"),
        step(
            "scram.delete",
            alter,
            0,
            lambda ctx: {
                "deletions": [{"name": ctx.name("scram-life"), "mechanism": 2}],
                "upsertions": [],
            },
            "delete the SCRAM-SHA-512 credential",
        ),
        _scram_settle([1]),
        step("scram.describe-after", describe_api, 0, describe, "one credential left"),
    ]


def _scram_settle(mechanisms: list[int]) -> Do:
    """Wait (up to 5 s) until the user's credentials are those of `mechanisms`: Kafka's
    controller answers the alteration and the broker's metadata image learns it a moment
    later, so a describe right after may still see the old credentials (wirebroker answers
    once this broker applied it). A broker that never gets there is not an error here: the
    next compared step shows it."""

    def run(ctx: Ctx) -> None:
        body = {"users": [{"name": ctx.name("scram-life")}]}

        def done() -> bool:
            answer = ctx.call(API.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, body)
            found = [c.mechanism for r in answer.results for c in r.credential_infos]
            return sorted(found) == mechanisms

        with contextlib.suppress(HarnessError):
            ctx.wait("SCRAM credentials of scram-life", done, timeout=5.0)

    return Do(f"wait until scram-life has the credentials of mechanisms {mechanisms}", run)


def quorum_and_features(quorum: list[int], features: list[int]) -> Scenario:
    items = sweep_steps(
        "DescribeQuorum",
        API.DESCRIBE_QUORUM,
        quorum,
        {"topics": [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]},
        "the KRaft metadata quorum",
    )
    items += sweep_steps(
        "UpdateFeatures",
        API.UPDATE_FEATURES,
        features,
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
    return Scenario("sweep quorum and features", tuple(items))


def find_coordinator(versions: list[int]) -> Scenario:
    items = sweep_steps(
        "FindCoordinator",
        API.FIND_COORDINATOR,
        versions,
        lambda ctx: {
            "key": ctx.name("sw-coordinator"),
            "key_type": 0,
            "coordinator_keys": [ctx.name("sw-coordinator")],
        },
        "a group's coordinator",
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
    items += sweep_steps_v(
        "OffsetCommit",
        API.OFFSET_COMMIT,
        commit,
        lambda ctx, v: simple_commit(v)(ctx),
        "commit offset (version) as a simple consumer",
    )
    items += sweep_steps(
        "OffsetFetch",
        API.OFFSET_FETCH,
        fetch,
        _offset_fetch,
        "partition 0 (committed) and 1 (never)",
    )
    items += sweep_steps(
        "OffsetDelete",
        API.OFFSET_DELETE,
        offset_delete,
        _offset_delete,
        "delete the committed offsets of an empty group",
    )
    for v in delete_groups:
        items += _delete_group_steps(v)
    return Scenario("sweep offsets", tuple(items))


def listings(list_groups: list[int], list_txns: list[int], config_resources: list[int]) -> Scenario:
    """Listings of everything (run after every other scenario; foreign entries dropped),
    once the groups Kafka may have cleaned up by timer are gone on both sides."""
    items: list[Item] = [drop_empty_groups()]
    items += sweep_steps(
        "ListGroups",
        API.LIST_GROUPS,
        list_groups,
        {"states_filter": [], "types_filter": []},
        "every group",
        listing=True,
    )
    items += sweep_steps(
        "ListTransactions",
        API.LIST_TRANSACTIONS,
        list_txns,
        lambda ctx: {
            "state_filters": [],
            "producer_id_filters": [],
            "duration_filter": -1,
            "transactional_id_pattern": ctx.side.names.token + ".*",
        },
        "every transaction (v2: this run's, by pattern)",
        listing=True,
    )
    items += sweep_steps(
        "ListConfigResources",
        API.LIST_CONFIG_RESOURCES,
        config_resources,
        {"resource_types": []},
        "every config resource (v0: client metrics only)",
        listing=True,
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
