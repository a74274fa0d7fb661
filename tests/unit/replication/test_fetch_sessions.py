"""The fetch-session cache (KIP-227), pure: ids, epochs, errors, Kafka's eviction rules (an
injected clock: every call takes now_ms), answers."""

from __future__ import annotations

import random

import pytest

from protocol.errors import ErrorCode
from wirebroker.replication.fetch_sessions import (
    FetchSessionError,
    FetchSessions,
    group_topics,
    named_once,
    next_epoch,
)

EVICT = 100  # min.incremental.fetch.session.eviction.ms in these tests


def fetch(offset: int) -> dict[str, int]:
    return {"fetch_offset": offset, "partition_max_bytes": 1 << 20}


def answer(hw: int, *, records: bytes = b"", error: int = 0, **extra: object) -> dict:
    return {
        "error_code": error,
        "high_watermark": hw,
        "log_start_offset": 0,
        "last_stable_offset": hw,
        "preferred_read_replica": -1,
        "records": records,
        **extra,
    }


def parts(n: int, topic: str = "t") -> list:
    return [((topic, i), fetch(0)) for i in range(n)]


def one_shard(slots: int, rng: int = 1) -> FetchSessions:
    return FetchSessions(slots, EVICT, shards=1, rng=random.Random(rng))


def test_epochs_start_at_one_and_wrap_past_int32_max() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1


def test_a_session_holds_its_partitions_and_expects_epoch_one() -> None:
    cache = FetchSessions(rng=random.Random(7))
    s = cache.maybe_create(False, False, [(("t", 0), fetch(0)), (("t", 1), fetch(5))], 10)
    assert s is not None and s.session_id != 0 and s.epoch == 1
    assert cache.get(s.session_id) is s and len(cache) == 1 and cache.partitions_cached == 2
    topics = s.request_topics("topic")
    assert topics == [{"topic": "t", "partitions": [fetch(0), fetch(5)]}]


def test_sessions_go_round_the_eight_shards_each_with_its_id_range() -> None:
    cache = FetchSessions(16, EVICT, rng=random.Random(3))
    span = (2**31 - 1) // 8
    made = [cache.maybe_create(False, False, parts(1), 0) for _ in range(16)]
    assert all(s is not None for s in made)
    for n, s in enumerate(made):
        assert s is not None and s.session_id // span == n % 8
    # each shard holds 16 // 8 = 2: a 17th session (no eviction possible yet) is refused
    assert cache.maybe_create(False, False, parts(1), 0) is None and len(cache) == 16


def test_fewer_slots_than_shards_make_no_session() -> None:
    cache = FetchSessions(7, EVICT)
    assert cache.maybe_create(True, True, parts(1), 0) is None and len(cache) == 0


def test_update_replaces_adds_and_forgets_and_moves_the_epoch() -> None:
    """Named partitions replace or join, then forgotten ones leave (named and forgotten in
    one request: gone, as in Kafka's FetchSession.update)."""
    cache = FetchSessions()
    s = cache.maybe_create(True, True, [(("id", 0), fetch(0)), (("id", 1), fetch(0))], 0)
    assert s is not None
    named = [(("id", 0), fetch(3)), (("id", 2), fetch(9)), (("id", 3), fetch(1))]
    got = cache.update(s.session_id, 1, True, named, [("id", 1), ("id", 3)], 5)
    assert got is s and s.epoch == 2 and s.last_used_ms == 5
    assert {k: c.fetch["fetch_offset"] for k, c in s.partitions.items()} == {
        ("id", 0): 3,
        ("id", 2): 9,
    }
    assert cache.partitions_cached == 2


def test_a_partition_named_twice_counts_once_in_its_first_place_with_its_last_data() -> None:
    named = [(("a", 0), fetch(0)), (("a", 1), fetch(1)), (("b", 0), fetch(2)), (("a", 0), fetch(5))]
    once = named_once(named)
    assert [(k, f["fetch_offset"]) for k, f in once.items()] == [
        (("a", 0), 5),
        (("a", 1), 1),
        (("b", 0), 2),
    ]
    # consecutive partitions of a topic are one entry, a topic coming back another
    grouped = group_topics({**once, ("a", 2): fetch(7)}, "topic")
    assert [(t["topic"], [f["fetch_offset"] for f in t["partitions"]]) for t in grouped] == [
        ("a", [5, 1]),
        ("b", [2]),
        ("a", [7]),
    ]


def test_a_session_holds_a_partition_named_twice_once() -> None:
    """INITIAL and incremental requests naming a partition twice: one cached entry, the last
    fetch data, the size counted once; forgotten twice it is forgotten."""
    cache = FetchSessions()
    s = cache.maybe_create(
        False, False, [(("t", 0), fetch(0)), (("t", 1), fetch(0)), (("t", 0), fetch(4))], 0
    )
    assert s is not None
    assert [(k, c.fetch["fetch_offset"]) for k, c in s.partitions.items()] == [
        (("t", 0), 4),
        (("t", 1), 0),
    ]
    assert cache.partitions_cached == 2
    named = [(("t", 2), fetch(1)), (("t", 2), fetch(3)), (("t", 0), fetch(6))]
    cache.update(s.session_id, 1, False, named, [("t", 1), ("t", 1)], 1)
    assert [(k, c.fetch["fetch_offset"]) for k, c in s.partitions.items()] == [
        (("t", 0), 6),
        (("t", 2), 3),
    ]
    assert cache.partitions_cached == 2


def test_a_session_left_empty_is_closed() -> None:
    cache = FetchSessions()
    s = cache.maybe_create(False, False, parts(2), 0)
    assert s is not None
    assert cache.update(s.session_id, 1, False, [], [("t", 0), ("t", 1)], 1) is None
    assert cache.get(s.session_id) is None and cache.partitions_cached == 0


@pytest.mark.parametrize(
    ("session_id", "epoch", "by_id", "code"),
    [
        (None, 2, False, ErrorCode.INVALID_FETCH_SESSION_EPOCH),  # expected 1
        (12345, 1, False, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),  # no such session
        (2**31 - 1, 1, False, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),  # beyond every shard
        (None, 1, True, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR),  # names, then ids
    ],
)
def test_requests_no_session_can_serve(session_id, epoch, by_id, code) -> None:
    cache = FetchSessions(rng=random.Random(1))
    s = cache.maybe_create(False, False, parts(1), 0)
    assert s is not None
    with pytest.raises(FetchSessionError) as err:
        cache.update(s.session_id if session_id is None else session_id, epoch, by_id, [], [], 1)
    assert err.value.code == code
    assert s.epoch == 1  # a refused request moves nothing


def test_a_session_is_found_by_its_id_alone() -> None:
    """Kafka binds a session to nothing but its id: any fetcher naming it and its epoch
    continues it (a consumer that reconnected, say)."""
    cache = FetchSessions()
    s = cache.maybe_create(False, False, parts(1), 0)
    assert s is not None and cache.update(s.session_id, 1, False, [], [], 1) is s


def test_a_full_shard_refuses_a_newcomer_while_every_session_is_new() -> None:
    cache = one_shard(2)
    a = cache.maybe_create(False, False, parts(1), 0)
    b = cache.maybe_create(False, False, parts(1), 0)
    assert a and b
    assert cache.maybe_create(False, False, parts(50), EVICT) is None  # not older than EVICT
    assert cache.evictions == 0 and len(cache) == 2


def test_a_stale_session_is_evicted_by_anyone() -> None:
    """Rule 1: unused for more than eviction_ms, the least recently used goes, whatever
    its privilege or size against the newcomer's."""
    cache = one_shard(2)
    a = cache.maybe_create(True, False, parts(100), 0)
    b = cache.maybe_create(True, False, parts(100), 0)
    assert a and b
    cache.update(b.session_id, 1, False, [], [], 50)  # b used at 50, a last at 0
    assert cache.maybe_create(False, False, parts(1), EVICT) is None  # a unused for EVICT
    c = cache.maybe_create(False, False, parts(1), EVICT + 1)  # a unused for EVICT + 1
    assert c is not None and cache.get(a.session_id) is None and cache.get(b.session_id) is b
    assert cache.evictions == 1


def test_a_follower_evicts_a_new_consumer_session() -> None:
    """Rule 2, privileged: an unprivileged session is evictable by a privileged newcomer
    however young, whatever their sizes."""
    cache = one_shard(1)
    consumer = cache.maybe_create(False, False, parts(500), 0)
    assert consumer is not None
    follower = cache.maybe_create(True, False, parts(1), 1)
    assert follower is not None and cache.get(consumer.session_id) is None
    # and a consumer cannot evict the young follower session
    assert cache.maybe_create(False, False, parts(900), 2) is None
    assert cache.get(follower.session_id) is follower


def test_a_young_follower_session_is_safe_even_from_followers() -> None:
    cache = one_shard(1)
    f1 = cache.maybe_create(True, False, parts(1), 0)
    assert f1 is not None
    cache.update(f1.session_id, 1, False, [], [], EVICT)  # used: touched at EVICT, age EVICT
    assert cache.maybe_create(True, False, parts(10), EVICT) is None
    # touched when older than eviction_ms: evictable by any bigger privileged newcomer
    cache.update(f1.session_id, 2, False, [], [], EVICT + 1)
    f2 = cache.maybe_create(True, False, parts(10), EVICT + 2)
    assert f2 is not None and cache.get(f1.session_id) is None


def test_an_old_session_is_evicted_only_by_a_bigger_newcomer() -> None:
    """Rule 2, any newcomer: the least valuable session created more than eviction_ms before
    (as last touched), if the newcomer is not less valuable (privilege, then size)."""
    cache = one_shard(2)
    small = cache.maybe_create(False, False, parts(5), 0)
    big = cache.maybe_create(False, False, parts(20), 0)
    assert small and big
    cache.update(small.session_id, 1, False, [], [], EVICT + 1)  # old now, used recently
    cache.update(big.session_id, 1, False, [], [], EVICT + 1)
    assert cache.maybe_create(False, False, parts(4), EVICT + 2) is None  # smaller than both
    got = cache.maybe_create(False, False, parts(6), EVICT + 2)  # beats the smaller one only
    assert got is not None and cache.get(small.session_id) is None
    assert cache.get(big.session_id) is big and cache.evictions == 1


def test_evictability_is_decided_when_the_session_was_last_touched() -> None:
    """A session not used since it was young stays unevictable for unprivileged newcomers
    (until stale), as Kafka's evictable maps are updated only by touch."""
    cache = one_shard(1)
    s = cache.maybe_create(False, False, parts(1), 0)
    assert s is not None
    cache.update(s.session_id, 1, False, [], [], EVICT // 2)
    assert cache.maybe_create(False, False, parts(99), EVICT + EVICT // 2) is None
    got = cache.maybe_create(False, False, parts(99), EVICT + EVICT // 2 + 1)  # stale now
    assert got is not None


def test_an_old_session_is_not_evicted_by_a_newcomer_of_its_size() -> None:
    """The newcomer's key has id 0, below any session's: of equal privilege and size it is
    the less valuable (Kafka's EvictableKey order)."""
    cache = one_shard(1)
    s = cache.maybe_create(False, False, parts(3), 0)
    assert s is not None
    cache.update(s.session_id, 1, False, [], [], EVICT + 1)
    assert cache.maybe_create(False, False, parts(3), EVICT + 2) is None
    assert cache.maybe_create(False, False, parts(4), EVICT + 2) is not None


def test_closing_counts_down_the_partitions_cached() -> None:
    cache = FetchSessions()
    s = cache.maybe_create(False, False, parts(3), 0)
    assert s is not None and cache.partitions_cached == 3
    cache.close(s.session_id)
    cache.close(s.session_id)
    cache.close(0)
    assert len(cache) == 0 and cache.partitions_cached == 0


def test_an_incremental_answer_keeps_what_changed_since_it_was_last_sent() -> None:
    cache = FetchSessions()
    s = cache.maybe_create(False, False, [(("t", 0), fetch(0))], 0)
    assert s is not None
    key = ("t", 0)
    assert s.must_answer(key, answer(0))  # never sent: always
    assert not s.must_answer(key, answer(0))  # nothing new
    assert s.must_answer(key, answer(4))  # the high watermark moved
    assert not s.must_answer(key, answer(4))
    assert not s.must_answer(key, {**answer(4), "last_stable_offset": 2})  # not LSO alone
    assert s.must_answer(key, answer(4, records=b"x"))  # records
    assert s.must_answer(key, answer(4, diverging_epoch={"epoch": 1, "end_offset": 2}))
    assert s.must_answer(key, {**answer(4), "log_start_offset": 2})  # log start moved
    assert s.must_answer(key, {**answer(4), "log_start_offset": 2, "preferred_read_replica": 1})
    assert not s.must_answer(("t", 9), answer(0))  # not in the session (forgotten)


def test_after_an_error_the_partition_is_sent_again_once_it_clears() -> None:
    cache = FetchSessions()
    s = cache.maybe_create(False, False, [(("t", 0), fetch(0))], 0)
    assert s is not None
    assert s.must_answer(("t", 0), answer(7))
    assert s.must_answer(("t", 0), answer(-1, error=int(ErrorCode.NOT_LEADER_OR_FOLLOWER)))
    assert s.must_answer(("t", 0), answer(7))  # the cached HW was set to -1


def test_partitions_that_sent_records_go_last_and_topics_run_in_order() -> None:
    cache = FetchSessions()
    s = cache.maybe_create(False, False, [*parts(2, "a"), *parts(2, "b")], 0)
    assert s is not None
    s.move_to_end(("a", 0))
    assert [t["topic"] for t in s.request_topics("topic")] == ["a", "b", "a"]
    assert list(s.partitions) == [("a", 1), ("b", 0), ("b", 1), ("a", 0)]
