"""The corpus: every scenario, built for the versions both sides advertise.

`build(advertised)` takes each side's ApiVersions ({api key: (min, max)}) and returns the
scenarios: a sweep of every version either side advertises that our codecs know (one
request per API per version at least; the group and transaction APIs through one whole flow
per version), the happy and error paths, the unsupported-version probes, and one probe per
API our codecs do not know. `coverage` tells which advertised API/versions no step covers
(none, unless an API is added without a sweep: the report lists them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from compat.conformance.corpus import (
    admin,
    groups,
    probes,
    records,
    sweeps_admin,
    sweeps_data,
    sweeps_misc,
    txn,
)
from compat.conformance.corpus.base import API
from compat.conformance.script import Scenario

Advertised = Mapping[int, tuple[int, int]]


def union(advertised: Mapping[str, Advertised]) -> dict[int, list[int]]:
    """{api: every version either side advertises}."""
    out: dict[int, set[int]] = {}
    for apis in advertised.values():
        for key, (low, high) in apis.items():
            out.setdefault(key, set()).update(range(low, high + 1))
    return {k: sorted(v) for k, v in sorted(out.items())}


def encodable(versions: dict[int, list[int]]) -> dict[int, list[int]]:
    """The part of `versions` our codecs can encode and decode."""
    out = {}
    for key, vs in versions.items():
        known = probes.codec_versions(key)
        kept = [v for v in vs if v in known]
        if kept:
            out[key] = kept
    return out


def _sweeps(v: Callable[[API], list[int]]) -> list[Scenario]:
    def some(*keys: API) -> bool:
        return any(v(k) for k in keys)

    table: list[tuple[tuple[API, ...], Callable[[], Scenario]]] = [
        ((API.PRODUCE,), lambda: sweeps_data.produce(v(API.PRODUCE))),
        ((API.FETCH,), lambda: sweeps_data.fetch(v(API.FETCH))),
        ((API.LIST_OFFSETS,), lambda: sweeps_data.list_offsets(v(API.LIST_OFFSETS))),
        ((API.DELETE_RECORDS,), lambda: sweeps_data.delete_records(v(API.DELETE_RECORDS))),
        (
            (API.OFFSET_FOR_LEADER_EPOCH,),
            lambda: sweeps_data.offset_for_leader_epoch(v(API.OFFSET_FOR_LEADER_EPOCH)),
        ),
        ((API.INIT_PRODUCER_ID,), lambda: sweeps_data.init_producer_id(v(API.INIT_PRODUCER_ID))),
        ((API.WRITE_TXN_MARKERS,), lambda: sweeps_data.write_txn_markers(v(API.WRITE_TXN_MARKERS))),
        (
            (API.DESCRIBE_PRODUCERS,),
            lambda: sweeps_data.describe_producers(v(API.DESCRIBE_PRODUCERS)),
        ),
        ((API.METADATA,), lambda: sweeps_admin.metadata(v(API.METADATA))),
        ((API.CREATE_TOPICS,), lambda: sweeps_admin.create_topics(v(API.CREATE_TOPICS))),
        ((API.DELETE_TOPICS,), lambda: sweeps_admin.delete_topics(v(API.DELETE_TOPICS))),
        ((API.DESCRIBE_CONFIGS,), lambda: sweeps_admin.describe_configs(v(API.DESCRIBE_CONFIGS))),
        ((API.ALTER_CONFIGS,), lambda: sweeps_admin.alter_configs(v(API.ALTER_CONFIGS))),
        (
            (API.INCREMENTAL_ALTER_CONFIGS,),
            lambda: sweeps_admin.incremental_alter_configs(v(API.INCREMENTAL_ALTER_CONFIGS)),
        ),
        (
            (API.CREATE_PARTITIONS,),
            lambda: sweeps_admin.create_partitions(v(API.CREATE_PARTITIONS)),
        ),
        (
            (API.DESCRIBE_LOG_DIRS, API.ALTER_REPLICA_LOG_DIRS),
            lambda: sweeps_admin.log_dirs(v(API.DESCRIBE_LOG_DIRS), v(API.ALTER_REPLICA_LOG_DIRS)),
        ),
        ((API.ELECT_LEADERS,), lambda: sweeps_admin.elect_leaders(v(API.ELECT_LEADERS))),
        (
            (API.ALTER_PARTITION_REASSIGNMENTS, API.LIST_PARTITION_REASSIGNMENTS),
            lambda: sweeps_admin.reassignments(
                v(API.ALTER_PARTITION_REASSIGNMENTS), v(API.LIST_PARTITION_REASSIGNMENTS)
            ),
        ),
        ((API.DESCRIBE_CLUSTER,), lambda: sweeps_admin.describe_cluster(v(API.DESCRIBE_CLUSTER))),
        (
            (API.DESCRIBE_TOPIC_PARTITIONS,),
            lambda: sweeps_admin.describe_topic_partitions(v(API.DESCRIBE_TOPIC_PARTITIONS)),
        ),
        ((API.API_VERSIONS,), lambda: sweeps_misc.api_versions(v(API.API_VERSIONS))),
        (
            (API.SASL_HANDSHAKE, API.SASL_AUTHENTICATE),
            lambda: sweeps_misc.sasl(v(API.SASL_HANDSHAKE), v(API.SASL_AUTHENTICATE)),
        ),
        (
            (API.DESCRIBE_ACLS, API.CREATE_ACLS, API.DELETE_ACLS),
            lambda: sweeps_misc.acls(v(API.DESCRIBE_ACLS), v(API.CREATE_ACLS), v(API.DELETE_ACLS)),
        ),
        (
            (API.DESCRIBE_CLIENT_QUOTAS, API.ALTER_CLIENT_QUOTAS),
            lambda: sweeps_misc.quotas(v(API.DESCRIBE_CLIENT_QUOTAS), v(API.ALTER_CLIENT_QUOTAS)),
        ),
        (
            (API.DESCRIBE_USER_SCRAM_CREDENTIALS, API.ALTER_USER_SCRAM_CREDENTIALS),
            lambda: sweeps_misc.scram(
                v(API.DESCRIBE_USER_SCRAM_CREDENTIALS), v(API.ALTER_USER_SCRAM_CREDENTIALS)
            ),
        ),
        (
            (API.DESCRIBE_QUORUM, API.UPDATE_FEATURES),
            lambda: sweeps_misc.quorum_and_features(v(API.DESCRIBE_QUORUM), v(API.UPDATE_FEATURES)),
        ),
        ((API.FIND_COORDINATOR,), lambda: sweeps_misc.find_coordinator(v(API.FIND_COORDINATOR))),
        (
            (API.OFFSET_COMMIT, API.OFFSET_FETCH, API.DELETE_GROUPS, API.OFFSET_DELETE),
            lambda: sweeps_misc.offsets(
                v(API.OFFSET_COMMIT),
                v(API.OFFSET_FETCH),
                v(API.DELETE_GROUPS),
                v(API.OFFSET_DELETE),
            ),
        ),
        (
            (API.LIST_GROUPS, API.LIST_TRANSACTIONS, API.LIST_CONFIG_RESOURCES),
            lambda: sweeps_misc.listings(
                v(API.LIST_GROUPS), v(API.LIST_TRANSACTIONS), v(API.LIST_CONFIG_RESOURCES)
            ),
        ),
    ]
    return [make() for keys, make in table if some(*keys)]


def _flows(v: Callable[[API], list[int]]) -> list[Scenario]:
    out: list[Scenario] = []
    group_versions = {
        "sync": v(API.SYNC_GROUP),
        "heartbeat": v(API.HEARTBEAT),
        "leave": v(API.LEAVE_GROUP),
        "describe": v(API.DESCRIBE_GROUPS),
    }
    if v(API.JOIN_GROUP) and all(group_versions.values()):
        out += [groups.flow(j, group_versions) for j in v(API.JOIN_GROUP)]
    txn_versions = {
        "add_partitions": v(API.ADD_PARTITIONS_TO_TXN),
        "add_offsets": v(API.ADD_OFFSETS_TO_TXN),
        "txn_offset_commit": v(API.TXN_OFFSET_COMMIT),
        "end": v(API.END_TXN),
    }
    if all(txn_versions.values()):
        newest = max(max(vs) for vs in txn_versions.values())
        out += [txn.flow(i, txn_versions) for i in range(newest + 1)]
    return out


def build(advertised: Mapping[str, Advertised]) -> list[Scenario]:
    """Every scenario, in the report's order; step ids are checked to be unique."""
    every = union(advertised)
    known = encodable(every)

    def v(key: API) -> list[int]:
        return known.get(int(key), [])

    scenarios = _sweeps(v) + _flows(v)
    scenarios += [
        records.codecs(),
        records.timestamps(),
        records.fetch_positions(),
        records.list_offsets(),
        records.produce_errors(),
        records.leader_epochs(),
        admin.create_topics(),
        admin.partitions_and_deletes(),
        admin.metadata_cases(),
        admin.configs(),
        admin.cluster(),
        groups.errors(),
        groups.static_members(),
        txn.errors(),
        txn.idempotence(),
        probes.unsupported_versions(),
    ]
    unknown = {k: (vs[0], vs[-1]) for k, vs in every.items() if k not in known}
    if unknown:
        scenarios.append(probes.no_codec(unknown))
    scenarios.append(admin.everything())
    scenarios.sort(key=lambda s: s.phase)  # stable: the report's order is phase, then this list
    seen: set[str] = set()
    for scenario in scenarios:
        for s in scenario.steps():
            if s.id in seen:
                raise ValueError(f"step id {s.id} used twice")
            seen.add(s.id)
    return scenarios


def coverage(
    advertised: Mapping[str, Advertised], scenarios: list[Scenario]
) -> list[tuple[int, int]]:
    """The (api, version) pairs our codecs know, that a side advertises and no step covers."""
    covered = {(s.api, s.version) for sc in scenarios for s in sc.steps()}
    known = encodable(union(advertised))
    return [(k, v) for k, vs in known.items() for v in vs if (k, v) not in covered]
