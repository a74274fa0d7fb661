"""Records: produce every codec and timestamp type, fetch at every position, list offsets by
every spec, and the error paths of Produce, Fetch, ListOffsets and OffsetForLeaderEpoch."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from compat.conformance.corpus.base import (
    API,
    DATA,
    T0,
    bad_crc,
    batch,
    create,
    fetch_body,
    keep,
    legacy_message_set,
    list_offsets_body,
    produce_body,
    produce_now,
    step,
)
from compat.conformance.script import Ctx, Item, Scenario, Step

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING = (
    -2,
    -1,
    -3,
    -4,
    -5,
    -6,
)


def codecs() -> Scenario:
    topic, p = "rec-codecs", "produce.codec"
    items: list[Item] = [create(topic, 1, DATA)]
    for i, (name, codec) in enumerate(CODECS.items()):
        items.append(
            step(
                f"{p}.{name}",
                API.PRODUCE,
                9,
                lambda ctx, i=i, codec=codec: produce_body(
                    ctx, 9, topic, 0, batch(3, first=3 * i, compression=codec)
                ),
                f"a {name} batch of 3 records",
            )
        )
    items.append(
        step(
            f"{p}.fetch_all",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 0),
            "every batch as stored",
        )
    )
    return Scenario("produce every codec", tuple(items))


def timestamps() -> Scenario:
    create_t, append_t, p = "rec-createtime", "rec-logappendtime", "produce.timestamps"
    items: list[Item] = [
        create(create_t, 1, DATA),
        create(append_t, 1, {**DATA, "message.timestamp.type": "LogAppendTime"}),
    ]
    for topic, label in ((create_t, "create_time"), (append_t, "log_append_time")):
        for codec in ("none", "zstd"):
            items.append(
                step(
                    f"{p}.{label}.{codec}",
                    API.PRODUCE,
                    9,
                    lambda ctx, topic=topic, codec=codec: produce_body(
                        ctx, 9, topic, 0, batch(2, compression=CODECS[codec])
                    ),
                    f"a {codec} batch of 2",
                )
            )
        items.append(
            step(
                f"{p}.{label}.fetch",
                API.FETCH,
                12,
                lambda ctx, topic=topic: fetch_body(ctx, topic, 0, 0),
                "the stored batches",
            )
        )
        items.append(
            step(
                f"{p}.{label}.list_offsets_max_timestamp",
                API.LIST_OFFSETS,
                9,
                lambda ctx, topic=topic: list_offsets_body(ctx, topic, 0, MAX_TIMESTAMP),
                "the record with the largest timestamp",
            )
        )
    return Scenario("produce both timestamp types", tuple(items))


def fetch_positions() -> Scenario:
    topic, p = "rec-positions", "fetch"
    F: Callable[..., Step] = step
    items: list[Item] = [create(topic, 2, DATA)]
    items += [produce_now(topic, 0, batch(2, first=2 * i)) for i in range(3)]

    def at(offset: int, **kw: Any) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: fetch_body(ctx, topic, 0, offset, **kw)

    items += [
        F(f"{p}.start", API.FETCH, 12, at(0), "from offset 0 (three batches of 2)"),
        F(f"{p}.middle", API.FETCH, 12, at(3), "from offset 3 (inside the second batch)"),
        F(f"{p}.end", API.FETCH, 12, at(6), "from the log end offset (nothing yet)"),
        F(f"{p}.beyond_end", API.FETCH, 12, at(7), "beyond the log end"),
        F(f"{p}.negative", API.FETCH, 12, at(-1), "offset -1"),
        F(
            f"{p}.small_max_bytes",
            API.FETCH,
            12,
            at(0, max_bytes=10),
            "partition_max_bytes 10: the first batch anyway",
        ),
        F(
            f"{p}.long_poll_empty",
            API.FETCH,
            12,
            at(6, max_wait_ms=100),
            "a long poll at the end that times out",
        ),
        F(
            f"{p}.empty_partition",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 1, 0),
            "from an empty partition",
        ),
        F(
            f"{p}.bad_partition",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 9, 0),
            "from a partition the topic does not have",
        ),
        F(
            f"{p}.unknown_topic",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, "rec-never", 0, 0),
            "from a topic that does not exist",
        ),
        F(
            f"{p}.unknown_topic_id",
            API.FETCH,
            13,
            lambda ctx: {
                **fetch_body(ctx, topic, 0, 0),
                "topics": [
                    {**fetch_body(ctx, topic, 0, 0)["topics"][0], "topic_id": uuid.UUID(int=12345)}
                ],
            },
            "by a topic id that does not exist",
        ),
        F(
            f"{p}.future_leader_epoch",
            API.FETCH,
            12,
            at(0, leader_epoch=7),
            "current_leader_epoch above the leader's",
        ),
        F(
            f"{p}.current_leader_epoch",
            API.FETCH,
            12,
            at(0, leader_epoch=0),
            "current_leader_epoch the leader's",
        ),
        F(f"{p}.by_topic_id", API.FETCH, 13, at(4), "v13, by topic id, from offset 4"),
        F(
            f"{p}.session_new",
            API.FETCH,
            12,
            at(0, session=(0, 0)),
            "a new fetch session (session epoch 0)",
            keep=keep("session", lambda a: a.session_id),
        ),
        F(
            f"{p}.session_next",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 6, session=(ctx.vars["session"], 1)),
            "the session's next, incremental fetch",
        ),
        F(
            f"{p}.session_unknown",
            API.FETCH,
            12,
            at(0, session=(123456, 1)),
            "an incremental fetch in a session that does not exist",
        ),
        F(
            f"{p}.delete_records",
            API.DELETE_RECORDS,
            2,
            lambda ctx: {
                "topics": [
                    {"name": ctx.name(topic), "partitions": [{"partition_index": 0, "offset": 3}]}
                ],
                "timeout_ms": 10000,
            },
            "delete records before offset 3",
        ),
        F(
            f"{p}.before_start",
            API.FETCH,
            12,
            at(1),
            "from offset 1, before the log start offset now",
        ),
        F(f"{p}.at_start", API.FETCH, 12, at(3), "from the new log start offset"),
        F(
            f"{p}.list_offsets_earliest",
            API.LIST_OFFSETS,
            9,
            lambda ctx: list_offsets_body(ctx, topic, 0, EARLIEST),
            "earliest after DeleteRecords",
        ),
        F(
            f"{p}.delete_records_beyond",
            API.DELETE_RECORDS,
            2,
            lambda ctx: {
                "topics": [
                    {
                        "name": ctx.name(topic),
                        "partitions": [
                            {"partition_index": 0, "offset": 99},
                            {"partition_index": 9, "offset": 0},
                        ],
                    }
                ],
                "timeout_ms": 10000,
            },
            "delete beyond the high watermark, and in a missing partition",
        ),
        F(
            f"{p}.delete_records_to_end",
            API.DELETE_RECORDS,
            2,
            lambda ctx: {
                "topics": [
                    {"name": ctx.name(topic), "partitions": [{"partition_index": 0, "offset": -1}]}
                ],
                "timeout_ms": 10000,
            },
            "delete up to the high watermark (offset -1)",
        ),
        F(f"{p}.after_delete_all", API.FETCH, 12, at(6), "from the end after deleting everything"),
    ]
    return Scenario("fetch positions", tuple(items))


def list_offsets() -> Scenario:
    topic, p = "rec-listoffsets", "list_offsets"
    items: list[Item] = [
        create(topic, 1, DATA),
        produce_now(topic, 0, batch(3)),
        produce_now(topic, 0, batch(3, first=10)),
    ]

    def at(ts: int, version: int = 9, **kw: Any) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: list_offsets_body(ctx, topic, 0, ts, **kw)

    specs = [
        ("earliest", EARLIEST, 9),
        ("latest", LATEST, 9),
        ("max_timestamp", MAX_TIMESTAMP, 9),
        ("max_timestamp_v6", MAX_TIMESTAMP, 6),
        ("earliest_local", EARLIEST_LOCAL, 9),
        ("latest_tiered", LATEST_TIERED, 9),
        ("earliest_pending_upload", EARLIEST_PENDING, 11),
        ("by_time_exact", T0 + 2, 9),
        ("by_time_between", T0 + 5, 9),
        ("by_time_before_all", T0 - 1000, 9),
        ("by_time_after_all", T0 + 1000, 9),
    ]
    items += [
        step(
            f"{p}.{label}",
            API.LIST_OFFSETS,
            v,
            at(ts),
            f"timestamp {ts - T0 if ts > 0 else ts}{' (T0-relative)' if ts > 0 else ''}",
        )
        for label, ts, v in specs
    ]
    items += [
        step(
            f"{p}.unknown_topic",
            API.LIST_OFFSETS,
            9,
            lambda ctx: list_offsets_body(ctx, "rec-never", 0, LATEST),
            "a topic that does not exist",
        ),
        step(
            f"{p}.bad_partition",
            API.LIST_OFFSETS,
            9,
            lambda ctx: list_offsets_body(ctx, topic, 9, LATEST),
            "a partition the topic does not have",
        ),
        step(
            f"{p}.future_leader_epoch",
            API.LIST_OFFSETS,
            9,
            at(LATEST, leader_epoch=7),
            "current_leader_epoch above the leader's",
        ),
        step(
            f"{p}.read_committed",
            API.LIST_OFFSETS,
            9,
            at(LATEST, isolation=1),
            "latest, read_committed (no transactions)",
        ),
        step(f"{p}.bad_spec", API.LIST_OFFSETS, 9, at(-7), "timestamp -7 (no such spec)"),
    ]
    return Scenario("list offsets", tuple(items))


def produce_errors() -> Scenario:
    topic, small, compact, strict, p = (
        "rec-errors",
        "rec-small",
        "rec-compact",
        "rec-strict-time",
        "produce.error",
    )
    P: Callable[..., Step] = step
    items: list[Item] = [
        create(topic, 2, DATA),
        create(small, 1, {**DATA, "max.message.bytes": "1000"}),
        create(compact, 1, {**DATA, "cleanup.policy": "compact"}),
        create(strict, 1, {**DATA, "message.timestamp.before.max.ms": "3600000"}),
    ]

    def to(
        logical: str, data: bytes | None, partition: int = 0, **kw: Any
    ) -> Callable[[Ctx], dict[str, Any]]:
        return lambda ctx: produce_body(ctx, 9, logical, partition, data, **kw)

    two_partitions: Callable[[Ctx], dict[str, Any]] = lambda ctx: {  # noqa: E731
        **produce_body(ctx, 9, topic, 0, None),
        "topic_data": [
            {
                "name": ctx.name(topic),
                "partition_data": [
                    {"index": 0, "records": batch(1)},
                    {"index": 7, "records": batch(1)},
                ],
            }
        ],
    }
    items += [
        P(
            f"{p}.unknown_topic",
            API.PRODUCE,
            9,
            to("rec-never", batch(1)),
            "to a topic that does not exist",
        ),
        P(
            f"{p}.bad_partition",
            API.PRODUCE,
            9,
            to(topic, batch(1), partition=9),
            "to a partition the topic does not have",
        ),
        P(
            f"{p}.one_bad_partition",
            API.PRODUCE,
            9,
            two_partitions,
            "one good partition and one that does not exist",
        ),
        P(
            f"{p}.too_large",
            API.PRODUCE,
            9,
            to(small, batch(1, value_size=2000)),
            "a batch over the topic's max.message.bytes (1000)",
        ),
        P(
            f"{p}.under_limit",
            API.PRODUCE,
            9,
            to(small, batch(1, value_size=100)),
            "a batch under it",
        ),
        P(
            f"{p}.bad_crc",
            API.PRODUCE,
            9,
            to(topic, bad_crc(batch(2))),
            "a batch whose CRC is wrong",
        ),
        P(f"{p}.truncated", API.PRODUCE, 9, to(topic, batch(2)[:-3]), "a batch cut short"),
        P(f"{p}.empty_records", API.PRODUCE, 9, to(topic, b""), "empty records"),
        P(
            f"{p}.null_records",
            API.PRODUCE,
            9,
            to(topic, None),
            "null records (Kafka 4.4 fails with a NullPointerException and never answers)",
            timeout=5.0,
        ),
        P(
            f"{p}.magic1",
            API.PRODUCE,
            9,
            to(topic, legacy_message_set(1, [b"old"])),
            "a message set of format v1 in Produce v9",
        ),
        P(f"{p}.acks_2", API.PRODUCE, 9, to(topic, batch(1), acks=2), "acks 2"),
        P(f"{p}.acks_1", API.PRODUCE, 9, to(topic, batch(1, first=20), acks=1), "acks 1"),
        P(
            f"{p}.acks_0",
            API.PRODUCE,
            9,
            to(topic, batch(1, first=21), acks=0),
            "acks 0: no answer is due",
            answer_due=False,
        ),
        P(
            f"{p}.acks_0_unknown_topic",
            API.PRODUCE,
            9,
            to("rec-never", batch(1), acks=0),
            "acks 0 to a topic that does not exist",
            answer_due=False,
        ),
        P(
            f"{p}.compacted_null_key",
            API.PRODUCE,
            9,
            to(compact, batch(2, key=None)),
            "records without keys to a compacted topic",
        ),
        P(
            f"{p}.compacted_one_null_key",
            API.PRODUCE,
            9,
            to(compact, batch(1) + batch(1, first=1, key=None)),
            "two batches to a compacted topic, the second without a key",
        ),
        P(
            f"{p}.compacted_null_key_v3",
            API.PRODUCE,
            3,
            lambda ctx: produce_body(ctx, 3, compact, 0, batch(2, key=None)),
            "the same at v3 (no record_errors field)",
        ),
        P(
            f"{p}.compacted_ok",
            API.PRODUCE,
            9,
            to(compact, batch(1, first=5)),
            "a keyed record to the compacted topic",
        ),
        P(
            f"{p}.timestamp_too_old",
            API.PRODUCE,
            9,
            to(strict, batch(2)),
            "timestamps older than message.timestamp.before.max.ms",
        ),
        P(
            f"{p}.timestamp_future",
            API.PRODUCE,
            9,
            to(topic, batch(1, ts=T0 * 3)),
            "a timestamp far in the future (message.timestamp.after.max.ms)",
        ),
        P(
            f"{p}.transactional_without_id",
            API.PRODUCE,
            9,
            to(topic, batch(1, producer_id=5, epoch=0, sequence=0, transactional=True)),
            "a transactional batch without a transactional id",
        ),
        P(
            f"{p}.unknown_topic_id",
            API.PRODUCE,
            13,
            lambda ctx: {
                **produce_body(ctx, 13, topic, 0, batch(1)),
                "topic_data": [
                    {
                        "topic_id": uuid.UUID(int=12345),
                        "partition_data": [{"index": 0, "records": batch(1)}],
                    }
                ],
            },
            "v13, a topic id that does not exist",
        ),
        P(
            f"{p}.fetch_stored",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 0),
            "what the good requests stored",
        ),
        P(
            f"{p}.fetch_compacted",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, compact, 0, 0),
            "what the compacted topic stored",
        ),
    ]
    return Scenario("produce errors", tuple(items))


def leader_epochs() -> Scenario:
    topic, p = "rec-epochs", "offset_for_leader_epoch"
    items: list[Item] = [create(topic, 1, DATA), produce_now(topic, 0, batch(4))]

    def body(ctx: Ctx, name: str, partition: int, current: int, epoch: int) -> dict[str, Any]:
        return {
            "replica_id": -1,
            "topics": [
                {
                    "topic": ctx.name(name),
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": current,
                            "leader_epoch": epoch,
                        }
                    ],
                }
            ],
        }

    cases = [
        ("epoch_0", topic, 0, 0, 0, "epoch 0 with the current leader epoch"),
        ("unknown_epoch", topic, 0, -1, 5, "an epoch the log never had"),
        ("future_current_epoch", topic, 0, 7, 0, "current_leader_epoch above the leader's"),
        ("unknown_topic", "rec-never", 0, -1, 0, "a topic that does not exist"),
        ("bad_partition", topic, 9, -1, 0, "a partition the topic does not have"),
    ]
    items += [
        step(
            f"{p}.{label}",
            API.OFFSET_FOR_LEADER_EPOCH,
            4,
            lambda ctx, t=t, pt=pt, c=c, e=e: body(ctx, t, pt, c, e),
            note,
        )
        for label, t, pt, c, e, note in cases
    ]
    return Scenario("offset for leader epoch", tuple(items))
