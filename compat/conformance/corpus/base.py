"""Building blocks of the corpus: stage-setting actions, request bodies, record batches.

Record timestamps are fixed (`T0` and up), years away from the run's clock, so that they are
compared as they are (normalise.py, rule clock) and the report does not change from run to
run; topics that hold records are created with `retention.ms=-1` so that neither broker's
retention removes them during a run (`DATA`).
"""

from __future__ import annotations

import contextlib
import struct
import uuid
import zlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from compat.conformance.script import Ctx, Do, HarnessError, Step
from protocol.api import ApiKey
from protocol.records import RecordSpec, build_batch

T0 = 1_700_000_000_000  # 2023-11-14: the corpus's record timestamps start here
DATA = {"retention.ms": "-1"}  # topics that hold records: no retention during the run
CONSUMER = "consumer"
NIL = uuid.UUID(int=0)

API = ApiKey


# -- record batches ----------------------------------------------------------------------------
def batch(
    count: int = 1,
    *,
    first: int = 0,
    compression: int = 0,
    key: str | None = "k",
    ts: int | None = None,
    producer_id: int = -1,
    epoch: int = -1,
    sequence: int = -1,
    transactional: bool = False,
    headers: bool = True,
    value_size: int = 0,
) -> bytes:
    """A v2 batch of `count` records: key `k<i>` (None: null keys), value `v<i>` (padded to
    `value_size`), a header on the first record, timestamps T0 + first + i (or `ts`)."""
    specs = []
    for i in range(first, first + count):
        value = f"v{i}".encode()
        if value_size > len(value):
            value = value + b"." * (value_size - len(value))
        specs.append(
            RecordSpec(
                key=None if key is None else f"{key}{i}".encode(),
                value=value,
                headers=[("h", b"x"), ("h", None)] if headers and i == first else (),
                timestamp=T0 + i if ts is None else ts,
            )
        )
    return build_batch(
        specs,
        compression=compression,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        is_transactional=transactional,
    )


def bad_crc(data: bytes) -> bytes:
    """`data` with its first batch's CRC off by one."""
    out = bytearray(data)
    (crc,) = struct.unpack_from(">I", out, 17)
    struct.pack_into(">I", out, 17, (crc + 1) & 0xFFFFFFFF)
    return bytes(out)


def legacy_message_set(magic: int, values: Iterable[bytes], ts: int = T0) -> bytes:
    """A message set of format v0/v1 (what Produce v0-2 carries), offsets 0.., CRC-32."""
    out = bytearray()
    for i, value in enumerate(values):
        body = bytearray(struct.pack(">bb", magic, 0))
        if magic >= 1:
            body += struct.pack(">q", ts + i)
        body += struct.pack(">i", -1)  # null key
        body += struct.pack(">i", len(value)) + value
        message = struct.pack(">I", zlib.crc32(body)) + body
        out += struct.pack(">qi", i, len(message)) + message
    return bytes(out)


# -- topics ------------------------------------------------------------------------------------
def topic_ids(ctx: Ctx) -> dict[str, uuid.UUID]:
    ids: dict[str, uuid.UUID] = ctx.side.shared.setdefault("topic_ids", {})
    return ids


def topic_id(ctx: Ctx, logical: str) -> uuid.UUID:
    """The side's id of a topic an action created (the nil UUID if none is known)."""
    return topic_ids(ctx).get(logical, NIL)


def creatable(
    ctx: Ctx,
    logical: str,
    partitions: int = 1,
    configs: Mapping[str, str | None] | None = None,
    replication: int = 1,
) -> dict[str, Any]:
    return {
        "name": ctx.name(logical),
        "num_partitions": partitions,
        "replication_factor": replication,
        "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }


def metadata(ctx: Ctx, logicals: list[str]) -> Any:
    body = {
        "topics": [{"name": ctx.name(n), "topic_id": NIL} for n in logicals],
        "allow_auto_topic_creation": False,
    }
    return ctx.call(API.METADATA, 12, body)


def wait_ready(ctx: Ctx, logicals: list[str], partitions: int | None = None) -> None:
    """Until Metadata shows every partition of `logicals` with a leader (and `partitions`
    partitions, when given); keeps each topic's id."""

    def ready() -> bool:
        resp = metadata(ctx, logicals)
        for t in resp.topics:
            if t.error_code or not t.partitions:
                return False
            if partitions is not None and len(t.partitions) != partitions:
                return False
            if any(p.leader_id < 0 or p.error_code for p in t.partitions):
                return False
        # Metadata may show a leader a moment before it serves the partition (Kafka applies
        # the metadata delta to its cache and to its replica manager one after the other).
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {
                            "partition_index": p.partition_index,
                            "current_leader_epoch": -1,
                            "timestamp": -1,
                        }
                        for p in t.partitions
                    ],
                }
                for t in resp.topics
            ],
            "timeout_ms": 10000,
        }
        offsets = ctx.call(API.LIST_OFFSETS, 9, body)
        if any(p.error_code for t in offsets.topics for p in t.partitions):
            return False
        for t in resp.topics:
            topic_ids(ctx)[ctx.side.names.reverse()[t.name]] = t.topic_id
        return True

    ctx.wait(f"topics {logicals} ready", ready)


def create(
    logical: str,
    partitions: int = 1,
    configs: Mapping[str, str | None] | None = None,
) -> Do:
    """Create a topic (CreateTopics v7) and wait until every partition has a leader."""

    def run(ctx: Ctx) -> None:
        body = {
            "topics": [creatable(ctx, logical, partitions, configs)],
            "timeout_ms": 30000,
            "validate_only": False,
        }
        resp = ctx.call(API.CREATE_TOPICS, 7, body)
        code = resp.topics[0].error_code
        if code:
            raise HarnessError(f"CreateTopics {logical}: error {code}")
        wait_ready(ctx, [logical], partitions)

    return Do(f"create topic {logical} ({partitions} partitions)", run)


def wait_topic(logical: str, partitions: int | None = None) -> Do:
    return Do(f"wait for topic {logical}", lambda ctx: wait_ready(ctx, [logical], partitions))


def produce_now(logical: str, partition: int, data: bytes | Callable[[Ctx], bytes]) -> Do:
    """Append a batch (Produce v9, acks -1) as a stage-setting action."""

    def run(ctx: Ctx) -> None:
        records = data(ctx) if callable(data) else data
        resp = ctx.call(API.PRODUCE, 9, produce_body(ctx, 9, logical, partition, records))
        code = resp.responses[0].partition_responses[0].error_code
        if code:
            raise HarnessError(f"Produce to {logical}-{partition}: error {code}")

    return Do(f"produce to {logical}-{partition}", run)


# -- bodies ------------------------------------------------------------------------------------
def produce_body(
    ctx: Ctx,
    version: int,
    logical: str,
    partition: int,
    records: bytes | None,
    *,
    acks: int = -1,
    txn: str | None = None,
    timeout_ms: int = 10000,
) -> dict[str, Any]:
    return {
        "transactional_id": None if txn is None else ctx.name(txn),
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [
            {
                "name": ctx.name(logical),
                "topic_id": topic_id(ctx, logical),
                "partition_data": [{"index": partition, "records": records}],
            }
        ],
    }


def fetch_body(
    ctx: Ctx,
    logical: str,
    partition: int,
    offset: int,
    *,
    max_bytes: int = 1 << 20,
    isolation: int = 0,
    leader_epoch: int = -1,
    session: tuple[int, int] = (0, -1),
    max_wait_ms: int = 0,
) -> dict[str, Any]:
    return {
        "cluster_id": None,
        "replica_id": -1,
        "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 50 << 20,
        "isolation_level": isolation,
        "session_id": session[0],
        "session_epoch": session[1],
        "topics": [
            {
                "topic": ctx.name(logical),
                "topic_id": topic_id(ctx, logical),
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": leader_epoch,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": max_bytes,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def list_offsets_body(
    ctx: Ctx,
    logical: str,
    partition: int,
    timestamp: int,
    *,
    isolation: int = 0,
    leader_epoch: int = -1,
) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "isolation_level": isolation,
        "topics": [
            {
                "name": ctx.name(logical),
                "partitions": [
                    {
                        "partition_index": partition,
                        "current_leader_epoch": leader_epoch,
                        "timestamp": timestamp,
                        "max_num_offsets": 1,
                    }
                ],
            }
        ],
        "timeout_ms": 10000,
    }


def configs_resource(
    ctx: Ctx, logical: str | None, keys: list[str] | None = None
) -> dict[str, Any]:
    """A DescribeConfigs resource: a topic (logical name) or, for None, this side's broker."""
    if logical is None:
        return {
            "resource_type": 4,
            "resource_name": str(ctx.side.node_id),
            "configuration_keys": keys,
        }
    return {"resource_type": 2, "resource_name": ctx.name(logical), "configuration_keys": keys}


def step(
    id: str,
    api: int,
    version: int,
    body: Mapping[str, Any] | Callable[[Ctx], Mapping[str, Any]],
    note: str = "",
    **kw: Any,
) -> Step:
    return Step(id=id, api=int(api), version=version, body=body, note=note, **kw)


def sweep_steps(
    name: str,
    api: int,
    versions: Iterable[int],
    body: Mapping[str, Any] | Callable[[Ctx], Mapping[str, Any]],
    note: str = "",
    **kw: Any,
) -> list[Step]:
    """One step `<name>.v<v>` per version `v` of `api`, each with the same `body`."""
    return [step(f"{name}.v{v}", api, v, body, note, **kw) for v in versions]


def sweep_steps_v(
    name: str,
    api: int,
    versions: Iterable[int],
    body: Callable[[Ctx, int], Mapping[str, Any]],
    note: str = "",
    **kw: Any,
) -> list[Step]:
    """`sweep_steps` with a body that depends on the version: `body(ctx, v)`."""

    def at(v: int) -> Callable[[Ctx], Mapping[str, Any]]:
        return lambda ctx: body(ctx, v)

    return [step(f"{name}.v{v}", api, v, at(v), note, **kw) for v in versions]


def keep(name: str, read: Callable[[Any], Any]) -> Callable[[Ctx, Any], None]:
    """A `Step.keep` that stores `read(answer)` as `ctx.vars[name]`."""

    def run(ctx: Ctx, answer: Any) -> None:
        ctx.vars[name] = read(answer)

    return run


def settle(logical: str, expected: Mapping[str, str]) -> Do:
    """Wait (up to 5 s) until a topic's configs read `expected`: Kafka applies a config change
    through its metadata log, so a DescribeConfigs right after the change may still see the
    old value. A broker that never gets there is not an error here: the next compared step
    shows it."""

    def run(ctx: Ctx) -> None:
        body = {
            "resources": [configs_resource(ctx, logical, list(expected))],
            "include_synonyms": False,
        }

        def done() -> bool:
            answer = ctx.call(API.DESCRIBE_CONFIGS, 4, body)
            values = {c.name: c.value for r in answer.results for c in r.configs}
            return all(values.get(k) == v for k, v in expected.items())

        with contextlib.suppress(HarnessError):
            ctx.wait(f"configs of {logical}", done, timeout=5.0)

    return Do(f"wait until {logical} reads {dict(expected)}", run)


def wait_gone(logicals: list[str]) -> Do:
    """Wait until Metadata no longer knows `logicals` (deleted topics)."""

    def run(ctx: Ctx) -> None:
        ctx.wait(
            f"topics {logicals} deleted",
            lambda: all(t.error_code == 3 for t in metadata(ctx, logicals).topics),
        )

    return Do(f"wait until {logicals} are gone", run)


def drop_empty_groups() -> Do:
    """Delete the run's groups that are Empty and hold no committed offset (an aborted
    transaction's group, a group whose offsets were deleted), on each side, before the
    listings. Kafka removes such groups on its own at its next offsets cleanup
    (offsets.retention.check.interval.ms, 10 minutes by default), a timer that may fire during
    a run against the shared oracle: whether it did is timing, not behaviour."""

    def run(ctx: Ctx) -> None:
        listed = ctx.call(API.LIST_GROUPS, 4, {"states_filter": ["Empty"]})
        ours = [g.group_id for g in listed.groups if ctx.side.names.token in g.group_id]
        empty = []
        for group in ours:
            body = {
                "groups": [{"group_id": group, "topics": None}],
                "require_stable": False,
            }
            answer = ctx.call(API.OFFSET_FETCH, 8, body)
            if not any(t.partitions for g in answer.groups for t in g.topics):
                empty.append(group)
        if empty:
            ctx.call(API.DELETE_GROUPS, 2, {"groups_names": empty})

    return Do("delete the run's empty groups without offsets", run)


# -- groups of the protocols only some sides serve (KIP-848, share and streams groups) ---------
GROUP_RESOURCE = 32  # a group's configs (IncrementalAlterConfigs, DescribeConfigs)


def where_served(api: int, what: str, run: Callable[[Ctx], None]) -> Do:
    """An action for an API only some sides serve: it runs on a side that advertises `api`;
    on one that does not, it does nothing (the compared steps then show how that side reacts
    to each request)."""

    def maybe(ctx: Ctx) -> None:
        if ctx.side.serves(int(api)):
            run(ctx)

    return Do(f"{what} (where API {int(api)} is served)", maybe)


def _alter_group_configs(ctx: Ctx, group: str, configs: Mapping[str, str | None]) -> None:
    """Set (a value) or delete (None) dynamic configs of a group: IncrementalAlterConfigs v1."""
    entries = [
        {"name": k, "config_operation": 0 if v is not None else 1, "value": v}
        for k, v in configs.items()
    ]
    body = {
        "resources": [
            {"resource_type": GROUP_RESOURCE, "resource_name": ctx.name(group), "configs": entries}
        ],
        "validate_only": False,
    }
    code = ctx.call(API.INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0].error_code
    if code:
        raise HarnessError(f"configs of group {group}: error {code}")


def group_configs(api: int, group: str, configs: Mapping[str, str]) -> Do:
    """Set configs of a (future) group where `api` is served, and wait until they apply.

    Kafka batches a group's assignment updates (group.*.assignment.interval.ms, 1 s) and waits
    group.streams.initial.rebalance.delay.ms (3 s) before a new streams group's first
    assignment: a scenario sets its own group's interval and delay to 0, so that each answer
    holds the assignment the request caused, the same from run to run. wirebroker's consumer
    groups assign at once (docs/groups.md); it stores the same configs, so both sides list and
    describe the same groups."""

    def run(ctx: Ctx) -> None:
        _alter_group_configs(ctx, group, configs)
        body = {
            "resources": [
                {
                    "resource_type": GROUP_RESOURCE,
                    "resource_name": ctx.name(group),
                    "configuration_keys": list(configs),
                }
            ],
            "include_synonyms": False,
            "include_documentation": False,
        }

        def applied() -> bool:
            answer = ctx.call(API.DESCRIBE_CONFIGS, 4, body)
            values = {c.name: c.value for r in answer.results for c in r.configs}
            return all(values.get(k) == v for k, v in configs.items())

        ctx.wait(f"configs of group {group}", applied, timeout=10.0)

    return where_served(api, f"set {dict(configs)} on group {group}", run)


def forget_group(api: int, group: str, configs: Iterable[str] = ()) -> Do:
    """Where `api` is served: delete the group (DeleteGroups v2: its members left) and its
    dynamic configs, and wait until ListConfigResources no longer lists it, so that the
    listings of the last phase (ListGroups, ListConfigResources) show what both sides have."""
    keys = list(configs)

    def run(ctx: Ctx) -> None:
        answer = ctx.call(API.DELETE_GROUPS, 2, {"groups_names": [ctx.name(group)]})
        code = answer.results[0].error_code
        if code:
            raise HarnessError(f"DeleteGroups {group}: error {code}")
        if not keys:
            return
        _alter_group_configs(ctx, group, dict.fromkeys(keys))
        listing = {"resource_types": [GROUP_RESOURCE]}

        def gone() -> bool:
            answer = ctx.call(API.LIST_CONFIG_RESOURCES, 1, listing)
            return all(r.resource_name != ctx.name(group) for r in answer.config_resources)

        ctx.wait(f"configs of group {group} deleted", gone, timeout=10.0)

    return where_served(api, f"delete group {group} and its configs", run)
