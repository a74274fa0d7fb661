"""KIP-848 regex subscriptions (wirebroker/group/regex.py, RE2) against RE2/J 1.8, the library
Kafka 4.4's group coordinator compiles `SubscribedTopicRegex` with (RegexProbe.java, compiled
against Kafka's jars; no broker): for every pattern of the corpus, the same topics matched in
full, or the same refusal with RE2/J's description (the text Kafka puts in its
INVALID_REGULAR_EXPRESSION message). One known difference is asserted as such.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from compat.oracle.javac import compile_java
from compat.oracle.kafka import classpath, java
from wirebroker.group.regex import InvalidRegularExpression, compile_subscription

TOPICS = [
    *("orders", "orders-eu", "orders.v2", "Orders", "ORDERS", "payments", "__consumer_offsets"),
    *("a", "aa", "aaa", "ab", "abc", "a1", "123", "x_y", "a.b", "a-b", "A_B-c.1", ""),
    *("Ωmega", "αβγ", "日本", "orders\n"),
]

PATTERNS = [
    # matching: whole names, flags, classes, anchors, escapes
    *("orders", "orders.*", ".*", "ord", "(?i)orders", "(?i:ORD)ers", "orders|payments"),
    *("\\p{Lu}.*", "\\p{Greek}+", "\\pL+", "\\PL+", "\\p{Han}+", "\\pN+", "(?i)ωMEGA"),
    *("[[:alpha:]]+", "[[:^alpha:]]+", "[[:digit:]]+", "[[:word:]]+", "\\d+", "\\w+", "\\W+"),
    *("\\s", "\\Qa.b\\E", "\\Q\\C\\E", "\\\\C", "a.b", "a\\.b", "[a-c]+", "[\\d-z]+", "."),
    *("a{2}", "a{2,}", "a{,2}", "a{1000}", "a{1000,}", "(?:a|b)+", "(?U)a+", "(?s).+"),
    *("(?m)^orders$", "orders$", "^orders", "\\Aorders\\z", "\\borders\\b", "\\z", "[^\\n]+"),
    *("\\x{41}.*", "\\x41.*", "\\141", "\\0", "(?P<name>a)b", "(?<name>a)b", "(?P<1n>a)"),
    *("(?i)(?-i)a", "(?i-i:a)", "(?)", "(a|)+", "()", "|", "x*y*", "[\\p{L}&&[^a]]+"),
    *("[\\]C]+", "[]C]+", "[[:alpha:]C]+", "(?P<a>x)(?P<b>y)"),
    # refused by both, with RE2/J's descriptions
    *("a{1001}", "a{1001,}", "a{2,1}", "a++", "a*+", "a?+", "a**", "x{2}{3}", "*a"),
    *("(a)\\1", "\\8", "a(?=b)", "a(?!b)", "(?<=a)b", "(?<!a)b", "(?#comment)a", "(?P=n)"),
    *("(?i", "(?z)a", "(?-)a", "(?^)a", "(?P<>a)", "(?P<name", "[", "[a", "(", ")", "a)b"),
    *("\\", "[z-a]", "[[:foo:]]", "\\pX", "\\p{Foo}", "\\p{IsGreek}+", "\\p{Alphabetic}+"),
    *("orders\\Z", "\\cA", "\\e", "\\X", "\\R", "\\h", "\\N{LATIN SMALL LETTER A}"),
    # refused by RE2/J only: refused here too
    *("\\C", "a\\C", "[\\C]", "(?P<n>a)(?P<n>b)", "(?<n>a)(?<n>b)", "[\\Q]\\E]"),
]

# RE2 refuses nested repetitions whose counts multiply past 1000; RE2/J accepts them.
REFUSED_BY_RE2_ONLY = ["(a{500}){3}", "((a{100}){100}){100}"]


@pytest.fixture(scope="module")
def re2j(tmp_path_factory: pytest.TempPathFactory) -> Any:
    classes = compile_java("regex-probe", [Path(__file__).with_name("RegexProbe.java")])

    def run(patterns: list[str]) -> list[dict[str, Any]]:
        done = subprocess.run(
            [java(), "-cp", f"{classes}{os.pathsep}{classpath()}", "RegexProbe"],
            input=json.dumps({"patterns": patterns, "topics": TOPICS}),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        answers: list[dict[str, Any]] = json.loads(done.stdout)
        return answers

    return run


def ours(pattern: str) -> dict[str, Any]:
    try:
        subscription = compile_subscription(pattern)
    except InvalidRegularExpression as e:
        return {"error": e.description}
    return {"matches": [t for t in TOPICS if subscription.matches(t)]}


def test_the_same_matches_and_refusals_as_re2j(re2j: Any) -> None:
    answers = re2j(PATTERNS)
    assert any("error" in a for a in answers) and any(a.get("matches") for a in answers)
    for pattern, kafka in zip(PATTERNS, answers, strict=True):
        assert ours(pattern) == kafka, pattern


def test_nested_repetitions_past_1000_are_refused_here_only(re2j: Any) -> None:
    for pattern, kafka in zip(REFUSED_BY_RE2_ONLY, re2j(REFUSED_BY_RE2_ONLY), strict=True):
        assert kafka == {"matches": []}
        assert ours(pattern) == {"error": "invalid repeat count"}
