"""KIP-848 regular-expression subscriptions, evaluated on the broker as Kafka 4.4 does.

A consumer of the consumer group protocol may send `SubscribedTopicRegex` in its
ConsumerGroupHeartbeat instead of topic names; the coordinator resolves it to topic names
against the cluster's metadata. Kafka compiles it with Google's RE2/J (`com.google.re2j`), so
the syntax is RE2's, not Java's `java.util.regex` (which the classic protocol's client-side
`subscribe(Pattern)` uses): no backreferences (`\\1`), no lookaround (`(?=`, `(?!`, `(?<=`),
no possessive quantifiers, repetition counts at most 1000. Such a pattern is invalid, and the
heartbeat fails with INVALID_REGULAR_EXPRESSION (`InvalidRegularExpression` here; Kafka's
message: "SubscribedTopicRegex `P` is not a valid regular expression: D."). RE2 (the C++
library, through the `google-re2` package) is what RE2/J ports: same syntax and semantics.

Kafka's matching rules (its `TopicRegexResolver`):
- a topic matches when the whole name matches (`Matcher.matches()`), not a substring;
- every topic of the metadata is a candidate, internal ones (`__consumer_offsets`,
  `__transaction_state`) included: Kafka 4.4 does not exclude them;
- topics the member may not DESCRIBE are removed afterwards (the caller's authorizer does that);
- an empty regex means "no regex subscription" (the caller checks before compiling here).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

import re2

from protocol.errors import ErrorCode
from wirebroker.errors import KafkaError

__all__ = [
    "InvalidRegularExpression",
    "RegexResolver",
    "Subscription",
    "compile_subscription",
]

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every parse error to stderr
_OPTIONS.max_mem = 8 << 20  # RE2's default; Kafka's RE2/J has no such bound


class InvalidRegularExpression(KafkaError, code=ErrorCode.INVALID_REGULAR_EXPRESSION):
    """A `SubscribedTopicRegex` that RE2 rejects."""

    def __init__(self, pattern: str, description: str) -> None:
        super().__init__(
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {description}."
        )
        self.pattern = pattern
        self.description = description


@dataclass(frozen=True)
class Subscription:
    """A compiled regular-expression subscription."""

    pattern: str
    _regex: re2._Regexp = field(repr=False, compare=False)

    def matches(self, topic: str) -> bool:
        """Whether the whole topic name matches (Kafka: `Matcher.matches()`)."""
        return self._regex.fullmatch(topic) is not None

    def matching(self, topics: Iterable[str]) -> frozenset[str]:
        """The topics whose whole name matches; internal topics are not excluded (as Kafka)."""
        return frozenset(t for t in topics if self._regex.fullmatch(t) is not None)


@functools.lru_cache(maxsize=512)
def compile_subscription(pattern: str) -> Subscription:
    """Compile `pattern` with RE2's syntax; raise `InvalidRegularExpression` if RE2 rejects it."""
    try:
        regex = re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        detail = e.args[0] if e.args else str(e)
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise InvalidRegularExpression(pattern, str(detail)) from None
    return Subscription(pattern, regex)


@dataclass
class _Resolved:
    version: int
    topics: frozenset[str]


class RegexResolver:
    """The topics each pattern matches, cached by pattern until the metadata changes.

    `metadata_version` is any number that changes whenever the set of topic names may have
    changed (Kafka keys its resolved regexes on the metadata image's version the same way).
    At most `max_patterns` patterns are kept, the least recently used dropped first."""

    def __init__(self, max_patterns: int = 1024) -> None:
        self._max = max_patterns
        self._cache: OrderedDict[str, _Resolved] = OrderedDict()

    def resolve(
        self, pattern: str, topics: Collection[str], metadata_version: int
    ) -> frozenset[str]:
        """The topics of `topics` that `pattern` matches; raises `InvalidRegularExpression`."""
        hit = self._cache.get(pattern)
        if hit is not None and hit.version == metadata_version:
            self._cache.move_to_end(pattern)
            return hit.topics
        resolved = compile_subscription(pattern).matching(topics)
        self._cache[pattern] = _Resolved(metadata_version, resolved)
        self._cache.move_to_end(pattern)
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)
        return resolved

    def forget(self, pattern: str) -> None:
        """Drop a pattern no member subscribes with any more."""
        self._cache.pop(pattern, None)

    def __len__(self) -> int:
        return len(self._cache)
