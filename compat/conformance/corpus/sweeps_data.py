"""Every version of the record APIs: one request per version, each on its own topic.

Each sweep is a function of the versions to cover (the union of what both sides advertise)
returning one scenario; `corpus.build` calls it for the versions our codecs can encode.
"""

from __future__ import annotations

from compat.conformance.corpus import legacy
from compat.conformance.corpus.base import (
    API,
    DATA,
    T0,
    batch,
    create,
    fetch_body,
    keep,
    legacy_message_set,
    list_offsets_body,
    produce_body,
    produce_now,
    step,
    sweep_steps,
    sweep_steps_v,
)
from compat.conformance.script import Ctx, Item, Scenario, Step


def produce(versions: list[int]) -> Scenario:
    topic = "sw-produce"
    items: list[Item] = [create(topic, 1, DATA)]
    for v in versions:
        if v <= 2:
            magic = 0 if v < 2 else 1
            items.append(
                Step(
                    f"Produce.v{v}",
                    int(API.PRODUCE),
                    v,
                    note=f"one message of format v{magic} (acks -1)",
                    raw=legacy.raw_step_request(v, topic, legacy_message_set(magic, [b"old"])),
                )
            )
            continue
        items.append(
            step(
                f"Produce.v{v}",
                API.PRODUCE,
                v,
                lambda ctx, v=v: produce_body(ctx, v, topic, 0, batch(2, first=10 * v)),
                "a batch of 2 records (acks -1)",
            )
        )
    return Scenario("sweep Produce", tuple(items))


def fetch(versions: list[int]) -> Scenario:
    topic = "sw-fetch"
    items: list[Item] = [
        create(topic, 1, DATA),
        produce_now(topic, 0, batch(2, first=0)),
        produce_now(topic, 0, batch(2, first=2, compression=1)),
        produce_now(topic, 0, batch(2, first=4)),
    ]
    items += sweep_steps(
        "Fetch",
        API.FETCH,
        versions,
        lambda ctx: fetch_body(ctx, topic, 0, 2),
        "from offset 2 (the second of three batches), no session",
    )
    return Scenario("sweep Fetch", tuple(items))


def list_offsets(versions: list[int]) -> Scenario:
    topic = "sw-listoffsets"
    items: list[Item] = [create(topic, 1, DATA), produce_now(topic, 0, batch(3))]
    items += sweep_steps(
        "ListOffsets",
        API.LIST_OFFSETS,
        versions,
        lambda ctx: list_offsets_body(ctx, topic, 0, T0 + 1),
        "by timestamp: the second of three records",
    )
    return Scenario("sweep ListOffsets", tuple(items))


def delete_records(versions: list[int]) -> Scenario:
    topic = "sw-deleterecords"
    items: list[Item] = [
        create(topic, 1, DATA),
        produce_now(topic, 0, batch(1)),
        produce_now(topic, 0, batch(1, first=1)),
    ]
    items += [produce_now(topic, 0, batch(1, first=i)) for i in range(2, 6)]
    items += sweep_steps_v(
        "DeleteRecords",
        API.DELETE_RECORDS,
        versions,
        lambda ctx, v: {
            "topics": [
                {"name": ctx.name(topic), "partitions": [{"partition_index": 0, "offset": v + 1}]}
            ],
            "timeout_ms": 10000,
        },
        "delete records before offset (version + 1)",
    )
    return Scenario("sweep DeleteRecords", tuple(items))


def offset_for_leader_epoch(versions: list[int]) -> Scenario:
    topic = "sw-ofle"
    items: list[Item] = [create(topic, 1, DATA), produce_now(topic, 0, batch(3))]
    items += sweep_steps(
        "OffsetForLeaderEpoch",
        API.OFFSET_FOR_LEADER_EPOCH,
        versions,
        lambda ctx: {
            "replica_id": -1,
            "topics": [
                {
                    "topic": ctx.name(topic),
                    "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}],
                }
            ],
        },
        "end offset of leader epoch 0 (a consumer's request)",
    )
    return Scenario("sweep OffsetForLeaderEpoch", tuple(items))


IDEMPOTENT_PID = {
    "transactional_id": None,
    "transaction_timeout_ms": 60000,
    "producer_id": -1,
    "producer_epoch": -1,
}


def init_producer_id(versions: list[int]) -> Scenario:
    items = sweep_steps(
        "InitProducerId",
        API.INIT_PRODUCER_ID,
        versions,
        IDEMPOTENT_PID,
        "an idempotent producer (no transactional id)",
    )
    return Scenario("sweep InitProducerId", tuple(items))


def _pid_step(id: str) -> Step:
    return step(
        id,
        API.INIT_PRODUCER_ID,
        4,
        IDEMPOTENT_PID,
        "an idempotent producer id",
        keep=keep("pid", lambda a: (a.producer_id, a.producer_epoch)),
    )


def write_txn_markers(versions: list[int]) -> Scenario:
    topic = "sw-markers"
    items: list[Item] = [create(topic, 1, DATA), _pid_step("WriteTxnMarkers.init_producer_id")]

    def body(ctx: Ctx, v: int) -> dict[str, object]:
        pid, epoch = ctx.vars["pid"]
        return {
            "markers": [
                {
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "transaction_result": False,
                    "topics": [{"name": ctx.name(topic), "partition_indexes": [0]}],
                    "coordinator_epoch": 0,
                    "transaction_version": 0,
                }
            ]
        }

    items += sweep_steps_v(
        "WriteTxnMarkers",
        API.WRITE_TXN_MARKERS,
        versions,
        body,
        "an ABORT marker for an idempotent producer without a transaction",
    )
    items.append(
        step(
            "WriteTxnMarkers.fetch_markers",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 0),
            "what the markers wrote",
        )
    )
    return Scenario("sweep WriteTxnMarkers", tuple(items))


def describe_producers(versions: list[int]) -> Scenario:
    topic = "sw-producers"
    items: list[Item] = [create(topic, 2, DATA), _pid_step("DescribeProducers.init_producer_id")]

    def idempotent(ctx: Ctx) -> dict[str, object]:
        pid, epoch = ctx.vars["pid"]
        return produce_body(ctx, 9, topic, 0, batch(3, producer_id=pid, epoch=epoch, sequence=0))

    items.append(
        step(
            "DescribeProducers.produce",
            API.PRODUCE,
            9,
            idempotent,
            "an idempotent batch of 3 (sequence 0)",
        )
    )
    items += sweep_steps(
        "DescribeProducers",
        API.DESCRIBE_PRODUCERS,
        versions,
        lambda ctx: {"topics": [{"name": ctx.name(topic), "partition_indexes": [0, 1, 7]}]},
        "partition 0 (one producer), 1 (none), 7 (no such partition)",
    )
    return Scenario("sweep DescribeProducers", tuple(items))
