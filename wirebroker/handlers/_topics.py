"""Topic lookup shared by the handlers: one `resolve_topic` for name-or-topic-id entries.

Requests name a topic by `name` (older versions) or by `topic_id` (Fetch v13+, Produce v13+,
Metadata v10+ with a non-zero id, DeleteTopics v6, OffsetCommit/OffsetFetch v10). An unknown
id answers UNKNOWN_TOPIC_ID, an unknown name UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wirebroker.cluster.topic_store import TopicInfo, TopicStore

__all__ = ["NIL_UUID", "resolve_topic"]

NIL_UUID = uuid.UUID(int=0)


def resolve_topic(
    store: TopicStore,
    *,
    by_id: bool,
    name: str | None = None,
    topic_id: uuid.UUID | None = None,
) -> tuple[TopicInfo | None, ErrorCode]:
    """(the topic, NONE), or (None, the error code of an unknown one): by `topic_id` when
    `by_id`, else by `name`."""
    if by_id:
        info = store.by_id(topic_id) if topic_id is not None else None
        missing = ErrorCode.UNKNOWN_TOPIC_ID
    else:
        info = store.get(name) if name is not None else None
        missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return info, (ErrorCode.NONE if info is not None else missing)
