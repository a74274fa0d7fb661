"""An error response for any request: every error field of the response carries one code.

`error_response(api_key, version, request, error_code, message)` builds, from the generated
response schema of that version (`protocol.messages`), a body that mirrors the request:

    error_code            the injected code, at every level the schema has one (top level,
                          each topic, partition, group, resource entry, ...)
    error_message         the message, wherever the schema has one (string fields)
    an array of structs   one element per element of the request array it answers: the
                          request array of structs at the same level whose element shares a
                          key field (topic name or id, partition index, group id, resource
                          name, ...) with the response element; or a request list of scalars
                          (group ids, partition indexes) when the response element has a key
                          field of that kind; an answer in the request's order without a key
                          (CreateAcls results, DeleteAcls filter_results: `_POSITIONAL`), one
                          element per request element. No counterpart: empty
    key fields            copied from the request element (the same name, or an alias: a
                          request `name` answers a response `topic`, `partition_index`
                          answers `index`/`partition_id`, a group id string `group_id`/`key`)
    anything else         the schema's default (0, "", null, empty), with -1 for the fields
                          Kafka sets to -1 when it has no value (offsets, leader ids, epochs)

So a client sees the same answer a Kafka broker in trouble would give: each entry it asked
about with the error, nothing else. Produce with acks=0 expects no answer: `None` (the caller
closes the connection, as Kafka does when an acks=0 produce fails).

A fault for one topic (or partition) hits only its entries when the request names others too:
`split_request` cuts the request in two (the matching topic / partition entries, the rest), the
handler serves the rest, and `merge_responses` appends the error entries built for the
matching part to its answer (a Produce to partitions 0 and 1 with a fault on 0 appends to 1
and answers 0 with the error, as a Kafka broker that lost the leadership of 0 only would).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from protocol.api import SCHEMAS, ApiKey
from protocol.primitives import FieldInfo
from wirebroker.faults.core import PARTITION_KEYS, topic_of

__all__ = ["error_response", "merge_responses", "split_request"]

#: Key field aliases: a response key field -> request field names that give its value.
_ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("name", "topic", "topic_name"),
    "topic": ("topic", "name", "topic_name"),
    "topic_name": ("topic_name", "name", "topic"),
    "topic_id": ("topic_id",),
    "index": ("index", "partition_index", "partition", "partition_id"),
    "partition_index": ("partition_index", "index", "partition", "partition_id"),
    "partition": ("partition", "partition_index", "index", "partition_id"),
    "partition_id": ("partition_id", "partition_index", "index", "partition"),
    "group_id": ("group_id", "key"),
    "key": ("key", "group_id"),
    "member_id": ("member_id",),
    "group_instance_id": ("group_instance_id",),
    "resource_name": ("resource_name",),
    "resource_type": ("resource_type",),
    "transactional_id": ("transactional_id",),
    "producer_id": ("producer_id",),
    "path": ("path",),
    "user": ("user", "name"),
    "entity_type": ("entity_type",),
    "entity_name": ("entity_name",),
}
#: Response arrays answering the elements of several request arrays in turn
#: (AlterUserScramCredentials: one result per user named in deletions, then in upsertions).
_CONCATENATED = {"results": ("deletions", "upsertions")}
#: Response arrays without a key field that answer a request array element by element.
_POSITIONAL = {"results": "creations", "filter_results": "filters", "entries": "entries"}
#: ... whose answers mirror the request element's own arrays (AlterClientQuotas' entities).
_MIRRORED = frozenset({"entries"})
_STRING_KEYS = ("group_id", "key", "name", "topic", "transactional_id", "resource_name")
_INT_KEYS = ("partition_index", "index", "partition", "partition_id")
#: Fields Kafka answers -1 when it has no value.
_MINUS_ONE = frozenset(
    {
        "base_offset",
        "log_start_offset",
        "high_watermark",
        "last_stable_offset",
        "offset",
        "committed_offset",
        "leader_id",
        "leader_epoch",
        "committed_leader_epoch",
        "current_leader_epoch",
        "node_id",
        "coordinator_id",
        "producer_id",
        "producer_epoch",
        "generation_id",
        "timestamp",
        "low_watermark",
        "end_offset",
        "preferred_read_replica",
    }
)


def error_response(
    api_key: int, version: int, request: Any, error_code: int, message: str | None = None
) -> dict[str, Any] | None:
    """The body answering `request` with `error_code` everywhere (see the module docstring);
    None for an acks=0 Produce, which gets no answer."""
    if api_key == ApiKey.PRODUCE and int(request.get("acks", -1)) == 0:
        return None
    fields = SCHEMAS[api_key].RESPONSE.fields(version)
    return _struct(fields, request if isinstance(request, Mapping) else {}, error_code, message)


def _struct(
    fields: Sequence[FieldInfo], req: Mapping[str, Any], code: int, message: str | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if f.name == "error_code" and f.kind == "int16":
            out[f.name] = code
        elif f.name == "error_message" and f.kind == "string":
            out[f.name] = message if message is not None or f.nullable else ""
        elif f.kind == "array" and f.element == "struct":
            out[f.name] = _array(f, req, code, message)
        elif f.kind == "struct":
            out[f.name] = None if f.nullable else _struct(f.fields, {}, code, message)
        elif (value := _key_value(f, req)) is not None:
            out[f.name] = value
        elif f.name in _MINUS_ONE and f.kind in ("int32", "int64", "int16"):
            out[f.name] = -1
        else:
            out[f.name] = f.default_value()
    return out


def _key_value(f: FieldInfo, req: Mapping[str, Any]) -> Any:
    for alias in _ALIASES.get(f.name, ()):
        value = req.get(alias)
        if value is not None and not isinstance(value, list | Mapping):
            if f.kind == "string" and not isinstance(value, str):
                continue
            if f.kind.startswith("int") and not isinstance(value, int):
                continue
            return value
    return None


def _array(
    f: FieldInfo, req: Mapping[str, Any], code: int, message: str | None
) -> list[dict[str, Any]]:
    keys = {sub.name for sub in f.fields if sub.name in _ALIASES}
    joined = [item for name in _CONCATENATED.get(f.name, ()) for item in req.get(name) or ()]
    if joined and keys:
        return [_struct(f.fields, item, code, message) for item in joined]
    if not keys:
        source = req.get(_POSITIONAL.get(f.name, ""))
        items = source if isinstance(source, list) else []
        return [
            _struct(
                f.fields,
                item if f.name in _MIRRORED and isinstance(item, Mapping) else {},
                code,
                message,
            )
            for item in items
        ]
    wanted = {alias for key in keys for alias in _ALIASES[key]}
    items = _matching_items(req, wanted, depth=2)
    if items:
        return [_struct(f.fields, item, code, message) for item in items]
    scalar_list = next(
        (v for v in req.values() if isinstance(v, list) and v and not isinstance(v[0], Mapping)),
        None,
    )
    if scalar_list is not None:
        key = _scalar_key(f.fields, scalar_list[0])
        if key is not None:
            return [_struct(f.fields, {key: item}, code, message) for item in scalar_list]
    return []


def _matching_items(req: Mapping[str, Any], wanted: set[str], depth: int) -> list[Any]:
    """The elements of the request array (at this level, else flattened from the arrays of
    structs below it: AlterReplicaLogDirs nests topics in directories, its response does
    not) whose structs carry one of the `wanted` key fields."""
    for value in req.values():
        if (
            isinstance(value, list)
            and value
            and isinstance(value[0], Mapping)
            and wanted & set(value[0].keys())
        ):
            return list(value)
    if depth == 0:
        return []
    out: list[Any] = []
    for value in req.values():
        if isinstance(value, list):
            for item in value:
                if isinstance(item, Mapping):
                    out += _matching_items(item, wanted, depth - 1)
    return out


def _scalar_key(fields: Sequence[FieldInfo], sample: Any) -> str | None:
    """The key field a list of scalars (group ids, partition indexes) fills."""
    names = [sub.name for sub in fields]
    candidates = _STRING_KEYS if isinstance(sample, str) else _INT_KEYS
    if isinstance(sample, bool) or not isinstance(sample, str | int):
        return None
    return next((key for key in candidates if key in names), None)


def split_request(
    request: Any,
    topic: str,
    partition: int | None,
    resolve_topic_id: Callable[[uuid.UUID], str | None],
) -> tuple[Any, Any] | None:
    """(the request with only the entries of `topic` / `partition`, the request without
    them), or None when it does not split that way (it names nothing else, or its topics are
    not one array of topic structs at the top level)."""
    if not isinstance(request, Mapping):
        return None
    for key, value in request.items():
        if not (isinstance(value, list) and value and isinstance(value[0], Mapping)):
            continue
        if topic_of(value[0], resolve_topic_id) is None:
            continue
        hit: list[Any] = []
        rest: list[Any] = []
        for entry in value:
            if topic_of(entry, resolve_topic_id) != topic:
                rest.append(entry)
                continue
            found = None if partition is None else _partition_list(entry)
            if found is None:
                hit.append(entry)
                continue
            pkey, parts = found
            mine = [p for p in parts if _index(p) == partition]
            others = [p for p in parts if _index(p) != partition]
            if mine:
                hit.append(_replaced(entry, pkey, mine))
            if others:
                rest.append(_replaced(entry, pkey, others))
        if not hit or not rest:
            return None
        return _replaced(request, key, hit), _replaced(request, key, rest)
    return None


def merge_responses(body: Any, extra: Mapping[str, Any]) -> Any:
    """`body` (the handler's answer to the rest) with the entries of `extra` (the error
    answer to the matching part) appended to its arrays of the same name."""
    for key, value in extra.items():
        if isinstance(value, list) and isinstance(body.get(key), list):
            body[key] = [*body[key], *value]
    return body


def _partition_list(entry: Mapping[str, Any]) -> tuple[str, list[Any]] | None:
    for key, value in entry.items():
        if (
            isinstance(value, list)
            and value
            and isinstance(value[0], Mapping)
            and _index(value[0]) is not None
        ):
            return key, value
    return None


def _index(struct: Mapping[str, Any]) -> int | None:
    for key in PARTITION_KEYS:
        value = struct.get(key)
        if isinstance(value, int):
            return value
    return None


def _replaced(struct: Any, key: str, value: Any) -> Any:
    copy = type(struct)(struct)
    copy[key] = value
    return copy
