"""CreateTopics refusals (validate_only), asked of wirebroker and of Apache Kafka 4.4 with the
same assertions (tests/oracle/conftest.py): the error code and Kafka's error_message text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode

LONG_NAME = "x" * 250


def topic(name: str, partitions: int = 1, rf: int = -1, **kw: Any) -> dict[str, Any]:
    configs = kw.pop("configs", {})
    return {
        "name": name,
        "num_partitions": partitions,
        "replication_factor": rf,
        "assignments": kw.pop("assignments", []),
        "configs": [{"name": k, "value": v} for k, v in configs.items()],
    }


def create(bootstrap: str, topics: list[dict[str, Any]], validate_only: bool = True) -> Any:
    with Wire(bootstrap) as wire:
        return wire.call(
            ApiKey.CREATE_TOPICS,
            7,
            {"topics": topics, "timeout_ms": 10_000, "validate_only": validate_only},
        ).topics


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is invalid: the empty string is not allowed"),
        ("..", "Topic name is invalid: '..' is not allowed"),
        (".", "Topic name is invalid: '.' is not allowed"),
        (
            LONG_NAME,
            f"Topic name is invalid: the length of '{LONG_NAME}' is longer than the max allowed "
            "length 249",
        ),
        (
            "bad name!",
            "Topic name is invalid: 'bad name!' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'",
        ),
    ],
    ids=["empty", "dotdot", "dot", "too-long", "characters"],
)
def test_invalid_names(any_broker: str, name: str, message: str) -> None:
    [result] = create(any_broker, [topic(name)])
    assert (result.error_code, result.error_message) == (ErrorCode.INVALID_TOPIC_EXCEPTION, message)


_CONFIG_CASES = [
    ("no.such.config", "1", "Unknown topic config name: no.such.config"),
    (
        "retention.ms",
        "abc",
        "Invalid value abc for configuration retention.ms: Not a number of type LONG",
    ),
    (
        "min.insync.replicas",
        "0",
        "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
    ),
    (
        "cleanup.policy",
        "sometimes",
        "Invalid value sometimes for configuration cleanup.policy: String must be one of: "
        "compact, delete",
    ),
    (
        "compression.type",
        "brotli",
        "Invalid value brotli for configuration compression.type: String must be one of: "
        "uncompressed, zstd, lz4, snappy, gzip, producer",
    ),
    (
        "min.cleanable.dirty.ratio",
        "2",
        "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more "
        "than 1",
    ),
    ("retention.ms", None, "Null value not supported for topic configs: retention.ms"),
]


@pytest.mark.parametrize(("key", "value", "message"), _CONFIG_CASES, ids=lambda v: str(v)[:20])
def test_invalid_configs(
    any_broker: str, unique: Callable[[str], str], key: str, value: str | None, message: str
) -> None:
    [result] = create(any_broker, [topic(unique("cfg"), configs={key: value})])
    assert (result.error_code, result.error_message) == (ErrorCode.INVALID_CONFIG, message)


def test_partition_and_replication_counts(single_broker: str, unique: Callable[[str], str]) -> None:
    results = create(
        single_broker,
        [
            topic(unique("np0"), partitions=0),
            topic(unique("rf0"), rf=0),
            topic(unique("rf3"), rf=3),
        ],
    )
    assert [(r.error_code, r.error_message) for r in results] == [
        (
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
            "cannot be reached because only 1 broker(s) are registered or some brokers have all "
            "their log directories cordoned.",
        ),
    ]


def test_manual_assignments(single_broker: str, unique: Callable[[str], str]) -> None:
    with Wire(single_broker) as wire:
        [node] = wire.brokers()

    def assigned(*replicas: tuple[int, list[int]], partitions: int = -1) -> dict[str, Any]:
        return topic(
            unique("asg"),
            partitions,
            assignments=[{"partition_index": p, "broker_ids": b} for p, b in replicas],
        )

    results = create(
        single_broker,
        [
            assigned((0, [node]), partitions=2),
            assigned((0, [77])),
            assigned((0, [node, node])),
            assigned((1, [node])),
            assigned((0, [])),
        ],
    )
    assert [(r.error_code, r.error_message) for r in results] == [
        (
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ),
        (
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
            "The manual partition assignment includes broker 77, but no such broker is registered.",
        ),
        (
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
            f"The manual partition assignment includes the broker {node} more than once.",
        ),
        (
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        ),
        (
            ErrorCode.INVALID_REPLICATION_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        ),
    ]


def test_names_taken(any_broker: str, unique: Callable[[str], str]) -> None:
    dotted = unique("taken.x")
    [made] = create(any_broker, [topic(dotted)], validate_only=False)
    assert made.error_code == ErrorCode.NONE
    twice = unique("twice")
    results = create(any_broker, [topic(dotted), topic(dotted.replace(".", "_"))])
    results += create(any_broker, [topic(twice), topic(twice)])
    assert [(r.error_code, r.error_message) for r in results] == [
        (ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{dotted}' already exists."),
        (
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"Topic '{dotted.replace('.', '_')}' collides with existing topic: {dotted}",
        ),
        (ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
    ]


def test_requests_too_large_for_one_operation(
    any_broker: str, unique: Callable[[str], str]
) -> None:
    """Kafka refuses a whole request (every topic of it, duplicates too) that asks for more
    than 10,000 partitions, or whose topics would take more than 10,000 metadata records (a
    topic record, one per partition, one per config override); nothing is created."""

    def codes(results: Any) -> list[tuple[str, int, str | None]]:
        return [(r.name, r.error_code, r.error_message) for r in results]

    ok, big, dup = unique("ok"), unique("big"), unique("dup")
    asked = [topic(ok), topic(big, 10_001), topic(dup), topic(dup)]
    too_many = "Excessively large number of partitions per request."
    assert codes(create(any_broker, asked)) == [
        (t["name"], ErrorCode.POLICY_VIOLATION, too_many) for t in asked
    ]
    batch = "Unable to perform excessively large batch operation."
    first, second = unique("half"), unique("half")
    for asked in (
        [topic(first, 5000), topic(second, 4999)],
        [topic(first, 9999, configs={"retention.ms": "1000"})],
    ):
        assert codes(create(any_broker, asked, validate_only=False)) == [
            (t["name"], ErrorCode.POLICY_VIOLATION, batch) for t in asked
        ]
    assert codes(create(any_broker, [topic(first, 5000), topic(second, 4998)])) == [
        (first, ErrorCode.NONE, None),
        (second, ErrorCode.NONE, None),
    ]
    with Wire(any_broker) as wire:
        assert wire.topics([ok, big, dup, first, second]) == {}


def test_create_partitions_over_10000_new_partitions(
    any_broker: str, unique: Callable[[str], str]
) -> None:
    """CreatePartitions: more than 10,000 new partitions over the request's existing topics
    refuses every topic of it (unknown topics and no-increase ones do not count)."""
    first, second = unique("grow"), unique("grow")
    with Wire(any_broker) as wire:
        wire.create_topic(first, 1)
        wire.create_topic(second, 1)

        def grow(*counts: tuple[str, int]) -> list[tuple[str, int, str | None]]:
            body = {
                "topics": [{"name": n, "count": c, "assignments": None} for n, c in counts],
                "timeout_ms": 10_000,
                "validate_only": True,
            }
            results = wire.call(ApiKey.CREATE_PARTITIONS, 3, body).results
            return sorted((r.name, r.error_code, r.error_message) for r in results)

        too_many = "Excessively large number of additional partitions per request."
        assert grow((first, 10_002), (second, 1)) == sorted(
            [
                (first, ErrorCode.POLICY_VIOLATION, too_many),
                (second, ErrorCode.POLICY_VIOLATION, too_many),
            ]
        )
        nope = unique("nope")
        assert grow((first, 6000), (nope, 5000)) == sorted(
            [(first, ErrorCode.NONE, None), (nope, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)]
        )
        assert grow((first, 10_001)) == [(first, ErrorCode.NONE, None)]
