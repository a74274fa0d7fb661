"""OffsetCommit / OffsetFetch checks and offsets.retention.minutes expiry (fake clock)."""

from __future__ import annotations

from groupkit import Kit, subscription

from protocol.errors import ErrorCode as E
from protocol.group_records import (
    GroupMetadataKey,
    OffsetCommitKey,
    decode_key,
    decode_offset_commit_value,
)
from wirebroker.group import GroupConfig, GroupState, LeaveMember

MINUTE = 60_000


def expiry_config() -> GroupConfig:
    return GroupConfig(offsets_retention_ms=MINUTE, offsets_retention_check_interval_ms=10_000)


def tombstoned(k: Kit, since: int) -> list[object]:
    return [decode_key(r.key) for r in k.records[since:] if r.value is None]


# -- commit checks -------------------------------------------------------------------------


def test_member_commit_round_trips_offset_epoch_metadata() -> None:
    k = Kit()
    (leader,) = k.stable_group(1)
    k.now = 1234
    before = len(k.records)
    errors = k.commit(
        {("t", 0): 100, ("t", 1): 200, ("u", 0): 7},
        generation=1,
        member_id=leader,
        metadata="caf\u00e9 \U0001f600",
        leader_epoch=4,
    )
    assert set(errors.values()) == {E.NONE}
    new = k.records[before:]
    assert len(new) == 3
    assert all(r.partition == k.core.partition_for("g") for r in new)
    key = decode_key(new[0].key)
    assert key == OffsetCommitKey("g", "t", 0)
    assert new[0].value is not None
    value = decode_offset_commit_value(new[0].value)
    assert value.version == 3
    assert (value.offset, value.leader_epoch, value.metadata, value.commit_timestamp) == (
        100,
        4,
        "caf\u00e9 \U0001f600",
        1234,
    )
    fetched = k.fetch({"t": [0, 1, 5], "u": [0]})
    assert fetched["error_code"] == 0
    parts = {
        (t["name"], p["partition_index"]): (
            p["committed_offset"],
            p["committed_leader_epoch"],
            p["metadata"],
        )
        for t in fetched["topics"]
        for p in t["partitions"]
    }
    assert parts == {
        ("t", 0): (100, 4, "caf\u00e9 \U0001f600"),
        ("t", 1): (200, 4, "caf\u00e9 \U0001f600"),
        ("t", 5): (-1, -1, ""),
        ("u", 0): (7, 4, "caf\u00e9 \U0001f600"),
    }


def test_commit_checks_generation_member_and_rebalance() -> None:
    k = Kit()
    leader, follower = k.stable_group(2)
    assert k.commit({("t", 0): 1}, generation=2, member_id=leader) == {
        ("t", 0): E.ILLEGAL_GENERATION
    }
    assert k.commit({("t", 0): 1}, generation=1, member_id="stranger") == {
        ("t", 0): E.UNKNOWN_MEMBER_ID
    }
    assert k.commit({("t", 0): 1}, generation=1, member_id=leader, instance="who") == {
        ("t", 0): E.UNKNOWN_MEMBER_ID
    }
    k.join(leader)
    k.join(follower)  # -> CompletingRebalance, generation 2
    assert k.commit({("t", 0): 1}, generation=2, member_id=leader) == {
        ("t", 0): E.REBALANCE_IN_PROGRESS
    }
    assert k.fetched() == {}


def test_simple_consumer_commits_create_an_empty_group_without_metadata_record() -> None:
    k = Kit()
    assert k.commit({("t", 0): 5}, group="manual") == {("t", 0): E.NONE}
    g = k.core.group("manual")
    assert g is not None and g.state is GroupState.EMPTY and g.protocol_type is None
    assert [type(decode_key(r.key)) for r in k.records] == [OffsetCommitKey]
    assert k.fetched("manual") == {("t", 0): 5}
    # generation >= 0 for a group that does not exist
    assert k.commit({("t", 0): 1}, group="nope", generation=3, member_id="m", version=8) == {
        ("t", 0): E.ILLEGAL_GENERATION
    }
    assert k.commit({("t", 0): 1}, group="nope", generation=3, member_id="m", version=9) == {
        ("t", 0): E.GROUP_ID_NOT_FOUND
    }
    assert k.core.group("nope") is None


def test_simple_commit_to_empty_consumer_group_after_members_left() -> None:
    k = Kit()
    (leader,) = k.stable_group(1)
    k.leave(leader)
    assert k.commit({("t", 0): 9}) == {("t", 0): E.NONE}  # e.g. kafka-consumer-groups --reset
    assert k.fetched() == {("t", 0): 9}


def test_metadata_size_limit_counts_utf16_units() -> None:
    k = Kit()
    ok = "\U0001f600" * 2048  # 4096 UTF-16 code units: at the limit
    assert k.commit({("t", 0): 1}, metadata=ok) == {("t", 0): E.NONE}
    assert k.commit({("t", 1): 1}, metadata=ok + "x") == {("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    assert k.fetched() == {("t", 0): 1}


def test_null_metadata_is_stored_as_empty_string() -> None:
    k = Kit()
    k.commit({("t", 0): 3}, metadata=None)
    (part,) = k.fetch({"t": [0]})["topics"][0]["partitions"]
    assert part["metadata"] == ""


def test_commit_counts_as_heartbeat() -> None:
    k = Kit()
    (leader,) = k.stable_group(1)
    for _ in range(4):
        k.advance(8000)
        assert k.commit({("t", 0): k.now}, generation=1, member_id=leader) == {("t", 0): E.NONE}
    g = k.core.group("g")
    assert g is not None and g.state is GroupState.STABLE


def test_fetch_all_and_unknown_group() -> None:
    k = Kit()
    k.commit({("a", 0): 1, ("a", 2): 3, ("b", 1): 4})
    assert k.fetched() == {("a", 0): 1, ("a", 2): 3, ("b", 1): 4}
    nothing = k.fetch({"a": [0]}, group="unknown")
    assert nothing["topics"][0]["partitions"][0]["committed_offset"] == -1
    assert k.fetch(None, group="unknown") == {"group_id": "unknown", "topics": [], "error_code": 0}


# -- expiry --------------------------------------------------------------------------------


def test_explicit_retention_time_writes_v1_value_and_expires_at_its_time() -> None:
    k = Kit(expiry_config())
    k.commit({("t", 0): 1}, version=4, retention_time_ms=5000)
    assert k.records[-1].value is not None
    value = decode_offset_commit_value(k.records[-1].value)
    assert value.version == 1 and value.expire_timestamp == 5000
    before = len(k.records)
    k.advance(10_000)  # first check: expired (explicit time), long before the retention
    assert tombstoned(k, before) == [OffsetCommitKey("g", "t", 0), GroupMetadataKey("g")]
    assert k.core.group("g") is None


def test_empty_group_offsets_expire_counted_from_when_it_became_empty() -> None:
    k = Kit(expiry_config())
    a, b = k.stable_group(2)
    k.commit({("t", 0): 10, ("t", 1): 11}, generation=1, member_id=a)
    k.heartbeat(a, 1)
    k.heartbeat(b, 1)
    k.advance(5000)
    k.leave(members=[LeaveMember(a), LeaveMember(b)])  # Empty since t=5000
    before = len(k.records)
    k.advance(MINUTE)  # t=65000: the check at 60000 is too early (only 55 s empty)
    assert tombstoned(k, before) == []
    assert k.fetched() == {("t", 0): 10, ("t", 1): 11}
    k.advance(5000)  # the check at t=70000: empty for 65 s >= 60 s
    assert tombstoned(k, before) == [
        OffsetCommitKey("g", "t", 0),
        OffsetCommitKey("g", "t", 1),
        GroupMetadataKey("g"),
    ]
    assert k.core.group("g") is None and k.fetched() == {}


def test_stable_group_keeps_subscribed_topics_expires_others_by_commit_time() -> None:
    k = Kit(expiry_config())
    (m,) = k.stable_group(1, protocols=(("range", subscription("t")),), session=MINUTE * 10)
    k.commit({("t", 0): 1, ("old", 0): 2}, generation=1, member_id=m)
    before = len(k.records)
    for _ in range(12):
        k.advance(10_000)
        k.heartbeat(m, 1)
    assert tombstoned(k, before) == [OffsetCommitKey("g", "old", 0)]
    assert k.fetched() == {("t", 0): 1}
    g = k.core.group("g")
    assert g is not None and g.state is GroupState.STABLE


def test_non_consumer_group_with_members_never_expires() -> None:
    k = Kit(expiry_config())
    (m,) = k.stable_group(1, protocol_type="connect", session=MINUTE * 10)
    k.commit({("t", 0): 1}, generation=1, member_id=m)
    for _ in range(12):
        k.advance(10_000)
        k.heartbeat(m, 1)
    assert k.fetched() == {("t", 0): 1}


def test_simple_group_offsets_expire_one_by_one_by_commit_time() -> None:
    k = Kit(expiry_config())
    k.commit({("t", 0): 1})
    k.advance(30_000)
    k.commit({("t", 1): 2})
    before = len(k.records)
    k.advance(30_000)  # t=60000
    assert tombstoned(k, before) == [OffsetCommitKey("g", "t", 0)]
    assert k.core.group("g") is not None
    k.advance(30_000)  # t=90000
    assert tombstoned(k, before)[1:] == [OffsetCommitKey("g", "t", 1), GroupMetadataKey("g")]
    assert k.core.group("g") is None


def test_abandoned_empty_group_without_offsets_is_deleted_at_next_check() -> None:
    k = Kit(expiry_config())
    k.join()  # MEMBER_ID_REQUIRED; the client never comes back
    k.advance(10_000)
    assert k.core.group("g") is None
    assert [r.value is None for r in k.records] == [False, True]  # created, then tombstone
