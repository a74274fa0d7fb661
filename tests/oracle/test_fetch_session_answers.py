"""Consumer fetch sessions (KIP-227) against Apache Kafka 4.4 and wirebroker: the same raw
Fetch sequence, the same observable answers (session ids differ: only whether one is 0, or the
one given before, is compared).

INITIAL opens a session (every partition answered); an incremental fetch with nothing new is
empty; after a produce only the partition with records comes back; a repeated epoch is
INVALID_FETCH_SESSION_EPOCH, an unknown id FETCH_SESSION_ID_NOT_FOUND, both with no partitions
and session 0, and neither moves the session; naming topics by id (v13+) in a session made by
name (v12) is FETCH_SESSION_TOPIC_ID_ERROR; forgetting every partition closes the session (a
sessionless, empty answer); FINAL closes it (a full sessionless answer) and the id is then
unknown.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode
from protocol.records import iter_batches

PARTS = 3


@pytest.fixture
def wire(single_broker: str) -> Iterator[Wire]:
    with Wire(single_broker) as w:
        yield w


def topic_id(wire: Wire, topic: str) -> Any:
    resp = wire.call(
        ApiKey.METADATA,
        12,
        {
            "topics": [{"topic_id": uuid.UUID(int=0), "name": topic}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    return resp.topics[0].topic_id


Parts = dict[int, int] | list[tuple[int, int]]


class Consumer:
    """Raw Fetch requests of one consumer (replica -1) on one topic (or several: `entries`)."""

    def __init__(self, wire: Wire, topic: str) -> None:
        self.wire, self.topic = wire, topic
        self.ids = {topic: topic_id(wire, topic)}

    def naming(self, topic: str, version: int) -> dict[str, Any]:
        if version < 13:
            return {"topic": topic}
        if topic not in self.ids:
            self.ids[topic] = topic_id(self.wire, topic)
        return {"topic_id": self.ids[topic]}

    def fetch(
        self,
        sid: int,
        epoch: int,
        parts: Parts,
        *,
        version: int = 12,
        forget: tuple[int, ...] = (),
    ) -> Any:
        """A Fetch of `parts` (partition -> offset, or (partition, offset) pairs, a partition
        possibly twice) of the topic, forgetting `forget`."""
        entries = [(self.topic, parts)] if parts else []
        forgotten = [(self.topic, forget)] if forget else []
        return self.fetch_entries(sid, epoch, entries, version=version, forget=forgotten)

    def fetch_entries(
        self,
        sid: int,
        epoch: int,
        entries: list[tuple[str, Parts]],
        *,
        version: int = 12,
        forget: list[tuple[str, tuple[int, ...]]] | None = None,
    ) -> Any:
        """A Fetch whose `topics` are `entries` as given (a topic possibly in two entries)."""
        topics = [
            {
                **self.naming(topic, version),
                "partitions": [
                    {
                        "partition": i,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                    for i, offset in (parts.items() if isinstance(parts, dict) else parts)
                ],
            }
            for topic, parts in entries
        ]
        body: dict[str, Any] = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": sid,
            "session_epoch": epoch,
            "topics": topics,
            "forgotten_topics_data": [
                {**self.naming(topic, version), "partitions": list(indexes)}
                for topic, indexes in forget or []
            ],
            "rack_id": "",
        }
        if version >= 15:
            del body["replica_id"]
            body["replica_state"] = {"replica_id": -1, "replica_epoch": -1}
        return self.wire.call(ApiKey.FETCH, version, body)


def shape(resp: Any, sid: int) -> tuple[Any, ...]:
    """What both brokers must agree on: the error, whether the session is none / the one
    given, and per partition (error, high watermark, whether records came)."""
    session = "none" if resp.session_id == 0 else "same" if resp.session_id == sid else "new"
    return (
        resp.error_code,
        session,
        [
            (p.partition_index, p.error_code, p.high_watermark, bool(p.records))
            for t in resp.responses
            for p in t.partitions
        ],
    )


def test_a_consumer_session_sequence(wire: Wire, unique: Callable[[str], str]) -> None:
    topic = unique("fsess")
    wire.create_topic(topic, PARTS)
    wire.produce(topic, 0, [(None, b"a"), (None, b"b")])
    c = Consumer(wire, topic)
    first = c.fetch(0, 0, {0: 0, 1: 0, 2: 0})
    sid = first.session_id
    assert sid != 0
    assert shape(first, sid) == (0, "same", [(0, 0, 2, True), (1, 0, 0, False), (2, 0, 0, False)])
    # the consumer moved past its records: nothing new
    assert shape(c.fetch(sid, 1, {0: 2}), sid) == (0, "same", [])
    # a produce on partition 1: only it comes back
    wire.produce(topic, 1, [(None, b"c")])
    assert shape(c.fetch(sid, 2, {}), sid) == (0, "same", [(1, 0, 1, True)])
    # a repeated epoch, an unknown session: refused, and they move nothing
    bad_epoch = (ErrorCode.INVALID_FETCH_SESSION_EPOCH, "none", [])
    assert shape(c.fetch(sid, 2, {}), sid) == bad_epoch
    unknown = 1 if sid != 1 else 2
    not_found = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "none", [])
    assert shape(c.fetch(unknown, 1, {}), sid) == not_found
    assert shape(c.fetch(sid, 3, {1: 1}), sid) == (0, "same", [])
    # by topic id in a session made by name
    topic_id_error = (ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, "none", [])
    assert shape(c.fetch(sid, 4, {}, version=13), sid) == topic_id_error
    # FINAL: closed, a full sessionless answer; then the id is unknown
    assert shape(c.fetch(sid, -1, {0: 2}), sid) == (0, "none", [(0, 0, 2, False)])
    assert shape(c.fetch(sid, 4, {}), sid) == not_found


@pytest.mark.parametrize("version", [12, 17])
def test_forgetting_every_partition_closes_the_session(
    wire: Wire, unique: Callable[[str], str], version: int
) -> None:
    topic = unique("fsess-forget")
    wire.create_topic(topic, PARTS)
    c = Consumer(wire, topic)
    sid = c.fetch(0, 0, {0: 0, 1: 0}, version=version).session_id
    assert sid != 0
    # a new partition joins, one leaves: the joiner is answered (never sent before)
    joined = c.fetch(sid, 1, {2: 0}, version=version, forget=(0,))
    assert shape(joined, sid) == (0, "same", [(2, 0, 0, False)])
    gone = c.fetch(sid, 2, {}, version=version, forget=(1, 2))
    assert shape(gone, sid) == (0, "none", [])
    not_found = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "none", [])
    assert shape(c.fetch(sid, 3, {}, version=version), sid) == not_found
    # INITIAL naming a session closes it and opens another
    sid = c.fetch(0, 0, {0: 0}, version=version).session_id
    again = c.fetch(sid, 0, {0: 0}, version=version)
    assert again.session_id not in (0, sid)
    assert shape(c.fetch(sid, 1, {}, version=version), sid) == not_found


def offsets_shape(resp: Any, sid: int) -> tuple[Any, ...]:
    """The error, the session (as `shape`), and per topic entry (its name or id, then per
    partition: error, base offset of the first batch answered or None)."""
    got = resp.get("session_id", 0)  # none before v7
    session = "none" if got == 0 else "same" if got == sid else "new"
    entries = []
    for t in resp.responses:
        parts = []
        for p in t.partitions:
            batches = list(iter_batches(p.records or b""))
            parts.append(
                (p.partition_index, p.error_code, batches[0][1].base_offset if batches else None)
            )
        entries.append((t.get("topic") or t.get("topic_id"), parts))
    return resp.get("error_code", 0), session, entries


def two_topics(
    wire: Wire, unique: Callable[[str], str], version: int
) -> tuple[Consumer, tuple[str, Any], tuple[str, Any]]:
    """Topics t (2 partitions; 3 one-record batches in partition 0, offsets 0, 1, 2) and u (1
    partition, empty): a consumer of t, then each topic's (name, how answers name it)."""
    t, u = unique("fsess-dup"), unique("fsess-dup-u")
    wire.create_topic(t, 2)
    wire.create_topic(u, 1)
    for value in (b"a", b"b", b"c"):
        wire.produce(t, 0, [(None, value)])
    c = Consumer(wire, t)
    if version < 13:
        return c, (t, t), (u, u)
    return c, (t, c.naming(t, version)["topic_id"]), (u, c.naming(u, version)["topic_id"])


@pytest.mark.parametrize("version", [4, 12, 17])
def test_a_partition_named_twice_is_read_once_with_its_last_fetch_data(
    wire: Wire, unique: Callable[[str], str], version: int
) -> None:
    """No error: a partition named twice (in one entry or two of its topic) is answered once,
    where it was first named, from the offset it was last named with; consecutive entries of
    a topic are one entry of the answer."""
    c, (t, tn), (u, un) = two_topics(wire, unique, version)
    sessionless = -1 if version >= 7 else 0

    def full(entries: list[tuple[str, Parts]]) -> tuple[Any, ...]:
        return offsets_shape(c.fetch_entries(0, sessionless, entries, version=version), 0)

    assert full([(t, [(0, 0), (0, 2)])]) == (0, "none", [(tn, [(0, 0, 2)])])
    assert full([(t, [(0, 2), (1, 0)]), (u, [(0, 0)]), (t, [(0, 1)])]) == (
        0,
        "none",
        [(tn, [(0, 0, 1), (1, 0, None)]), (un, [(0, 0, None)])],
    )
    assert full([(t, [(0, 0)]), (t, [(1, 0)])]) == (0, "none", [(tn, [(0, 0, 0), (1, 0, None)])])
    assert full([(t, [(0, 0)]), (u, [(0, 0)]), (t, [(1, 0)])]) == (
        0,
        "none",
        [(tn, [(0, 0, 0)]), (un, [(0, 0, None)]), (tn, [(1, 0, None)])],
    )


@pytest.mark.parametrize("version", [12, 17])
def test_a_session_counts_a_partition_named_twice_once(
    wire: Wire, unique: Callable[[str], str], version: int
) -> None:
    """INITIAL, incremental and forgotten lists naming a partition twice: one cached entry
    with the last fetch data, answered once; forgetting it twice forgets it."""
    c, (t, tn), (u, un) = two_topics(wire, unique, version)
    first = c.fetch_entries(
        0, 0, [(t, [(0, 0)]), (u, [(0, 0)]), (t, [(1, 0), (0, 1)])], version=version
    )
    sid = first.session_id
    assert sid != 0
    assert offsets_shape(first, sid) == (
        0,
        "same",
        [(tn, [(0, 0, 1)]), (un, [(0, 0, None)]), (tn, [(1, 0, None)])],
    )
    # 0@0 then 0@3 (its end): the last counts, nothing to answer
    assert offsets_shape(c.fetch(sid, 1, [(0, 0), (0, 3)], version=version), sid) == (0, "same", [])
    assert offsets_shape(c.fetch(sid, 2, {}, version=version), sid) == (0, "same", [])
    # 0@3 then 0@2: the batch at 2 comes back, and again next time (the session holds 2)
    again = (0, "same", [(tn, [(0, 0, 2)])])
    assert offsets_shape(c.fetch(sid, 3, [(0, 3), (0, 2)], version=version), sid) == again
    assert offsets_shape(c.fetch(sid, 4, {}, version=version), sid) == again
    # forgotten twice: gone once; the session goes on until its last partition is forgotten
    forget_twice = [(t, (1, 1)), (u, (0,)), (u, (0,))]
    assert offsets_shape(
        c.fetch_entries(sid, 5, [(t, [(0, 3)])], version=version, forget=forget_twice), sid
    ) == (
        0,
        "same",
        [],
    )
    gone = c.fetch_entries(sid, 6, [], version=version, forget=[(t, (0, 0))])
    assert offsets_shape(gone, sid) == (0, "none", [])
