"""Topic name rules, as Kafka's `org.apache.kafka.common.internals.Topic` enforces them.

A legal name is 1 to 249 characters from `[a-zA-Z0-9._-]` and is neither "." nor "..".
Two names *collide* when they are equal once every '.' is replaced by '_' (`a.b` and `a_b`):
Kafka refuses to create the second one because metric names cannot tell them apart. The
collision check needs the set of existing names, so `TopicChecks` (topic_admin.py) applies
it with `collision_key`.
"""

from __future__ import annotations

import re

from wirebroker.metadata.errors import InvalidTopicError

__all__ = [
    "INTERNAL_TOPICS",
    "MAX_NAME_LENGTH",
    "InvalidTopicError",
    "collision_key",
    "has_collision_chars",
    "is_internal",
    "validate_topic_name",
]

MAX_NAME_LENGTH = 249
#: Kafka's `Topic.INTERNAL_TOPICS` (4.x): clients may not produce to them (Produce answers
#: INVALID_TOPIC_EXCEPTION) and Metadata marks them is_internal
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})

_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")


def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicError (with Kafka 4.4's wording) unless `name` is a legal topic name."""
    if not name:
        raise InvalidTopicError("Topic name is invalid: the empty string is not allowed")
    if name in (".", ".."):
        raise InvalidTopicError(f"Topic name is invalid: '{name}' is not allowed")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is invalid: the length of '{name}' is longer than the max allowed "
            f"length {MAX_NAME_LENGTH}"
        )
    if _LEGAL.fullmatch(name) is None:
        raise InvalidTopicError(
            f"Topic name is invalid: '{name}' contains one or more characters other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def collision_key(name: str) -> str:
    """The name with '.' and '_' unified; equal keys mean colliding names."""
    return name.replace(".", "_")
