"""Segment sizes, asked of wirebroker (alone and as a cluster) and of Apache Kafka 4.4 with the
same assertions (tests/oracle/conftest.py).

Kafka 4 (LogConfig): `segment.bytes` and the broker's `log.segment.bytes` are at least 1 MiB
(1048576). Tests that roll small segments set the internal topic config
`internal.segment.bytes` (an int, not range-checked; the segment size in place of
segment.bytes when set), which DescribeConfigs and CreateTopics list only on a topic that sets
it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from protocol.errors import ErrorCode as E

TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1
AT_LEAST = "Value must be at least 1048576"


def _create(wire: Wire, name: str, configs: dict[str, str]) -> tuple[int, str | None, dict]:
    """CreateTopics of one topic: (error, message, {name: (value, source)} of its configs)."""
    body = {
        "topics": [
            {
                "name": name,
                "num_partitions": 1,
                "replication_factor": -1,
                "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in configs.items()],
            }
        ],
        "timeout_ms": 30_000,
        "validate_only": False,
    }
    [t] = wire.call(ApiKey.CREATE_TOPICS, 7, body).topics
    return t.error_code, t.error_message, {c.name: (c.value, c.config_source) for c in t.configs}


def _described(wire: Wire, name: str, keys: list[str] | None = None) -> dict[str, Any]:
    body = {
        "resources": [{"resource_type": TOPIC, "resource_name": name, "configuration_keys": keys}],
        "include_synonyms": True,
        "include_documentation": False,
    }
    [result] = wire.call(ApiKey.DESCRIBE_CONFIGS, 4, body).results
    assert result.error_code == 0
    return {
        c.name: (c.value, c.config_source, c.config_type, [(s.name, s.source) for s in c.synonyms])
        for c in result.configs
    }


def _described_until(
    wire: Wire, name: str, keys: list[str] | None, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """`_described` once `done` holds of it (or the last answer at a 30 s deadline): Apache
    Kafka's brokers apply a topic's creation and config changes from the metadata log after
    the controller answers, so under load a description can lag behind an acknowledged change."""
    deadline = time.monotonic() + 30
    while True:
        try:
            got = _described(wire, name, keys)
        except AssertionError:  # the topic not known to this broker yet
            if time.monotonic() > deadline:
                raise
            got = None
        if got is not None and (done(got) or time.monotonic() > deadline):
            return got
        time.sleep(0.05)


def _alter(wire: Wire, rtype: int, name: str, ops: list[tuple], validate: bool) -> tuple:
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
        ],
        "validate_only": validate,
    }
    [r] = wire.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
    return E(r.error_code).name, r.error_message


@pytest.mark.parametrize("value", ["14", "1048575"])
def test_segment_bytes_below_1_mib_is_refused(
    any_broker: str, unique: Callable[[str], str], value: str
) -> None:
    with Wire(any_broker) as wire:
        code, message, _ = _create(wire, unique("seg-small"), {"segment.bytes": value})
        assert (code, message) == (
            E.INVALID_CONFIG,
            f"Invalid value {value} for configuration segment.bytes: {AT_LEAST}",
        )
        name = unique("seg-mib")
        assert _create(wire, name, {"segment.bytes": "1048576"})[0] == 0
        assert _alter(wire, TOPIC, name, [("segment.bytes", SET, value)], True) == (
            "INVALID_CONFIG",
            f"Invalid value {value} for configuration segment.bytes: {AT_LEAST}",
        )
        # the broker default too (validate_only: the shared oracle keeps its settings)
        assert _alter(wire, BROKER, "", [("log.segment.bytes", SET, value)], True) == (
            "INVALID_REQUEST",
            f"Invalid value {value} for configuration log.segment.bytes: {AT_LEAST}",
        )
        assert _alter(wire, BROKER, "", [("log.segment.bytes", SET, "1048576")], True) == (
            "NONE",
            None,
        )


def test_internal_segment_bytes_is_taken_and_described_where_set(
    any_broker: str, unique: Callable[[str], str]
) -> None:
    with Wire(any_broker) as wire:
        name = unique("seg-internal")
        code, _message, created = _create(wire, name, {"internal.segment.bytes": "1000"})
        assert code == 0
        assert created["internal.segment.bytes"] == ("1000", 1)  # TOPIC_CONFIG
        assert created["segment.bytes"] == ("1073741824", 5)  # DEFAULT_CONFIG
        described = _described_until(wire, name, None, lambda d: "internal.segment.bytes" in d)
        assert described["internal.segment.bytes"] == (
            "1000",
            1,
            3,  # INT
            [("internal.segment.bytes", 1)],
        )
        assert _alter(wire, TOPIC, name, [("internal.segment.bytes", SET, "-5")], False) == (
            "NONE",
            None,
        )
        keys = ["internal.segment.bytes"]
        now = _described_until(wire, name, keys, lambda d: d[keys[0]][0] == "-5")
        assert now[keys[0]][0] == "-5"
        assert _alter(wire, TOPIC, name, [("internal.segment.bytes", DELETE, None)], False) == (
            "NONE",
            None,
        )
        # not set: listed nowhere, asked for or not
        assert _described_until(wire, name, keys, lambda d: d == {}) == {}
        assert "internal.segment.bytes" not in _described(wire, name)
        plain = unique("seg-plain")
        assert "internal.segment.bytes" not in _create(wire, plain, {})[2]
        # an int, any int (0 too), nothing else
        assert _create(wire, unique("seg-zero"), {"internal.segment.bytes": "0"})[0] == 0
        code, message, _ = _create(wire, unique("seg-abc"), {"internal.segment.bytes": "abc"})
        assert (code, message) == (
            E.INVALID_CONFIG,
            "Invalid value abc for configuration internal.segment.bytes: Not a number of type INT",
        )
