"""What is left of a share group's state when its topic or the group itself is deleted
(KIP-932), raw requests, the same assertions against wirebroker and Apache Kafka 4.4:

- a topic a share group consumed is deleted and re-created under its name: the group's
  members are assigned the new topic once its share state is initialized, its records are
  delivered from the new topic's start (share.auto.offset.reset=earliest), nothing of the
  old topic's state (acknowledged records, the start offset) comes back, and the group epoch
  is steady again afterwards;
- a share group is deleted (DeleteGroups, its consumer closed) and a group of the same id
  made again: it starts from a new share state, without the old acknowledgements (the
  leader forgot the group's share partitions when its last share session closed).

The member side belongs to the share group coordinator: a wirebroker without
ShareGroupHeartbeat is skipped. tests/integration/test_share_cleanup.py adds a restart, and
the case where wirebroker differs: a group deleted while an old member's share session is
still open (Kafka 4.4 keeps serving the old share partition there; docs/share-groups.md).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from test_share_fetch_answers import _SOFTWARE, Share, _part

from protocol.api import ApiKey
from wirebroker.testing.client import WireClient


def _earliest(client: WireClient, group: str) -> None:
    config = {"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}
    body = {
        "resources": [{"resource_type": 32, "resource_name": group, "configs": [config]}],
        "validate_only": False,
    }
    assert client._any(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0].error_code == 0


def _skip_without_share_groups(client: WireClient) -> None:
    versions = client._any(ApiKey.API_VERSIONS, 3, _SOFTWARE)
    if not any(k.api_key == ApiKey.SHARE_GROUP_HEARTBEAT for k in versions.api_keys):
        pytest.skip("this broker does not serve ShareGroupHeartbeat (share groups) yet")


def _acquired(answer: Any) -> list[tuple[int, int, int]]:
    assert answer.error_code == 0, answer
    part = _part(answer)
    assert part.error_code == 0, part
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records]


def _heartbeat(s: Share, epoch: int) -> Any:
    body = {
        "group_id": s.group,
        "member_id": s.member,
        "member_epoch": epoch,
        "rack_id": None,
        "subscribed_topic_names": [s.topic] if epoch == 0 else None,
    }
    return s.client.request(s.addr, ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)


def _delete_topic(client: WireClient, name: str) -> None:
    body = {"topics": [{"name": name, "topic_id": uuid.UUID(int=0)}], "timeout_ms": 30_000}
    [result] = client._controller_request(ApiKey.DELETE_TOPICS, 6, body).responses
    assert result.error_code == 0, result


def _steady_epoch(s: Share, timeout_s: float = 30.0) -> int:
    """Heartbeat until the member holds partition 0 of the topic it now subscribes to and
    three heartbeats in a row keep its epoch: that epoch."""
    epoch, same, deadline = _heartbeat(s, 0).member_epoch, 0, time.monotonic() + timeout_s
    held = False
    while time.monotonic() < deadline:
        hb = _heartbeat(s, epoch)
        assert hb.error_code == 0, hb
        if hb.assignment is not None:
            held = any(tp.topic_id == s.tid for tp in hb.assignment.topic_partitions)
        same = same + 1 if hb.member_epoch == epoch and held else 0
        epoch = hb.member_epoch
        if same >= 3:
            return epoch
        time.sleep(0.2)
    raise AssertionError("the member's epoch did not settle")


def test_a_deleted_topic_re_created_starts_afresh(
    single_broker: str, unique: Callable[[str], str]
) -> None:
    topic, group = unique("share-del"), unique("sg-del")
    with WireClient(single_broker) as client:
        _skip_without_share_groups(client)
        client.create_topic(topic, 1)
        client.produce(topic, [b"a", b"b", b"c"])
        _earliest(client, group)
        first = Share(single_broker, topic, group)
        try:
            first.join()
            assert _acquired(first.fetch(0)) == [(0, 2, 1)]
            acked = first.ack(1, [(0, 2, (1,))])
            assert acked.error_code == 0 and _part(acked).error_code == 0
            _delete_topic(client, topic)
            client.create_topic(topic, 1)
            client.produce(topic, [b"x", b"y"])
            second = Share(single_broker, topic, group)
            assert second.tid != first.tid
            second.join()  # assigned the new topic once its share state is initialized
            assert _acquired(second.fetch(0)) == [(0, 1, 1)]  # from the new topic's start
            second.client.close()
            third = Share(single_broker, topic, group)
            try:
                _steady_epoch(third)
            finally:
                third.client.close()
        finally:
            first.client.close()


def test_a_deleted_group_made_again_starts_from_a_new_state(
    single_broker: str, unique: Callable[[str], str]
) -> None:
    topic, group = unique("share-grp"), unique("sg-grp")
    with WireClient(single_broker) as client:
        _skip_without_share_groups(client)
        client.create_topic(topic, 1)
        client.produce(topic, [b"a", b"b", b"c"])
        _earliest(client, group)
        old = Share(single_broker, topic, group)
        try:
            old.join()
            assert _acquired(old.fetch(0)) == [(0, 2, 1)]
            acked = old.ack(1, [(0, 0, (1,))])  # 0 accepted, 1-2 still acquired (locked)
            assert acked.error_code == 0 and _part(acked).error_code == 0
            # the consumer closes: its share session (1-2 released), its membership, then its
            # connection (the group has no session on the leader any more: Kafka 4.4 forgets
            # the group's share partitions then, not at the FINAL epoch)
            closed = old.fetch(-1, partitions=False)
            assert closed.error_code == 0, closed
            assert _heartbeat(old, -1).error_code == 0
            old.client.close()
            deleted = client._any(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})
            assert [(r.group_id, r.error_code) for r in deleted.results] == [(group, 0)]
            _earliest(client, group)
            new = Share(single_broker, topic, group)
            try:
                new.join()
                assert _acquired(new.fetch(0)) == [(0, 2, 1)]  # a new state, from 0
            finally:
                new.client.close()
        finally:
            old.client.close()
