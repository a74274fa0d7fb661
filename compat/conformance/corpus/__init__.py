"""The corpus: every scenario, built for the versions both sides advertise.

`build(advertised)` takes each side's ApiVersions ({api key: (min, max)}) and returns the
scenarios: a sweep of every version either side advertises that our codecs know (one
request per API per version at least; the group and transaction APIs through one whole flow
per version: classic, KIP-848, share and streams groups), the happy and error paths, the
unsupported-version probes, client telemetry (sent whether advertised or not: Kafka answers
it unadvertised), and one header-only probe per API our codecs do not know. `coverage`
tells which advertised API/versions no step covers (none, unless an API is added without a
sweep: the report lists them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from compat.conformance.corpus import (
    bad_batches,
    cluster,
    configs,
    consumer_groups,
    controller,
    groups,
    probes,
    records,
    share_groups,
    share_state,
    streams_groups,
    sweeps_admin,
    sweeps_data,
    sweeps_misc,
    telemetry,
    tokens,
    topics,
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


# Each sweep: the API keys it covers, and the function making its scenario from the versions
# to cover of each key (in that order). A sweep runs when one of its keys has versions.
SWEEPS: tuple[tuple[tuple[API, ...], Callable[..., Scenario]], ...] = (
    ((API.PRODUCE,), sweeps_data.produce),
    ((API.FETCH,), sweeps_data.fetch),
    ((API.LIST_OFFSETS,), sweeps_data.list_offsets),
    ((API.DELETE_RECORDS,), sweeps_data.delete_records),
    ((API.OFFSET_FOR_LEADER_EPOCH,), sweeps_data.offset_for_leader_epoch),
    ((API.INIT_PRODUCER_ID,), sweeps_data.init_producer_id),
    ((API.WRITE_TXN_MARKERS,), sweeps_data.write_txn_markers),
    ((API.DESCRIBE_PRODUCERS,), sweeps_data.describe_producers),
    ((API.METADATA,), sweeps_admin.metadata),
    ((API.CREATE_TOPICS,), sweeps_admin.create_topics),
    ((API.DELETE_TOPICS,), sweeps_admin.delete_topics),
    ((API.DESCRIBE_CONFIGS,), sweeps_admin.describe_configs),
    ((API.ALTER_CONFIGS,), sweeps_admin.alter_configs),
    ((API.INCREMENTAL_ALTER_CONFIGS,), sweeps_admin.incremental_alter_configs),
    ((API.CREATE_PARTITIONS,), sweeps_admin.create_partitions),
    ((API.DESCRIBE_LOG_DIRS, API.ALTER_REPLICA_LOG_DIRS), sweeps_admin.log_dirs),
    ((API.ELECT_LEADERS,), sweeps_admin.elect_leaders),
    (
        (API.ALTER_PARTITION_REASSIGNMENTS, API.LIST_PARTITION_REASSIGNMENTS),
        sweeps_admin.reassignments,
    ),
    ((API.DESCRIBE_CLUSTER,), sweeps_admin.describe_cluster),
    ((API.DESCRIBE_TOPIC_PARTITIONS,), sweeps_admin.describe_topic_partitions),
    ((API.API_VERSIONS,), sweeps_misc.api_versions),
    ((API.SASL_HANDSHAKE, API.SASL_AUTHENTICATE), sweeps_misc.sasl),
    ((API.DESCRIBE_ACLS, API.CREATE_ACLS, API.DELETE_ACLS), sweeps_misc.acls),
    ((API.DESCRIBE_CLIENT_QUOTAS, API.ALTER_CLIENT_QUOTAS), sweeps_misc.quotas),
    ((API.DESCRIBE_USER_SCRAM_CREDENTIALS, API.ALTER_USER_SCRAM_CREDENTIALS), sweeps_misc.scram),
    ((API.DESCRIBE_QUORUM, API.UPDATE_FEATURES), sweeps_misc.quorum_and_features),
    ((API.FIND_COORDINATOR,), sweeps_misc.find_coordinator),
    (
        (API.OFFSET_COMMIT, API.OFFSET_FETCH, API.DELETE_GROUPS, API.OFFSET_DELETE),
        sweeps_misc.offsets,
    ),
    ((API.LIST_GROUPS, API.LIST_TRANSACTIONS, API.LIST_CONFIG_RESOURCES), sweeps_misc.listings),
    (
        (
            API.CREATE_DELEGATION_TOKEN,
            API.RENEW_DELEGATION_TOKEN,
            API.EXPIRE_DELEGATION_TOKEN,
            API.DESCRIBE_DELEGATION_TOKEN,
        ),
        tokens.sweep,
    ),
    (
        (
            API.UNREGISTER_BROKER,
            API.UNREGISTER_CONTROLLER,
            API.ADD_RAFT_VOTER,
            API.REMOVE_RAFT_VOTER,
        ),
        controller.sweep,
    ),
)
# The share-group flows, with the APIs each needs (it is played when all have versions).
SHARE_APIS = (
    API.SHARE_GROUP_HEARTBEAT,
    API.SHARE_GROUP_DESCRIBE,
    API.SHARE_FETCH,
    API.SHARE_ACKNOWLEDGE,
    API.DESCRIBE_SHARE_GROUP_OFFSETS,
    API.ALTER_SHARE_GROUP_OFFSETS,
    API.DELETE_SHARE_GROUP_OFFSETS,
)
SHARE_STATE_APIS = (
    API.INITIALIZE_SHARE_GROUP_STATE,
    API.READ_SHARE_GROUP_STATE,
    API.WRITE_SHARE_GROUP_STATE,
    API.DELETE_SHARE_GROUP_STATE,
    API.READ_SHARE_GROUP_STATE_SUMMARY,
)


def _sweeps(v: Callable[[API], list[int]]) -> list[Scenario]:
    out = []
    for keys, make in SWEEPS:
        versions = [v(k) for k in keys]
        if any(versions):
            out.append(make(*versions))
    return out


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
    return out + _new_groups(v)


def _new_groups(v: Callable[[API], list[int]]) -> list[Scenario]:
    """KIP-848 consumer groups, streams groups, share groups and share-group state."""
    out = consumer_groups.flows(v(API.CONSUMER_GROUP_HEARTBEAT), v(API.CONSUMER_GROUP_DESCRIBE))
    out += streams_groups.flows(
        v(API.STREAMS_GROUP_HEARTBEAT),
        v(API.STREAMS_GROUP_DESCRIBE),
        v(API.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE),
    )
    share = {k: v(k) for k in SHARE_APIS}
    if all(share.values()):
        out.append(share_groups.flow(share))
    state = {k: v(k) for k in SHARE_STATE_APIS}
    if all(state.values()):
        out.append(share_state.flow(state))
    return out


def _unadvertised(v: Callable[[API], list[int]], key: API) -> list[int]:
    """The versions to send of an API a broker may serve without advertising it: the
    advertised ones, else every version our codecs know."""
    return v(key) or list(probes.codec_versions(int(key)))


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
        bad_batches.bad_batches(),
        records.leader_epochs(),
        topics.create_topics(),
        topics.partitions_and_deletes(),
        topics.metadata_cases(),
        configs.configs(),
        cluster.cluster(),
        groups.errors(),
        groups.static_members(),
        txn.errors(),
        txn.idempotence(),
        probes.unsupported_versions(),
        telemetry.sweep(
            _unadvertised(v, API.GET_TELEMETRY_SUBSCRIPTIONS),
            _unadvertised(v, API.PUSH_TELEMETRY),
        ),
    ]
    unknown = {k: (vs[0], vs[-1]) for k, vs in every.items() if k not in known}
    if unknown:
        scenarios.append(probes.no_codec(unknown))
    scenarios.append(cluster.everything())
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
