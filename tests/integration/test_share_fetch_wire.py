"""Share partitions (KIP-932) over real sockets: raw ShareFetch / ShareAcknowledge requests
against a broker running in this process (`running(thread=True)`, so the test can initialise
the share state through the broker's persister as the group coordinator's ShareGroupHeartbeat
will: InitializeShareGroupState before it assigns a partition).

What passing proves: two members of one share group get disjoint records; ACCEPT, RELEASE and
REJECT over ShareAcknowledge; a released record comes back with its delivery count; an
acquisition lock that runs out makes the record deliverable again and wakes a long-polling
ShareFetch of another member (the broker's lock sweeper, on its own clock); the delivery count
limit archives a record and the share-partition start offset moves past it; the state written
through the persister; share session epochs. The member id is any id: Kafka's broker does not
ask the group coordinator on ShareFetch (compat/CONFORMANCE.md, share.fetch_not_a_member).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import trio

import wirebroker
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from protocol.records import decode_records, iter_batches
from wirebroker.share.persister import PartitionState

TOPIC, GROUP = "shared", "sg"
ACCEPT, RELEASE, REJECT = 1, 2, 3
OVERRIDES = {
    "num.partitions": 1,
    "group.share.min.record.lock.duration.ms": 1000,
    "group.share.record.lock.duration.ms": 1000,
    "group.share.delivery.count.limit": 3,
}


@pytest.fixture
def handle() -> Iterator[Any]:
    with wirebroker.running(thread=True, overrides=OVERRIDES) as broker:
        yield broker


def topic_id(client: Any, name: str) -> uuid.UUID:
    """The topic's id, from Metadata v12."""
    body = {
        "topics": [{"topic_id": uuid.UUID(int=0), "name": name}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    answer = client._any(ApiKey.METADATA, 12, body)
    return uuid.UUID(str(answer.topics[0].topic_id))


def _run(handle: Any, fn: Any, *args: Any) -> Any:
    """Run `await fn(*args)` on the broker's trio loop."""
    return trio.from_thread.run(fn, *args, trio_token=handle._trio_token)


def _fetch(
    client: Any, addr: Any, tid: uuid.UUID, member: str, epoch: int, *, wait_ms: int = 0
) -> Any:
    body = {
        "group_id": GROUP,
        "member_id": member,
        "share_session_epoch": epoch,
        "max_wait_ms": wait_ms,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 100,
        "batch_size": 100,
        "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0}]}] if epoch == 0 else [],
        "forgotten_topics_data": [],
    }
    answer = client.request(addr, ApiKey.SHARE_FETCH, 2, body)
    assert answer.error_code == 0, answer
    return answer


def _acquired(answer: Any) -> tuple[list[tuple[int, int, int]], list[bytes | None]]:
    ranges, values = [], []
    for topic in answer.responses:
        for p in topic.partitions:
            assert p.error_code == 0, p
            for a in p.acquired_records:
                ranges.append((a.first_offset, a.last_offset, a.delivery_count))
            for pos, _h in iter_batches(p.records):
                values += [r.value for r in decode_records(p.records, pos)]
    return ranges, values


def _ack(client: Any, addr: Any, tid: uuid.UUID, member: str, epoch: int, acks: Any) -> int:
    body = {
        "group_id": GROUP,
        "member_id": member,
        "share_session_epoch": epoch,
        "topics": [
            {
                "topic_id": tid,
                "partitions": [
                    {
                        "partition_index": 0,
                        "acknowledgement_batches": [
                            {"first_offset": a, "last_offset": b, "acknowledge_types": [t]}
                            for a, b, t in acks
                        ],
                    }
                ],
            }
        ],
    }
    answer = client.request(addr, ApiKey.SHARE_ACKNOWLEDGE, 2, body)
    assert answer.error_code == 0 and answer.acquisition_lock_timeout_ms == 1000
    [topic] = answer.responses
    [part] = topic.partitions
    return int(part.error_code)


def test_two_members_acknowledge_redeliver_and_archive(handle: Any) -> None:
    client = handle.client()
    client.create_topic(TOPIC, 1)
    tid = topic_id(client, TOPIC)
    persister = handle._broker.services.share_persister
    assert _run(handle, persister.initialize_state, GROUP, tid, 0, 0, 0) == 0
    client.produce(TOPIC, [b"a", b"b", b"c"])
    addr = client.bootstrap[0]
    one, two = client, handle.client()

    assert _acquired(_fetch(one, addr, tid, "m1", 0)) == ([(0, 2, 1)], [b"a", b"b", b"c"])
    assert _acquired(_fetch(two, addr, tid, "m2", 0)) == ([], [])
    assert _ack(one, addr, tid, "m1", 1, [(0, 0, ACCEPT), (1, 1, RELEASE), (2, 2, REJECT)]) == 0
    ranges, values = _acquired(_fetch(two, addr, tid, "m2", 1))
    assert ranges == [(1, 1, 2)] and b"b" in values  # the whole batch, offset 1 acquired
    # m2 does not acknowledge: its lock (1 s) runs out, the sweeper releases offset 1 and
    # wakes m1's long poll
    started = time.monotonic()
    ranges, _values = _acquired(_fetch(one, addr, tid, "m1", 2, wait_ms=10_000))
    assert ranges == [(1, 1, 3)]
    assert 0.5 < time.monotonic() - started < 9
    assert _ack(two, addr, tid, "m2", 2, [(1, 1, ACCEPT)]) == E.INVALID_RECORD_STATE
    assert _ack(one, addr, tid, "m1", 3, [(1, 1, RELEASE)]) == 0  # third delivery: archived
    state = _run(handle, persister.read_summary, GROUP, tid, 0, 0)
    assert isinstance(state, PartitionState) and state.start_offset == 3
    assert _acquired(_fetch(one, addr, tid, "m1", 4, wait_ms=50)) == ([], [])
    bad = client.request(addr, ApiKey.SHARE_FETCH, 2, {**_body_epoch(tid, "m1", 9)})
    assert (bad.error_code, bad.responses) == (E.INVALID_SHARE_SESSION_EPOCH, [])
    two.close()
    client.close()


def _body_epoch(tid: uuid.UUID, member: str, epoch: int) -> dict[str, Any]:
    return {
        "group_id": GROUP,
        "member_id": member,
        "share_session_epoch": epoch,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 100,
        "batch_size": 100,
        "topics": [],
        "forgotten_topics_data": [],
    }
