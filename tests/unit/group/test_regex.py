"""KIP-848 regex subscriptions (wirebroker.group.regex): RE2 syntax, full matches, the cache."""

from __future__ import annotations

import pytest

from protocol.errors import ErrorCode
from wirebroker.group.regex import (
    InvalidRegularExpression,
    RegexResolver,
    compile_subscription,
)

TOPICS = [
    "orders",
    "orders-eu",
    "orders.v2",
    "payments",
    "__consumer_offsets",
    "__transaction_state",
]


def test_the_whole_name_must_match() -> None:
    assert compile_subscription("orders").matching(TOPICS) == {"orders"}
    assert compile_subscription("orders.*").matching(TOPICS) == {"orders", "orders-eu", "orders.v2"}
    assert compile_subscription("ders").matching(TOPICS) == frozenset()  # no substring match
    assert compile_subscription("orders|pay.*").matching(TOPICS) == {"orders", "payments"}
    assert compile_subscription("orders\\.v\\d").matching(TOPICS) == {"orders.v2"}
    assert not compile_subscription("o").matches("orders")


def test_internal_topics_are_not_excluded() -> None:
    # Kafka 4.4's TopicRegexResolver scans every topic name of the metadata image.
    assert compile_subscription(".*").matching(TOPICS) == set(TOPICS)
    assert compile_subscription("__.*").matching(TOPICS) == {
        "__consumer_offsets",
        "__transaction_state",
    }


def test_re2_syntax_that_python_lacks_or_differs() -> None:
    assert compile_subscription("\\p{Lu}.*").matching(["Orders", "orders"]) == {"Orders"}
    assert compile_subscription("[[:digit:]]+").matching(["123", "12a"]) == {"123"}
    assert compile_subscription("(?i)ORDERS").matches("orders")
    assert compile_subscription("(?P<name>a)b").matches("ab")
    # `$` is the end of the text in RE2; Python's `re` lets it match before a final newline too
    assert not compile_subscription("orders$").matches("orders\n")


@pytest.mark.parametrize(
    "pattern",
    [
        "(a)\\1",  # backreference
        "a(?=b)",  # lookahead
        "a(?!b)",  # negative lookahead
        "(?<=a)b",  # lookbehind
        "a++",  # possessive quantifier
        "a{1001}",  # repetition count over 1000
        "[",
        "(",
        "*a",
        "\\",
    ],
)
def test_what_re2_rejects_is_invalid(pattern: str) -> None:
    with pytest.raises(InvalidRegularExpression) as caught:
        compile_subscription(pattern)
    assert caught.value.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION == 128
    assert str(caught.value).startswith(f"SubscribedTopicRegex `{pattern}` is not a valid")
    assert caught.value.pattern == pattern and caught.value.description


def test_invalid_patterns_log_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidRegularExpression):
        compile_subscription("(?=x)y")
    assert capfd.readouterr().err == ""


def test_compiled_subscriptions_are_cached() -> None:
    assert compile_subscription("orders.*") is compile_subscription("orders.*")


def test_resolver_caches_by_pattern_until_the_metadata_changes() -> None:
    resolver = RegexResolver(max_patterns=2)
    first = resolver.resolve("orders.*", TOPICS, metadata_version=1)
    assert first == {"orders", "orders-eu", "orders.v2"}
    # same version: the cached answer, even when handed other topics
    assert resolver.resolve("orders.*", ["orders-us"], metadata_version=1) is first
    assert resolver.resolve("orders.*", ["orders-us"], metadata_version=2) == {"orders-us"}
    resolver.resolve("pay.*", TOPICS, 2)
    resolver.resolve("orders.*", TOPICS, 2)  # most recently used
    resolver.resolve("x", TOPICS, 2)  # evicts pay.* (least recently used)
    assert len(resolver) == 2
    resolver.forget("x")
    assert len(resolver) == 1
    with pytest.raises(InvalidRegularExpression):
        resolver.resolve("(", TOPICS, 2)
    assert len(resolver) == 1


@pytest.mark.parametrize(
    ("pattern", "description"),
    [
        ("a{1001}", "invalid repeat count"),
        ("a++", "invalid nested repetition operator"),
        ("*a", "missing argument to repetition operator"),
        ("[a", "missing closing ]"),
        ("(a", "missing closing )"),
        ("a)", "regexp/syntax: internal error"),  # RE2/J's words for a stray ")"
        ("\\", "trailing backslash at end of expression"),
        ("(?P<>a)", "invalid named capture"),
        ("a(?=b)", "invalid or unsupported Perl syntax"),
        ("(?<=a)b", "invalid named capture"),  # RE2/J reads "(?<" as a named group
        ("(a)\\1", "invalid escape sequence"),
        ("[z-a]", "invalid character class range"),
        # accepted by RE2, refused by RE2/J (and so by Kafka)
        ("a\\C", "invalid escape sequence"),
        ("(?P<n>a)(?<n>b)", "duplicate capture group name"),
    ],
)
def test_refusals_carry_re2js_descriptions(pattern: str, description: str) -> None:
    with pytest.raises(InvalidRegularExpression) as caught:
        compile_subscription(pattern)
    assert caught.value.description == description
    assert str(caught.value) == (
        f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {description}."
    )


@pytest.mark.parametrize(
    "pattern", ["\\Q\\C\\E", "\\\\C", "[\\]C]+", "[]C]+", "[[:alpha:]C]+", "(?P<a>x)(?P<b>y)"]
)
def test_what_only_looks_like_re2j_refusals_is_accepted(pattern: str) -> None:
    compile_subscription(pattern)
