"""KIP-848 regular-expression subscriptions, evaluated on the broker as Kafka 4.4 does.

A consumer of the consumer group protocol may send `SubscribedTopicRegex` in its
ConsumerGroupHeartbeat instead of topic names; the coordinator resolves it to topic names
against the cluster's metadata. Kafka compiles it with Google's RE2/J (`com.google.re2j`), so
the syntax is RE2's, not Java's `java.util.regex` (which the classic protocol's client-side
`subscribe(Pattern)` uses): no backreferences (`\\1`), no lookaround (`(?=`, `(?!`, `(?<=`),
no possessive quantifiers, repetition counts at most 1000. Such a pattern is invalid, and the
heartbeat fails with INVALID_REGULAR_EXPRESSION (`InvalidRegularExpression` here; Kafka's
message: "SubscribedTopicRegex `P` is not a valid regular expression: D.", D in RE2/J's words,
which `re2j_description` gives for RE2's errors). RE2 (the C++ library, through the `google-re2`
package) is what RE2/J ports: the same syntax and matching, but for three things, checked
against RE2/J itself (tests/oracle/test_regex_vs_kafka.py): RE2/J refuses `\\C` and a capture
group name used twice, which RE2 accepts (refused here too); RE2 refuses nested repetitions
whose counts multiply past 1000 (`(a{500}){3}`), which RE2/J accepts (refused here: a known
difference).

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
    "re2j_description",
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
    """Compile `pattern` as Kafka's RE2/J would; raise `InvalidRegularExpression` (with RE2/J's
    description of the error) when it would refuse it."""
    try:
        regex = re2.compile(pattern, _OPTIONS)
    except re2.error as e:
        detail = e.args[0] if e.args else str(e)
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise InvalidRegularExpression(pattern, re2j_description(str(detail))) from None
    refused = _refused_by_re2j_only(pattern)
    if refused is not None:
        raise InvalidRegularExpression(pattern, refused)
    return Subscription(pattern, regex)


# RE2's error texts ("<what>: <where>") -> RE2/J's `PatternSyntaxException.getDescription()`,
# which Kafka puts in its message (checked against RE2/J 1.8 by tests/oracle/test_regex_vs_kafka.py)
_RE2J_DESCRIPTIONS = {
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "no argument for repetition operator": "missing argument to repetition operator",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "regexp/syntax: internal error",  # sic: RE2/J's answer to a stray ")"
    "trailing \\": "trailing backslash at end of expression",
    "invalid named capture group": "invalid named capture",
    "invalid perl operator": "invalid or unsupported Perl syntax",
}


def re2j_description(re2_message: str) -> str:
    """RE2/J's description of the error RE2 reports as `re2_message`."""
    what, _, where = re2_message.partition(": ")
    if what == "invalid perl operator" and where.startswith("(?<"):
        return "invalid named capture"  # RE2/J reads "(?<" (lookbehind) as a named group
    return _RE2J_DESCRIPTIONS.get(what, what)


def _refused_by_re2j_only(pattern: str) -> str | None:
    """What RE2/J refuses in a pattern RE2 accepted: `\\C` (any byte, RE2 only) and a capture
    group name used twice. Walks the pattern: escapes, `\\Q...\\E`, character classes."""
    names: set[str] = set()
    i, n = 0, len(pattern)
    while i < n:
        if pattern[i] == "\\":
            if pattern.startswith("Q", i + 1):
                end = pattern.find("\\E", i + 2)
                i = n if end < 0 else end + 2
                continue
            if pattern.startswith("C", i + 1):
                return "invalid escape sequence"
            i += 2
        elif pattern[i] == "[":
            i = _class_end(pattern, i)
        elif pattern.startswith("(?P<", i) or pattern.startswith("(?<", i):
            start = pattern.index("<", i) + 1
            end = pattern.index(">", start)
            if pattern[start:end] in names:
                return "duplicate capture group name"
            names.add(pattern[start:end])
            i = end + 1
        else:
            i += 1
    return None


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class that starts at `pattern[i]` (RE2 accepted it)."""
    i += 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1  # a "]" first is a literal
    while i < len(pattern) and pattern[i] != "]":
        if pattern[i] == "\\":
            i += 2
        elif pattern.startswith("[:", i) and pattern.find(":]", i + 2) >= 0:
            i = pattern.find(":]", i + 2) + 2
        else:
            i += 1
    return i + 1


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
