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


class Consumer:
    """Raw Fetch requests of one consumer (replica -1) on one topic."""

    def __init__(self, wire: Wire, topic: str) -> None:
        self.wire, self.topic = wire, topic
        self.tid = topic_id(wire, topic)

    def fetch(
        self,
        sid: int,
        epoch: int,
        parts: dict[int, int],
        *,
        version: int = 12,
        forget: tuple[int, ...] = (),
    ) -> Any:
        naming: dict[str, Any] = {"topic_id": self.tid} if version >= 13 else {"topic": self.topic}
        partitions = [
            {
                "partition": i,
                "current_leader_epoch": -1,
                "fetch_offset": offset,
                "last_fetched_epoch": -1,
                "log_start_offset": -1,
                "partition_max_bytes": 1 << 20,
            }
            for i, offset in parts.items()
        ]
        body: dict[str, Any] = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": sid,
            "session_epoch": epoch,
            "topics": [{**naming, "partitions": partitions}] if parts else [],
            "forgotten_topics_data": [{**naming, "partitions": list(forget)}] if forget else [],
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
