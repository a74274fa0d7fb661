"""The leader's fetch-session cache (KIP-227), pure: ids, epochs, errors, eviction, answers."""

from __future__ import annotations

import random

import pytest

from protocol.errors import ErrorCode
from wirebroker.replication.fetch_sessions import (
    FetchSessionError,
    FetchSessions,
    next_epoch,
)


def fetch(offset: int) -> dict[str, int]:
    return {"fetch_offset": offset, "partition_max_bytes": 1 << 20}


def answer(hw: int, *, records: bytes = b"", error: int = 0, **extra: object) -> dict:
    return {
        "error_code": error,
        "high_watermark": hw,
        "log_start_offset": 0,
        "last_stable_offset": hw,
        "records": records,
        **extra,
    }


def test_epochs_start_at_one_and_wrap_past_int32_max() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1


def test_a_session_holds_its_partitions_and_expects_epoch_one() -> None:
    cache = FetchSessions(rng=random.Random(7))
    s = cache.create(1, False, [(("t", 0), fetch(0)), (("t", 1), fetch(5))], now_ms=10)
    assert s.session_id != 0 and s.epoch == 1 and cache.get(s.session_id) is s
    assert set(s.partitions) == {("t", 0), ("t", 1)}
    topics = s.request_topics("topic")
    assert topics == [{"topic": "t", "partitions": [fetch(0), fetch(5)]}]


def test_update_replaces_adds_and_forgets_and_moves_the_epoch() -> None:
    """Named partitions replace or join, then forgotten ones leave (named and forgotten in
    one request: gone, as in Kafka's FetchSession.update)."""
    cache = FetchSessions()
    s = cache.create(1, True, [(("id", 0), fetch(0)), (("id", 1), fetch(0))], now_ms=0)
    named = [(("id", 0), fetch(3)), (("id", 2), fetch(9)), (("id", 3), fetch(1))]
    got = cache.update(s.session_id, 1, 1, True, named, [("id", 1), ("id", 3)], 5)
    assert got is s and s.epoch == 2 and s.last_used_ms == 5
    assert {k: c.fetch["fetch_offset"] for k, c in s.partitions.items()} == {
        ("id", 0): 3,
        ("id", 2): 9,
    }


@pytest.mark.parametrize(
    ("session_id", "epoch", "replica", "by_id", "code"),
    [
        (None, 2, 1, False, ErrorCode.INVALID_FETCH_SESSION_EPOCH),  # expected 1
        (None, 1, 2, False, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),  # another replica's
        (12345, 1, 1, False, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),  # no such session
        (None, 1, 1, True, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR),  # names, then ids
    ],
)
def test_requests_no_session_can_serve(session_id, epoch, replica, by_id, code) -> None:
    cache = FetchSessions(rng=random.Random(1))
    s = cache.create(1, False, [(("t", 0), fetch(0))], now_ms=0)
    with pytest.raises(FetchSessionError) as err:
        cache.update(
            s.session_id if session_id is None else session_id, epoch, replica, by_id, [], [], 1
        )
    assert err.value.code == code
    assert s.epoch == 1  # a refused request moves nothing


def test_one_session_per_replica_and_the_least_recently_used_evicted() -> None:
    cache = FetchSessions(max_sessions=2)
    a = cache.create(1, False, [], now_ms=0)
    b = cache.create(1, False, [], now_ms=1)  # the same follower again: replaces a
    assert cache.get(a.session_id) is None and len(cache) == 1
    c = cache.create(2, False, [], now_ms=2)
    cache.update(b.session_id, 1, 1, False, [], [], now_ms=3)  # b used after c
    d = cache.create(3, False, [], now_ms=4)  # full: c, the least recently used, goes
    assert cache.get(c.session_id) is None
    assert cache.get(b.session_id) is b and cache.get(d.session_id) is d


def test_an_incremental_answer_keeps_what_changed_since_it_was_last_sent() -> None:
    cache = FetchSessions()
    s = cache.create(1, False, [(("t", 0), fetch(0))], now_ms=0)
    key = ("t", 0)
    assert s.must_answer(key, answer(0))  # never sent: always
    assert not s.must_answer(key, answer(0))  # nothing new
    assert s.must_answer(key, answer(4))  # the high watermark moved
    assert not s.must_answer(key, answer(4))
    assert s.must_answer(key, answer(4, records=b"x"))  # records
    assert s.must_answer(key, answer(4, error=int(ErrorCode.FENCED_LEADER_EPOCH)))
    assert s.must_answer(key, answer(4, diverging_epoch={"epoch": 1, "end_offset": 2}))
    assert s.must_answer(key, {**answer(4), "log_start_offset": 2})  # log start moved
    assert s.must_answer(("t", 9), answer(0))  # not in the session (added meanwhile)
