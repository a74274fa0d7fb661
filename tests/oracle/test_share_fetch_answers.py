"""ShareFetch / ShareAcknowledge (KIP-932) answers, raw requests, the same assertions against
wirebroker and Apache Kafka 4.4: a member joins a share group (ShareGroupHeartbeat, until its
partition is assigned: Kafka initialises the share state first), acquires six records, then
the corner cases: request checks (empty member id, a member id over 36 characters, an empty or
unknown group: a state never initialised answers -1 per partition), share session epochs,
acknowledgement batches Kafka refuses (types of the wrong length, first > last, unordered, past
the acquired records, RENEW without is_renew_ack), GAP on a record, KIP-1222 renewals (with
fetch parameters refused), FINAL epochs.

The member side belongs to the share group coordinator: a wirebroker without
ShareGroupHeartbeat is skipped.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from protocol.api import ApiKey
from protocol.errors import ErrorCode as E
from wirebroker.testing.client import WireClient

PAST_ACQUIRED = "Batch record not found. The last offset in request is past acquired records."


class Share:
    """A raw share consumer of one group and topic (partition 0)."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.client = WireClient(bootstrap)
        self.addr = self.client.bootstrap[0]
        self.topic, self.group = topic, group
        self.member = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        body = {
            "topics": [{"topic_id": uuid.UUID(int=0), "name": topic}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        self.tid = self.client._any(ApiKey.METADATA, 12, body).topics[0].topic_id

    def join(self, timeout_s: float = 30.0) -> None:
        """Heartbeat until partition 0 is assigned (polls: the group coordinator's pace)."""
        epoch, deadline = 0, time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            # the group coordinator (Kafka makes __consumer_offsets on the first FindCoordinator)
            found = self.client.request(
                self.addr,
                ApiKey.FIND_COORDINATOR,
                4,
                {"key_type": 0, "coordinator_keys": [self.group]},
            )
            if found.coordinators[0].error_code:
                time.sleep(0.2)
                continue
            hb = self.client.request(
                self.addr,
                ApiKey.SHARE_GROUP_HEARTBEAT,
                1,
                {
                    "group_id": self.group,
                    "member_id": self.member,
                    "member_epoch": epoch,
                    "rack_id": None,
                    "subscribed_topic_names": [self.topic] if epoch == 0 else None,
                },
            )
            if hb.error_code == 0:
                epoch = hb.member_epoch
                if hb.assignment and hb.assignment.topic_partitions:
                    return
            time.sleep(0.2)
        raise AssertionError("the member was not assigned the partition")

    def fetch(self, epoch: int, acks: Any = (), **kw: Any) -> Any:
        body = {
            "group_id": kw.pop("group", self.group),
            "member_id": kw.pop("member", self.member),
            "share_session_epoch": epoch,
            "max_wait_ms": kw.pop("max_wait_ms", 200),
            "min_bytes": kw.pop("min_bytes", 1),
            "max_bytes": kw.pop("max_bytes", 1 << 20),
            "max_records": kw.pop("max_records", 100),
            "batch_size": 100,
            "topics": [
                {
                    "topic_id": self.tid,
                    "partitions": [{"partition_index": 0, "acknowledgement_batches": _b(acks)}],
                }
            ]
            if kw.pop("partitions", True)
            else [],
            "forgotten_topics_data": [],
            **kw,
        }
        return self.client.request(self.addr, ApiKey.SHARE_FETCH, 2, body)

    def ack(self, epoch: int, acks: Any, **kw: Any) -> Any:
        body = {
            "group_id": self.group,
            "member_id": self.member,
            "share_session_epoch": epoch,
            "topics": [
                {
                    "topic_id": self.tid,
                    "partitions": [{"partition_index": 0, "acknowledgement_batches": _b(acks)}],
                }
            ],
            **kw,
        }
        return self.client.request(self.addr, ApiKey.SHARE_ACKNOWLEDGE, 2, body)


def _b(acks: Any) -> list[dict[str, Any]]:
    return [{"first_offset": a, "last_offset": b, "acknowledge_types": list(t)} for a, b, t in acks]


def _part(answer: Any) -> Any:
    [topic] = answer.responses
    [part] = topic.partitions
    return part


#: ApiVersions v3+ needs a client software name (INVALID_REQUEST otherwise)
_SOFTWARE = {"client_software_name": "wirebroker-tests", "client_software_version": "1"}


@pytest.fixture
def share(single_broker: str, unique: Callable[[str], str]) -> Iterator[Share]:
    with WireClient(single_broker) as client:
        versions = client._any(ApiKey.API_VERSIONS, 3, _SOFTWARE)
        if not any(k.api_key == ApiKey.SHARE_GROUP_HEARTBEAT for k in versions.api_keys):
            pytest.skip("this broker does not serve ShareGroupHeartbeat (share groups) yet")
        topic, group = unique("share"), unique("sg")
        client.create_topic(topic, 1)
        client.produce(topic, [b"a", b"b", b"c"])
        client.produce(topic, [b"d", b"e", b"f"])
        body = {
            "resources": [
                {
                    "resource_type": 32,
                    "resource_name": group,
                    "configs": [
                        {
                            "name": "share.auto.offset.reset",
                            "config_operation": 0,
                            "value": "earliest",
                        }
                    ],
                }
            ],
            "validate_only": False,
        }
        assert client._any(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses[0].error_code == 0
    s = Share(single_broker, topic, group)
    try:
        s.join()
        yield s
    finally:
        s.client.close()


def test_share_fetch_answers(share: Share) -> None:
    got = share.fetch(0)
    assert (got.error_code, got.acquisition_lock_timeout_ms) == (0, 30_000)
    p = _part(got)
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records] == [
        (0, 5, 1)
    ]
    assert dict(p.current_leader) == {"leader_id": 0, "leader_epoch": 0}
    # request checks
    assert share.fetch(0, member="").error_code == E.INVALID_REQUEST
    assert share.fetch(0, member="x" * 37).error_code == E.INVALID_REQUEST
    assert share.fetch(0, member="y" * 36).error_code == 0
    for group in ("", "never-initialised-" + uuid.uuid4().hex[:8]):
        got = share.fetch(0, group=group)
        assert (got.error_code, _part(got).error_code) == (0, E.UNKNOWN)
    assert share.fetch(0, acks=[(0, 0, (1,))]).error_code == E.INVALID_REQUEST
    got = share.ack(0, [(0, 0, (1,))])
    assert (got.error_code, got.acquisition_lock_timeout_ms) == (E.INVALID_SHARE_SESSION_EPOCH, 0)
    # a new session: everything is acquired already
    assert _part(share.fetch(0)).acquired_records == []
    assert share.fetch(1).responses == []
    # acknowledgement batches
    cases = [
        ([(0, 2, (1, 1))], E.INVALID_REQUEST, None),
        ([(2, 0, (1,))], E.INVALID_REQUEST, None),
        ([(4, 9, (1,))], E.INVALID_REQUEST, PAST_ACQUIRED),
        ([(0, 0, (4,))], E.INVALID_REQUEST, None),
        ([(4, 4, (1,)), (3, 3, (1,))], E.INVALID_REQUEST, None),
        ([(0, 0, (0,)), (1, 2, (1,))], E.NONE, None),
    ]
    for epoch, (acks, code, message) in enumerate(cases, start=2):
        p = _part(share.fetch(epoch, acks))
        assert (p.acknowledge_error_code, p.acknowledge_error_message) == (code, message), acks
    # KIP-1222 renewals: with fetch parameters refused; without, the lock of 5 renewed
    got = share.fetch(8, [(5, 5, (4,))], is_renew_ack=True)
    assert (got.error_code, got.acquisition_lock_timeout_ms) == (E.INVALID_REQUEST, 0)
    zero = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 0, "max_records": 0}
    got = share.fetch(8, [(5, 5, (4,))], is_renew_ack=True, **zero)
    assert (got.error_code, _part(got).acknowledge_error_code) == (0, 0)
    got = share.ack(9, [(5, 5, (4,))], is_renew_ack=True)
    assert (got.error_code, _part(got).error_code, got.acquisition_lock_timeout_ms) == (
        0,
        0,
        30_000,
    )
    # FINAL: a partition named is no error; then no session
    got = share.fetch(-1)
    assert (got.error_code, got.responses) == (0, [])
    got = share.fetch(-1, partitions=False)
    assert (got.error_code, got.acquisition_lock_timeout_ms) == (E.SHARE_SESSION_NOT_FOUND, 0)
    assert share.ack(3, [(0, 0, (1,))]).error_code == E.SHARE_SESSION_NOT_FOUND
