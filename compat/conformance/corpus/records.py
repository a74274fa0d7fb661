"""Records: produce every codec and timestamp type, fetch at every position, list offsets by
every spec, and the error paths of Produce, Fetch, ListOffsets and OffsetForLeaderEpoch.

The steps are tables (module constants); each scenario function puts its stage-setting
actions (topics, records) in front.
"""

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

Body = Callable[[Ctx], dict[str, Any]]
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING = -4, -5, -6


def codecs() -> Scenario:
    topic = "rec-codecs"
    items: list[Item] = [create(topic, 1, DATA)]
    for i, (name, codec) in enumerate(CODECS.items()):
        data = batch(3, first=3 * i, compression=codec)
        items.append(
            step(
                f"produce.codec.{name}",
                API.PRODUCE,
                9,
                lambda ctx, data=data: produce_body(ctx, 9, topic, 0, data),
                f"a {name} batch of 3 records",
            )
        )
    fetch_all = step(
        "produce.codec.fetch_all",
        API.FETCH,
        12,
        lambda ctx: fetch_body(ctx, topic, 0, 0),
        "every batch as stored",
    )
    return Scenario("produce every codec", (*items, fetch_all))


def _timestamp_steps(topic: str, label: str) -> list[Item]:
    """Two batches, a fetch, and the offset of the largest timestamp. On a LogAppendTime topic
    that offset depends on whether the two appends fell in the same millisecond (a timing, not
    a behaviour: seen both ways on both brokers), so there it is asked after the first batch,
    whose records share one append time."""
    p = f"produce.timestamps.{label}"
    max_timestamp = step(
        f"{p}.list_offsets_max_timestamp",
        API.LIST_OFFSETS,
        9,
        lambda ctx: list_offsets_body(ctx, topic, 0, MAX_TIMESTAMP),
        "the record with the largest timestamp",
    )
    log_append = label == "log_append_time"
    items: list[Item] = []
    for codec in ("none", "zstd"):
        data = batch(2, compression=CODECS[codec])
        items.append(
            step(
                f"{p}.{codec}",
                API.PRODUCE,
                9,
                lambda ctx, d=data: produce_body(ctx, 9, topic, 0, d),
                f"a {codec} batch of 2",
            )
        )
        if log_append and codec == "none":
            items.append(max_timestamp)
    items.append(
        step(
            f"{p}.fetch",
            API.FETCH,
            12,
            lambda ctx: fetch_body(ctx, topic, 0, 0),
            "the stored batches",
        )
    )
    if not log_append:
        items.append(max_timestamp)
    return items


def timestamps() -> Scenario:
    create_t, append_t = "rec-createtime", "rec-logappendtime"
    items: list[Item] = [
        create(create_t, 1, DATA),
        create(append_t, 1, {**DATA, "message.timestamp.type": "LogAppendTime"}),
        *_timestamp_steps(create_t, "create_time"),
        *_timestamp_steps(append_t, "log_append_time"),
    ]
    return Scenario("produce both timestamp types", tuple(items))


POSITIONS = "rec-positions"


def at(offset: int, **kw: Any) -> Body:
    """Fetch v12 from `offset` of partition 0 of the positions topic."""
    return lambda ctx: fetch_body(ctx, POSITIONS, 0, offset, **kw)


def F(name: str, version: int, body: Body, note: str, **kw: Any) -> Step:
    return step(f"fetch.{name}", API.FETCH, version, body, note, **kw)


def _delete_records(partitions: list[tuple[int, int]]) -> Body:
    return lambda ctx: {
        "topics": [
            {
                "name": ctx.name(POSITIONS),
                "partitions": [{"partition_index": p, "offset": o} for p, o in partitions],
            }
        ],
        "timeout_ms": 10000,
    }


def _unknown_topic_id(ctx: Ctx) -> dict[str, Any]:
    body = fetch_body(ctx, POSITIONS, 0, 0)
    return {**body, "topics": [{**body["topics"][0], "topic_id": uuid.UUID(int=12345)}]}


FETCH_POSITIONS: tuple[Item, ...] = (
    F("start", 12, at(0), "from offset 0 (three batches of 2)"),
    F("middle", 12, at(3), "from offset 3 (inside the second batch)"),
    F("end", 12, at(6), "from the log end offset (nothing yet)"),
    F("beyond_end", 12, at(7), "beyond the log end"),
    F("negative", 12, at(-1), "offset -1"),
    F("small_max_bytes", 12, at(0, max_bytes=10), "partition_max_bytes 10: the first batch anyway"),
    F("long_poll_empty", 12, at(6, max_wait_ms=100), "a long poll at the end that times out"),
    F(
        "empty_partition",
        12,
        lambda ctx: fetch_body(ctx, POSITIONS, 1, 0),
        "from an empty partition",
    ),
    F(
        "bad_partition",
        12,
        lambda ctx: fetch_body(ctx, POSITIONS, 9, 0),
        "from a partition the topic does not have",
    ),
    F(
        "unknown_topic",
        12,
        lambda ctx: fetch_body(ctx, "rec-never", 0, 0),
        "from a topic that does not exist",
    ),
    F("unknown_topic_id", 13, _unknown_topic_id, "by a topic id that does not exist"),
    F("future_leader_epoch", 12, at(0, leader_epoch=7), "current_leader_epoch above the leader's"),
    F("current_leader_epoch", 12, at(0, leader_epoch=0), "current_leader_epoch the leader's"),
    F("by_topic_id", 13, at(4), "v13, by topic id, from offset 4"),
    F(
        "session_new",
        12,
        at(0, session=(0, 0)),
        "a new fetch session (session epoch 0)",
        keep=keep("session", lambda a: a.session_id),
    ),
    F(
        "session_next",
        12,
        lambda ctx: fetch_body(ctx, POSITIONS, 0, 6, session=(ctx.vars["session"], 1)),
        "the session's next, incremental fetch",
    ),
    F(
        "session_unknown",
        12,
        at(0, session=(123456, 1)),
        "an incremental fetch in a session that does not exist",
    ),
    step(
        "fetch.delete_records",
        API.DELETE_RECORDS,
        2,
        _delete_records([(0, 3)]),
        "delete records before offset 3",
    ),
    F("before_start", 12, at(1), "from offset 1, before the log start offset now"),
    F("at_start", 12, at(3), "from the new log start offset"),
    step(
        "fetch.list_offsets_earliest",
        API.LIST_OFFSETS,
        9,
        lambda ctx: list_offsets_body(ctx, POSITIONS, 0, EARLIEST),
        "earliest after DeleteRecords",
    ),
    step(
        "fetch.delete_records_beyond",
        API.DELETE_RECORDS,
        2,
        _delete_records([(0, 99), (9, 0)]),
        "delete beyond the high watermark, and in a missing partition",
    ),
    step(
        "fetch.delete_records_to_end",
        API.DELETE_RECORDS,
        2,
        _delete_records([(0, -1)]),
        "delete up to the high watermark (offset -1)",
    ),
    F("after_delete_all", 12, at(6), "from the end after deleting everything"),
)


def fetch_positions() -> Scenario:
    stage = [create(POSITIONS, 2, DATA)] + [
        produce_now(POSITIONS, 0, batch(2, first=2 * i)) for i in range(3)
    ]
    return Scenario("fetch positions", (*stage, *FETCH_POSITIONS))


OFFSETS = "rec-listoffsets"


def by_time(ts: int, **kw: Any) -> Body:
    return lambda ctx: list_offsets_body(ctx, OFFSETS, 0, ts, **kw)


SPECS = (
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
)

LIST_OFFSETS: tuple[Item, ...] = (
    *(
        step(
            f"list_offsets.{label}",
            API.LIST_OFFSETS,
            v,
            by_time(ts),
            f"timestamp {ts - T0 if ts > 0 else ts}{' (T0-relative)' if ts > 0 else ''}",
        )
        for label, ts, v in SPECS
    ),
    step(
        "list_offsets.unknown_topic",
        API.LIST_OFFSETS,
        9,
        lambda ctx: list_offsets_body(ctx, "rec-never", 0, LATEST),
        "a topic that does not exist",
    ),
    step(
        "list_offsets.bad_partition",
        API.LIST_OFFSETS,
        9,
        lambda ctx: list_offsets_body(ctx, OFFSETS, 9, LATEST),
        "a partition the topic does not have",
    ),
    step(
        "list_offsets.future_leader_epoch",
        API.LIST_OFFSETS,
        9,
        by_time(LATEST, leader_epoch=7),
        "current_leader_epoch above the leader's",
    ),
    step(
        "list_offsets.read_committed",
        API.LIST_OFFSETS,
        9,
        by_time(LATEST, isolation=1),
        "latest, read_committed (no transactions)",
    ),
    step("list_offsets.bad_spec", API.LIST_OFFSETS, 9, by_time(-7), "timestamp -7 (no such spec)"),
)


def list_offsets() -> Scenario:
    stage = (
        create(OFFSETS, 1, DATA),
        produce_now(OFFSETS, 0, batch(3)),
        produce_now(OFFSETS, 0, batch(3, first=10)),
    )
    return Scenario("list offsets", (*stage, *LIST_OFFSETS))


ERRORS, SMALL, COMPACT, STRICT = "rec-errors", "rec-small", "rec-compact", "rec-strict-time"


def to(logical: str, data: bytes | None, partition: int = 0, **kw: Any) -> Body:
    """Produce v9 of `data` to one partition."""
    return lambda ctx: produce_body(ctx, 9, logical, partition, data, **kw)


def P(name: str, version: int, body: Body, note: str, **kw: Any) -> Step:
    return step(f"produce.error.{name}", API.PRODUCE, version, body, note, **kw)


def _two_partitions(ctx: Ctx) -> dict[str, Any]:
    parts = [{"index": 0, "records": batch(1)}, {"index": 7, "records": batch(1)}]
    return {
        **produce_body(ctx, 9, ERRORS, 0, None),
        "topic_data": [{"name": ctx.name(ERRORS), "partition_data": parts}],
    }


def _unknown_id(ctx: Ctx) -> dict[str, Any]:
    data = [
        {"topic_id": uuid.UUID(int=12345), "partition_data": [{"index": 0, "records": batch(1)}]}
    ]
    return {**produce_body(ctx, 13, ERRORS, 0, batch(1)), "topic_data": data}


PRODUCE_ERRORS: tuple[Item, ...] = (
    P("unknown_topic", 9, to("rec-never", batch(1)), "to a topic that does not exist"),
    P(
        "bad_partition",
        9,
        to(ERRORS, batch(1), partition=9),
        "to a partition the topic does not have",
    ),
    P("one_bad_partition", 9, _two_partitions, "one good partition and one that does not exist"),
    P(
        "too_large",
        9,
        to(SMALL, batch(1, value_size=2000)),
        "a batch over the topic's max.message.bytes (1000)",
    ),
    P("under_limit", 9, to(SMALL, batch(1, value_size=100)), "a batch under it"),
    P("bad_crc", 9, to(ERRORS, bad_crc(batch(2))), "a batch whose CRC is wrong"),
    P("truncated", 9, to(ERRORS, batch(2)[:-3]), "a batch cut short"),
    P("empty_records", 9, to(ERRORS, b""), "empty records"),
    P(
        "null_records",
        9,
        to(ERRORS, None),
        "null records (Kafka 4.4 fails with a NullPointerException and never answers)",
        timeout=5.0,
    ),
    P(
        "magic1",
        9,
        to(ERRORS, legacy_message_set(1, [b"old"])),
        "a message set of format v1 in Produce v9",
    ),
    P("acks_2", 9, to(ERRORS, batch(1), acks=2), "acks 2"),
    P("acks_1", 9, to(ERRORS, batch(1, first=20), acks=1), "acks 1"),
    P(
        "acks_0",
        9,
        to(ERRORS, batch(1, first=21), acks=0),
        "acks 0: no answer is due",
        answer_due=False,
    ),
    P(
        "acks_0_unknown_topic",
        9,
        to("rec-never", batch(1), acks=0),
        "acks 0 to a topic that does not exist",
        answer_due=False,
    ),
    P(
        "compacted_null_key",
        9,
        to(COMPACT, batch(2, key=None)),
        "records without keys to a compacted topic",
    ),
    P(
        "compacted_one_null_key",
        9,
        to(COMPACT, batch(1) + batch(1, first=1, key=None)),
        "two batches to a compacted topic, the second without a key",
    ),
    P(
        "compacted_null_key_v3",
        3,
        lambda ctx: produce_body(ctx, 3, COMPACT, 0, batch(2, key=None)),
        "the same at v3 (no record_errors field)",
    ),
    P("compacted_ok", 9, to(COMPACT, batch(1, first=5)), "a keyed record to the compacted topic"),
    P(
        "timestamp_too_old",
        9,
        to(STRICT, batch(2)),
        "timestamps older than message.timestamp.before.max.ms",
    ),
    P(
        "timestamp_future",
        9,
        to(ERRORS, batch(1, ts=T0 * 3)),
        "a timestamp far in the future (message.timestamp.after.max.ms)",
    ),
    P(
        "transactional_without_id",
        9,
        to(ERRORS, batch(1, producer_id=5, epoch=0, sequence=0, transactional=True)),
        "a transactional batch without a transactional id",
    ),
    P("unknown_topic_id", 13, _unknown_id, "v13, a topic id that does not exist"),
    step(
        "produce.error.fetch_stored",
        API.FETCH,
        12,
        lambda ctx: fetch_body(ctx, ERRORS, 0, 0),
        "what the good requests stored",
    ),
    step(
        "produce.error.fetch_compacted",
        API.FETCH,
        12,
        lambda ctx: fetch_body(ctx, COMPACT, 0, 0),
        "what the compacted topic stored",
    ),
)


def produce_errors() -> Scenario:
    stage = (
        create(ERRORS, 2, DATA),
        create(SMALL, 1, {**DATA, "max.message.bytes": "1000"}),
        create(COMPACT, 1, {**DATA, "cleanup.policy": "compact"}),
        create(STRICT, 1, {**DATA, "message.timestamp.before.max.ms": "3600000"}),
    )
    return Scenario("produce errors", (*stage, *PRODUCE_ERRORS))


EPOCHS = "rec-epochs"


def _epoch(name: str, partition: int, current: int, epoch: int) -> Body:
    return lambda ctx: {
        "replica_id": -1,
        "topics": [
            {
                "topic": ctx.name(name),
                "partitions": [
                    {"partition": partition, "current_leader_epoch": current, "leader_epoch": epoch}
                ],
            }
        ],
    }


LEADER_EPOCHS: tuple[Item, ...] = tuple(
    step(
        f"offset_for_leader_epoch.{label}",
        API.OFFSET_FOR_LEADER_EPOCH,
        4,
        _epoch(t, pt, c, e),
        note,
    )
    for label, t, pt, c, e, note in (
        ("epoch_0", EPOCHS, 0, 0, 0, "epoch 0 with the current leader epoch"),
        ("unknown_epoch", EPOCHS, 0, -1, 5, "an epoch the log never had"),
        ("future_current_epoch", EPOCHS, 0, 7, 0, "current_leader_epoch above the leader's"),
        ("unknown_topic", "rec-never", 0, -1, 0, "a topic that does not exist"),
        ("bad_partition", EPOCHS, 9, -1, 0, "a partition the topic does not have"),
    )
)


def leader_epochs() -> Scenario:
    return Scenario(
        "offset for leader epoch",
        (create(EPOCHS, 1, DATA), produce_now(EPOCHS, 0, batch(4)), *LEADER_EPOCHS),
    )
