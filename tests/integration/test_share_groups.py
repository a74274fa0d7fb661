"""A KIP-932 share group on a real broker over a real socket (the protocol layer as a raw
client): a member joins, is assigned the partitions once their share state is initialized,
the broker restarts on the same data and the group is still there (its records replayed
from `__consumer_offsets`): the member goes on at its epoch, two members share the
partitions, ListGroups shows the share type, and the group is deleted once empty."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from _share_wire import share_heartbeat as _hb

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from wirebroker.testing import running

# the group's assignment interval: 0, so each heartbeat's answer holds what it caused
OVERRIDES = {"group.share.assignment.interval.ms": "0"}


def _parts(answer: Any) -> set[int]:
    return {p for tp in answer.assignment.topic_partitions for p in tp.partitions}


def test_share_group_survives_a_restart(tmp_path: Path) -> None:
    with running(data_dir=tmp_path, overrides=OVERRIDES) as broker, Wire(broker.bootstrap) as w:
        w.ensure_offsets_topic()
        w.create_topic("t", 4)
        first = _hb(w, "m1", 0, ["t"])
        assert (first.member_epoch, first.heartbeat_interval_ms) == (2, 5000)
        assert first.assignment.topic_partitions == []  # initialized meanwhile
        second = _hb(w, "m1", 2)
        assert (second.member_epoch, _parts(second)) == (3, {0, 1, 2, 3})
    with running(data_dir=tmp_path, overrides=OVERRIDES) as broker, Wire(broker.bootstrap) as w:
        w.ensure_offsets_topic()
        again = _hb(w, "m1", 3)
        assert (again.member_epoch, again.assignment) == (3, None)  # nothing changed
        joined = _hb(w, "m2", 0, ["t"])
        back = _hb(w, "m1", 3)
        assert joined.member_epoch == back.member_epoch == 4
        assert len(_parts(joined)) == len(_parts(back)) == 2
        assert _parts(joined) | _parts(back) == {0, 1, 2, 3}
        body = {"group_ids": ["sg"], "include_authorized_operations": False}
        [described] = w.call(ApiKey.SHARE_GROUP_DESCRIBE, 1, body).groups
        assert (described.group_state, described.group_epoch) == ("Stable", 4)
        assert sorted(m.member_id for m in described.members) == ["m1", "m2"]
        listed = w.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
        assert [(g.group_id, g.group_type) for g in listed.groups] == [("sg", "share")]
        _hb(w, "m1", -1)
        _hb(w, "m2", -1)
        deleted = w.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["sg"]})
        assert [(r.group_id, r.error_code) for r in deleted.results] == [("sg", 0)]


def _describe_offsets(w: Wire) -> dict[int, int]:
    body = {"groups": [{"group_id": "sg", "topics": None}]}
    [group] = w.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, body).groups
    assert group.error_code == 0, group
    return {p.partition_index: p.start_offset for t in group.topics for p in t.partitions}


def test_share_group_offsets_are_altered_through_the_group_coordinator(tmp_path: Path) -> None:
    """AlterShareGroupOffsets goes through the group coordinator's view of the share group
    (Services.share_groups): refused while the group has members, then, empty, the start
    offsets are set, DescribeShareGroupOffsets shows them, and a member joining again is
    assigned the partitions without their state being initialized anew."""
    with running(data_dir=tmp_path, overrides=OVERRIDES) as broker, Wire(broker.bootstrap) as w:
        w.ensure_offsets_topic()
        w.create_topic("t", 2)
        _hb(w, "m1", 0, ["t"])
        assert _parts(_hb(w, "m1", 2)) == {0, 1}
        assert _describe_offsets(w) == {0: -1, 1: -1}  # initialized at -1: not started yet
        alter = {
            "group_id": "sg",
            "topics": [
                {
                    "topic_name": "t",
                    "partitions": [
                        {"partition_index": 0, "start_offset": 5},
                        {"partition_index": 1, "start_offset": 7},
                    ],
                }
            ],
        }
        refused = w.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
        assert refused.error_code == 68  # NON_EMPTY_GROUP
        _hb(w, "m1", -1)
        altered = w.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
        assert altered.error_code == 0, altered
        assert [p.error_code for t in altered.responses for p in t.partitions] == [0, 0]
        assert _describe_offsets(w) == {0: 5, 1: 7}
        again = _hb(w, "m2", 0, ["t"])
        assert _parts(again) == {0, 1}  # initialized already: assigned at once
        assert _describe_offsets(w) == {0: 5, 1: 7}  # not initialized again at -1
        delete = {"group_id": "sg", "topics": [{"topic_name": "t"}]}
        _hb(w, "m2", -1)
        deleted = w.call(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, delete)
        assert deleted.error_code == 0, deleted
        assert _describe_offsets(w) == {}  # no longer initialized: not listed


def _share_fetch(w: Wire, tid: Any, member: str) -> list[tuple[int, int]]:
    """A new share session's ShareFetch of partition 0: the acquired (first, last) ranges."""
    body = {
        "group_id": "sg",
        "member_id": member,
        "share_session_epoch": 0,
        "max_wait_ms": 2000,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 100,
        "batch_size": 100,
        "topics": [{"topic_id": tid, "partitions": [{"partition_index": 0}]}],
        "forgotten_topics_data": [],
    }
    answer = w.call(ApiKey.SHARE_FETCH, 2, body)
    assert answer.error_code == 0, answer
    [part] = answer.responses[0].partitions
    assert part.error_code == 0, part
    return [(a.first_offset, a.last_offset) for a in part.acquired_records]


def test_records_in_flight_over_a_restart(tmp_path: Path) -> None:
    """Share state through `__share_group_state` over a broker restart: an accepted record is
    never delivered again; records acquired but not acknowledged when the broker stopped are
    delivered again after it (their acquisition was never written, as in Kafka)."""
    from protocol.records import RecordSpec

    with running(data_dir=tmp_path, overrides=OVERRIDES) as broker, Wire(broker.bootstrap) as w:
        w.ensure_offsets_topic()
        w.create_topic("t", 1)
        _hb(w, "m1", 0, ["t"])
        assert _parts(_hb(w, "m1", 2)) == {0}
        w.produce("t", 0, [RecordSpec(None, b"r%d" % i) for i in range(3)])
        configs = [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]
        body = {
            "resources": [{"resource_type": 32, "resource_name": "sg", "configs": configs}],
            "validate_only": False,
        }
        [res] = w.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
        assert res.error_code == 0, res
        zero = uuid.UUID(int=0)
        meta = w.call(ApiKey.METADATA, 12, {"topics": [{"name": "t", "topic_id": zero}]})
        tid = meta.topics[0].topic_id
        assert _share_fetch(w, tid, "m1") == [(0, 2)]
        ack = {
            "group_id": "sg",
            "member_id": "m1",
            "share_session_epoch": 1,
            "topics": [
                {
                    "topic_id": tid,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "acknowledgement_batches": [
                                {"first_offset": 0, "last_offset": 0, "acknowledge_types": [1]}
                            ],
                        }
                    ],
                }
            ],
        }
        acked = w.call(ApiKey.SHARE_ACKNOWLEDGE, 2, ack)
        assert acked.error_code == 0 and acked.responses[0].partitions[0].error_code == 0
    with running(data_dir=tmp_path, overrides=OVERRIDES) as broker, Wire(broker.bootstrap) as w:
        w.ensure_offsets_topic()
        _hb(w, "m1", 3)
        assert _share_fetch(w, tid, "m1") == [(1, 2)]
