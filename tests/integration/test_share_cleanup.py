"""A share group's state when its topic or the group is deleted, on a real broker over real
sockets (raw requests), restarted on its data: Kafka 4.4's cleanup (the group coordinator's
maybeCleanupShareGroupState, the share coordinator's on-topics-deleted tombstones, the
partition leader forgetting its share partitions). tests/oracle/test_share_cleanup_answers.py
holds the same answers to Apache Kafka 4.4."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from _share_wire import share_heartbeat as _hb

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.records import RecordSpec
from protocol.share_state_records import SHARE_SNAPSHOT, decode_key
from wirebroker.share_coordinator.config import SHARE_STATE_TOPIC
from wirebroker.share_coordinator.keys import SharePartitionKey
from wirebroker.testing import running

OVERRIDES = {"group.share.assignment.interval.ms": "0"}
ZERO = uuid.UUID(int=0)


def _held(answer: Any) -> dict[uuid.UUID, set[int]]:
    return {tp.topic_id: set(tp.partitions) for tp in answer.assignment.topic_partitions}


def _earliest(w: Wire) -> None:
    config = {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}
    body = {
        "resources": [{"resource_type": 32, "resource_name": "sg", "configs": [config]}],
        "validate_only": False,
    }
    [res] = w.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
    assert res.error_code == 0, res


def _topic_id(w: Wire, name: str) -> uuid.UUID:
    meta = w.call(ApiKey.METADATA, 12, {"topics": [{"name": name, "topic_id": ZERO}]})
    return meta.topics[0].topic_id  # type: ignore[no-any-return]


def _fetch(w: Wire, tid: uuid.UUID, member: str, epoch: int = 0, acks: Any = ()) -> Any:
    batches = [{"first_offset": a, "last_offset": b, "acknowledge_types": [t]} for a, b, t in acks]
    body = {
        "group_id": "sg",
        "member_id": member,
        "share_session_epoch": epoch,
        "max_wait_ms": 0 if acks else 2000,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "max_records": 100,
        "batch_size": 100,
        "topics": [
            {
                "topic_id": tid,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": batches}],
            }
        ],
        "forgotten_topics_data": [],
    }
    answer = w.call(ApiKey.SHARE_FETCH, 2, body)
    assert answer.error_code == 0, answer
    [part] = answer.responses[0].partitions
    assert part.error_code == 0 and part.acknowledge_error_code == 0, part
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records]


def _state_records(w: Wire, tid: uuid.UUID) -> list[tuple[int, bool]]:
    """(record type, tombstone) of each `__share_group_state` record of ("sg", tid, 0)."""
    key = SharePartitionKey("sg", tid, 0)
    out = []
    for record in w.read(SHARE_STATE_TOPIC, key.state_partition(50)):
        decoded = decode_key(record.key or b"")
        if decoded is not None and (decoded.group_id, decoded.topic_id) == ("sg", tid):
            out.append((decoded.record_type, record.value is None))
    return out


def test_a_deleted_topic_re_created_starts_afresh_also_after_a_restart(tmp_path: Path) -> None:
    with running(data_dir=tmp_path, overrides=OVERRIDES) as broker, Wire(broker.bootstrap) as w:
        w.ensure_offsets_topic()
        w.create_topic("t", 1)
        w.produce("t", 0, [RecordSpec(None, b"old%d" % i) for i in range(3)])
        _earliest(w)
        old = _topic_id(w, "t")
        _hb(w, "m1", 0, ["t"])
        assert _held(_hb(w, "m1", 2)) == {old: {0}}
        assert _fetch(w, old, "m1") == [(0, 2, 1)]
        assert _fetch(w, old, "m1", 1, acks=[(0, 2, 1)]) == []  # all accepted
        w.delete_topic("t")
        w.create_topic("t", 1)
        w.produce("t", 0, [RecordSpec(None, b"new%d" % i) for i in range(2)])
        new = _topic_id(w, "t")
        assert new != old
        moved = _hb(w, "m1", 3)  # the topic changed: nothing assigned until initialized
        assert (moved.member_epoch, _held(moved)) == (4, {})
        got = _hb(w, "m1", 4)
        assert (got.member_epoch, _held(got)) == (5, {new: {0}})
        assert _hb(w, "m1", 5).member_epoch == 5  # steady
        assert _fetch(w, new, "m1") == [(0, 1, 1)]  # from the new topic's start
        # the old topic's share state: tombstoned in __share_group_state
        assert _state_records(w, old)[-1] == (SHARE_SNAPSHOT, True)
    with running(data_dir=tmp_path, overrides=OVERRIDES) as broker, Wire(broker.bootstrap) as w:
        w.ensure_offsets_topic()
        again = _hb(w, "m1", 5)
        assert (again.member_epoch, again.assignment) == (5, None)  # nothing of the old topic
        assert _fetch(w, new, "m1") == [(0, 1, 1)]  # acquired, never acknowledged: again
        body = {"groups": [{"group_id": "sg", "topics": None}]}
        [group] = w.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1, body).groups
        assert [(t.topic_id, [p.partition_index for p in t.partitions]) for t in group.topics] == [
            (new, [0])
        ]


def test_a_deleted_group_made_again_starts_from_a_new_state(tmp_path: Path) -> None:
    """DeleteGroups while the old member's share session on the leader is still open: the
    new group of the same id neither sees its acknowledgements nor waits for its locks."""
    with running(data_dir=tmp_path, overrides=OVERRIDES) as broker, Wire(broker.bootstrap) as w:
        w.ensure_offsets_topic()
        w.create_topic("t", 1)
        w.produce("t", 0, [RecordSpec(None, b"r%d" % i) for i in range(3)])
        _earliest(w)
        tid = _topic_id(w, "t")
        _hb(w, "m1", 0, ["t"])
        _hb(w, "m1", 2)
        assert _fetch(w, tid, "m1") == [(0, 2, 1)]
        assert _fetch(w, tid, "m1", 1, acks=[(0, 0, 1)]) == []  # 1-2 still locked by m1
        _hb(w, "m1", -1)
        deleted = w.call(ApiKey.DELETE_GROUPS, 2, {"groups_names": ["sg"]})
        assert [(r.group_id, r.error_code) for r in deleted.results] == [("sg", 0)]
        _earliest(w)
        _hb(w, "m2", 0, ["t"])
        _hb(w, "m2", 2)
        assert _fetch(w, tid, "m2") == [(0, 2, 1)]
