from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from wirebroker.metadata.errors import InvalidTopicError
from wirebroker.metadata.names import (
    INTERNAL_TOPICS,
    collision_key,
    has_collision_chars,
    validate_topic_name,
)


@pytest.mark.parametrize("name", ["a", "A-b_c.9", "x" * 249, "__consumer_offsets", "..."])
def test_legal_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "empty"),
        (".", "'.' is not allowed"),
        ("..", "'..' is not allowed"),
        ("x" * 250, "longer than the max allowed length 249"),
        ("a b", "ASCII alphanumerics"),
        ("a/b", "ASCII alphanumerics"),
        ("caf\u00e9", "ASCII alphanumerics"),
        ("a\nb", "ASCII alphanumerics"),
    ],
)
def test_illegal_names(name: str, fragment: str) -> None:
    with pytest.raises(InvalidTopicError) as info:
        validate_topic_name(name)
    assert fragment in str(info.value)
    assert info.value.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_collisions() -> None:
    assert collision_key("a.b") == collision_key("a_b")
    assert collision_key("a.b") != collision_key("ab")
    assert has_collision_chars("a.b") and has_collision_chars("a_b")
    assert not has_collision_chars("ab-c")
    assert "__consumer_offsets" in INTERNAL_TOPICS
