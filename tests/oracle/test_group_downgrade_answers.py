"""KIP-848 online downgrade at a static member's join (Kafka 4.4's
validateOnlineDowngradeWithReplacedMember), raw requests, the same assertions against
wirebroker and Apache Kafka 4.4: a consumer group whose only consumer-protocol member is
static (instance "i1"); a classic JoinGroup of that instance id without a member id takes its
place, and the group becomes a classic group at that join:

- the same subscription: the JoinGroup is answered at once (a new member id, the replaced
  member's epoch as generation, no leader), the classic group is Stable with the joining
  member alone, SyncGroup gives it the replaced member's partitions, the replaced member's
  ConsumerGroupHeartbeat is GROUP_ID_NOT_FOUND "Group g is not a consumer group.";
- a subscription that moves the group epoch ("... with stale assignment."): the classic
  group is rebalancing (PreparingRebalance) after the answer.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from protocol.api import ApiKey
from protocol.messages import consumer_protocol_assignment as wire_assignment
from protocol.messages import consumer_protocol_subscription as wire_subscription
from wirebroker.testing.client import WireClient


class Group:
    def __init__(self, client: WireClient, group: str) -> None:
        self.client, self.group = client, group
        self.addr = client.bootstrap[0]
        deadline = time.monotonic() + 30
        while True:  # Kafka makes __consumer_offsets on the first FindCoordinator
            body = {"key_type": 0, "coordinator_keys": [group]}
            found = self.call(ApiKey.FIND_COORDINATOR, 4, body).coordinators[0]
            if found.error_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)

    def call(self, api: ApiKey, version: int, body: dict[str, Any]) -> Any:
        return self.client.request(self.addr, api, version, body)

    def heartbeat(self, member: str, epoch: int, topics: list[str] | None = None) -> Any:
        body = {
            "group_id": self.group,
            "member_id": member,
            "member_epoch": epoch,
            "instance_id": "i1",
            "rack_id": None,
            "rebalance_timeout_ms": 30_000 if epoch == 0 else -1,
            "subscribed_topic_names": topics,
            "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": [] if epoch == 0 else None,
        }
        return self.call(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, body)

    def join(self, topics: list[str]) -> Any:
        sub = wire_subscription.schema(1).build(
            {"topics": topics, "user_data": None, "owned_partitions": []}
        )
        body = {
            "group_id": self.group,
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 10_000,
            "member_id": "",
            "group_instance_id": "i1",
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": (1).to_bytes(2, "big") + bytes(sub)}],
            "reason": None,
        }
        return self.call(ApiKey.JOIN_GROUP, 9, body)

    def state(self) -> tuple[str, str, list[str | None]]:
        body = {"groups": [self.group], "include_authorized_operations": False}
        [g] = self.call(ApiKey.DESCRIBE_GROUPS, 5, body).groups
        listed = self.call(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
        [kind] = [x.group_type for x in listed.groups if x.group_id == self.group]
        return kind, g.group_state, [m.group_instance_id for m in g.members]


def _consumer_member(g: Group, topic: str) -> tuple[str, int]:
    """The static consumer-protocol member, once it holds both partitions of `topic`."""
    member = uuid.uuid4().hex[:22]
    answer = g.heartbeat(member, 0, [topic])
    assert answer.error_code == 0, answer
    epoch, deadline = answer.member_epoch, time.monotonic() + 30
    while not (answer.assignment and answer.assignment.topic_partitions):
        assert time.monotonic() < deadline, "no assignment"
        time.sleep(0.2)
        answer = g.heartbeat(member, epoch)
        epoch = answer.member_epoch
    return member, epoch


def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades(
    single_broker: str, unique: Callable[[str], str]
) -> None:
    topic = unique("down-t")
    with WireClient(single_broker) as client:
        client.create_topic(topic, 2)
        g = Group(client, unique("down-g"))
        old, epoch = _consumer_member(g, topic)
        joined = g.join([topic])
        assert joined.error_code == 0, joined
        assert (joined.generation_id, joined.leader, joined.members) == (epoch, "", [])
        assert (joined.protocol_type, joined.protocol_name) == ("consumer", "range")
        assert joined.member_id not in ("", old)
        assert g.state() == ("classic", "Stable", ["i1"])
        sync = {
            "group_id": g.group,
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "group_instance_id": "i1",
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [],
        }
        synced = g.call(ApiKey.SYNC_GROUP, 5, sync)
        assert synced.error_code == 0, synced
        assignment = wire_assignment.schema(1).parse(synced.assignment[2:])
        assert [(tp.topic, sorted(tp.partitions)) for tp in assignment.assigned_partitions] == [
            (topic, [0, 1])
        ]
        gone = g.heartbeat(old, epoch)
        assert (gone.error_code, gone.error_message) == (
            69,
            f"Group {g.group} is not a consumer group.",
        )


def test_a_downgrade_with_a_stale_assignment_rebalances(
    single_broker: str, unique: Callable[[str], str]
) -> None:
    topic, other = unique("down-t"), unique("down-u")
    with WireClient(single_broker) as client:
        client.create_topic(topic, 2)
        client.create_topic(other, 1)
        g = Group(client, unique("down-g"))
        _consumer_member(g, topic)
        joined = g.join([topic, other])  # a new subscription: the group epoch moves
        assert joined.error_code == 0, joined
        assert g.state() == ("classic", "PreparingRebalance", ["i1"])
