"""Field-by-field comparison of two normalised answers.

`diff(oracle, ours)` walks both trees together and returns every leaf that differs, with its
path (`topics[name=<orders>].partitions[partition_index=0].error_code`). Lists of structs are
matched by a key field when every element of both lists has one with distinct values (a
topic's name, a partition's index, a config's name...), so that order does not matter where
Kafka's protocol does not give it a meaning; other lists are compared position by position.
A field or entry present on one side only shows as `<absent>` on the other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from protocol.errors import ErrorCode

ABSENT = "<absent>"
KEY_FIELDS = (
    "name",
    "topic",
    "topic_name",
    "topic_id",
    "partition_index",
    "partition",
    "index",
    "partition_id",
    "api_key",
    "node_id",
    "broker_id",
    "group_id",
    "transactional_id",
    "resource_name",
    "log_dir",
    "member_id",
    "producer_id",
    "feature",
    "key",
    "base_offset",
    "offset",
    "user",
    "mechanism",  # a SCRAM user's credentials: Kafka lists them from a hash map
)


@dataclass(frozen=True)
class Difference:
    path: str
    oracle: Any
    ours: Any


def canonical(tree: Any) -> Any:
    """`tree` with every list of structs that has a key field sorted by it: the order a
    report shows one side's answer in, the same from run to run (Kafka builds many lists
    from hash maps: a group's members, the topics of an answer)."""
    if isinstance(tree, dict):
        return {k: canonical(v) for k, v in tree.items()}
    if isinstance(tree, list):
        items = [canonical(v) for v in tree]
        key = _key_field(items, [])
        if key is not None:
            items.sort(key=lambda e: json.dumps(e[key]))
        return items
    return tree


def _key_field(a: list[Any], b: list[Any]) -> str | None:
    items = a + b
    if not items or not all(isinstance(e, dict) for e in items):
        return None
    for key in KEY_FIELDS:
        if not all(key in e and not isinstance(e[key], dict | list) for e in items):
            continue
        if all(len({json.dumps(e[key]) for e in side}) == len(side) for side in (a, b)):
            return key
    return None


def diff(oracle: Any, ours: Any, path: str = "") -> list[Difference]:
    """Every leaf where `oracle` and `ours` differ (see the module docstring)."""
    if isinstance(oracle, dict) and isinstance(ours, dict):
        out: list[Difference] = []
        for k in list(oracle) + [k for k in ours if k not in oracle]:
            sub = f"{path}.{k}" if path else k
            out += diff(oracle.get(k, ABSENT), ours.get(k, ABSENT), sub)
        return out
    if isinstance(oracle, list) and isinstance(ours, list):
        return _diff_lists(oracle, ours, path)
    if oracle == ours and type(oracle) is type(ours):
        return []
    return [Difference(path, oracle, ours)]


def _diff_lists(oracle: list[Any], ours: list[Any], path: str) -> list[Difference]:
    key = _key_field(oracle, ours)
    if key is None:
        if all(not isinstance(e, dict | list) for e in oracle + ours):
            return [] if oracle == ours else [Difference(path, oracle, ours)]
        out: list[Difference] = []
        for i in range(max(len(oracle), len(ours))):
            a = oracle[i] if i < len(oracle) else ABSENT
            b = ours[i] if i < len(ours) else ABSENT
            out += diff(a, b, f"{path}[{i}]")
        return out
    by_a = {json.dumps(e[key]): e for e in oracle}
    by_b = {json.dumps(e[key]): e for e in ours}
    out = []
    for k in list(by_a) + [k for k in by_b if k not in by_a]:
        label = f"{path}[{key}={json.loads(k)}]"
        out += diff(by_a.get(k, ABSENT), by_b.get(k, ABSENT), label)
    return out


def show(value: Any, path: str = "", limit: int = 300) -> str:
    """A value as the report prints it: error codes with their names, trees as compact JSON."""
    if path.endswith("error_code") and isinstance(value, int):
        try:
            return f"{value} {ErrorCode(value).name}"
        except ValueError:
            return str(value)
    if isinstance(value, str):
        return value if value == ABSENT else json.dumps(value)
    text = json.dumps(value, sort_keys=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."
