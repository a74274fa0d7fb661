"""STAND-IN (helper k848) for the RE2 regex module helper asg writes (the lead keeps asg's
version at merge): the same names (`compile_subscription`, `Subscription`,
`InvalidRegularExpression`, `RegexResolver`), with Python's `re` instead of RE2 (so other
syntax is accepted or refused, and the refusal texts are Python's). Whole-name matches, as
Kafka's TopicRegexResolver. Pure."""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from protocol.errors import ErrorCode
from wirebroker.errors import KafkaError

__all__ = ["InvalidRegularExpression", "RegexResolver", "Subscription", "compile_subscription"]


class InvalidRegularExpression(KafkaError, code=ErrorCode.INVALID_REGULAR_EXPRESSION):
    def __init__(self, pattern: str, description: str) -> None:
        super().__init__(
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {description}."
        )
        self.pattern = pattern
        self.description = description


@dataclass(frozen=True)
class Subscription:
    pattern: str
    _regex: re.Pattern[str] = field(repr=False, compare=False)

    def matches(self, topic: str) -> bool:
        return self._regex.fullmatch(topic) is not None

    def matching(self, topics: Iterable[str]) -> frozenset[str]:
        return frozenset(t for t in topics if self._regex.fullmatch(t) is not None)


@functools.lru_cache(maxsize=512)
def compile_subscription(pattern: str) -> Subscription:
    try:
        return Subscription(pattern, re.compile(pattern))
    except re.error as e:
        raise InvalidRegularExpression(pattern, e.msg) from None


class RegexResolver:
    def resolve(
        self, pattern: str, topics: Collection[str], metadata_version: int
    ) -> frozenset[str]:
        del metadata_version
        return compile_subscription(pattern).matching(topics)
