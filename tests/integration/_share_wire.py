"""Raw ShareGroupHeartbeat for the share-group integration tests (group "sg")."""

from __future__ import annotations

from typing import Any

from compat.scenarios.wire import Wire
from protocol.api import ApiKey


def share_heartbeat(w: Wire, member: str, epoch: int, topics: list[str] | None = None) -> Any:
    """ShareGroupHeartbeat v1 of `member` of group "sg"; asserts no error."""
    body = {
        "group_id": "sg",
        "member_id": member,
        "member_epoch": epoch,
        "rack_id": None,
        "subscribed_topic_names": topics,
    }
    answer = w.call(ApiKey.SHARE_GROUP_HEARTBEAT, 1, body)
    assert answer.error_code == 0, answer
    return answer
