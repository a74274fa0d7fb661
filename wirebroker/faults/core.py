"""The fault store: what a test asked the broker to get wrong, and which request it hits next.

Pure: no trio, no I/O; every call that depends on time takes `now_ms`. The dispatcher hook
(`wirebroker.handlers.dispatcher`) asks `match` for each request while `active` is true, and
`wirebroker.faults.control` records the broker-level faults here too, so one list (one id
sequence) shows everything that is injected.

Request faults (`RequestFault`)::

    kind        "error"  answer with `error_code` in every error field of the response
                "delay"  wait `delay_ms`, then serve the request normally
                "close"  close the connection without answering
    api_key     the API it applies to (None: every API)
    count       how many matching requests it hits (None: every one until removed); a
                matching request consumes one, and the fault is gone at zero
    topic       only requests naming this topic (by name, or by id resolved by the caller)
    partition   with `topic`: only requests naming this partition (a request naming the
                topic without partitions, Metadata for instance, names all of them)
    client_id   only requests with this client id
    duration_ms the fault ends by itself this long after it was added (None: never)

Faults are checked in the order they were added; the first that matches hits (one per
request). Broker faults (`BrokerFault`: kind + parameters, e.g. "unreachable") only live in the
list; their effects and their undoing belong to `wirebroker.faults.control`.

Invariant: `active` is true exactly when the store holds a request fault (the hook's one
attribute check on the hot path); expired faults are dropped lazily by `match` and `list`.
"""

from __future__ import annotations

import builtins
import itertools
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from protocol.api import SCHEMAS
from protocol.errors import ErrorCode

__all__ = [
    "REQUEST_KINDS",
    "BrokerFault",
    "FaultRules",
    "RequestFault",
    "request_targets",
    "topic_of",
]

REQUEST_KINDS = ("error", "delay", "close")

#: Field names that carry a topic name / a partition index in request structs.
TOPIC_KEYS = ("name", "topic", "topic_name")
PARTITION_KEYS = ("partition_index", "index", "partition", "partition_id")
PARTITION_LIST_KEYS = ("partitions", "partition_indexes", "partition_ids")


@dataclass
class RequestFault:
    """One request fault (see the module docstring); `hits` counts the requests it hit."""

    id: int
    kind: str
    api_key: int | None = None
    count: int | None = 1
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    error_code: int = 0
    delay_ms: int = 0
    expires_ms: int | None = None
    hits: int = 0

    def describe(self) -> str:
        """One line for the WARNING log: what is injected, on what, how many left."""
        what = {
            "error": f"error {_error_name(self.error_code)}",
            "delay": f"delay {self.delay_ms} ms",
            "close": "close the connection",
        }[self.kind]
        api = "any API" if self.api_key is None else _api_name(self.api_key)
        scope = ""
        if self.topic is not None:
            scope = f" on {self.topic}" + ("" if self.partition is None else f"-{self.partition}")
        if self.client_id is not None:
            scope += f" for client id {self.client_id!r}"
        left = "unlimited" if self.count is None else f"{self.count} left"
        return f"fault {self.id} ({what}, {api}{scope}, {left})"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind,
            "api_key": self.api_key,
            "api": None if self.api_key is None else _api_name(self.api_key),
            "count": self.count,
            "topic": self.topic,
            "partition": self.partition,
            "client_id": self.client_id,
            "hits": self.hits,
            "expires_ms": self.expires_ms,
        }
        if self.kind == "error":
            out["error_code"] = self.error_code
            out["error"] = _error_name(self.error_code)
        if self.kind == "delay":
            out["delay_ms"] = self.delay_ms
        return out


@dataclass
class BrokerFault:
    """A broker-level fault (unreachable, refuse_connections, shrink_isr, ...): listed and
    removable here, applied and undone by `wirebroker.faults.control`."""

    id: int
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    hits: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, **self.params, "hits": self.hits}


Fault = RequestFault | BrokerFault


class FaultRules:
    """The broker's active faults (see the module docstring)."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._requests: list[RequestFault] = []
        self._broker: list[BrokerFault] = []
        #: true while a request fault exists: the dispatcher's fast-path check
        self.active = False

    # -- adding -------------------------------------------------------------------------------
    def add_request_fault(
        self,
        kind: str,
        *,
        now_ms: int,
        api_key: int | None = None,
        count: int | None = 1,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
        error_code: int = 0,
        delay_ms: int = 0,
        duration_ms: int | None = None,
    ) -> RequestFault:
        if kind not in REQUEST_KINDS:
            raise ValueError(f"kind must be one of {REQUEST_KINDS}, not {kind!r}")
        if count is not None and count < 1:
            raise ValueError("count must be at least 1 (or null: unlimited)")
        if partition is not None and topic is None:
            raise ValueError("partition needs topic")
        fault = RequestFault(
            next(self._ids),
            kind,
            api_key=api_key,
            count=count,
            topic=topic,
            partition=partition,
            client_id=client_id,
            error_code=error_code,
            delay_ms=delay_ms,
            expires_ms=None if duration_ms is None else now_ms + duration_ms,
        )
        self._requests.append(fault)
        self.active = True
        return fault

    def add_broker_fault(self, kind: str, **params: Any) -> BrokerFault:
        fault = BrokerFault(next(self._ids), kind, dict(params))
        self._broker.append(fault)
        return fault

    # -- matching -----------------------------------------------------------------------------
    def match(
        self,
        api_key: int,
        client_id: str | None,
        request: Any,
        *,
        now_ms: int,
        resolve_topic_id: Callable[[uuid.UUID], str | None] = lambda _id: None,
    ) -> RequestFault | None:
        """The fault this request hits (one of its count consumed), or None."""
        self._expire(now_ms)
        targets: list[tuple[str, int | None]] | None = None
        for fault in self._requests:
            if fault.api_key is not None and fault.api_key != api_key:
                continue
            if fault.client_id is not None and fault.client_id != client_id:
                continue
            if fault.topic is not None:
                if targets is None:
                    targets = list(request_targets(request, resolve_topic_id))
                if not _names(targets, fault.topic, fault.partition):
                    continue
            fault.hits += 1
            if fault.count is not None:
                fault.count -= 1
                if fault.count == 0:
                    self._requests.remove(fault)
                    self.active = bool(self._requests)
            return fault
        return None

    def _expire(self, now_ms: int) -> None:
        if any(f.expires_ms is not None and f.expires_ms <= now_ms for f in self._requests):
            self._requests = [
                f for f in self._requests if f.expires_ms is None or f.expires_ms > now_ms
            ]
            self.active = bool(self._requests)

    # -- listing and removing -----------------------------------------------------------------
    def list(self, now_ms: int) -> builtins.list[Fault]:
        """Every active fault, in the order they were added."""
        self._expire(now_ms)
        return sorted([*self._requests, *self._broker], key=lambda f: f.id)

    def get(self, fault_id: int) -> Fault | None:
        return next((f for f in self._all() if f.id == fault_id), None)

    def broker_faults(self, kind: str | None = None) -> builtins.list[BrokerFault]:
        return [f for f in self._broker if kind is None or f.kind == kind]

    def remove(self, fault_id: int) -> Fault | None:
        """Remove one fault; returns it (a broker fault still needs undoing by the caller)."""
        fault = self.get(fault_id)
        if isinstance(fault, RequestFault):
            self._requests.remove(fault)
            self.active = bool(self._requests)
        elif isinstance(fault, BrokerFault):
            self._broker.remove(fault)
        return fault

    def clear(self) -> builtins.list[Fault]:
        """Remove every fault; returns them (broker faults still need undoing)."""
        removed = sorted(self._all(), key=lambda f: f.id)
        self._requests.clear()
        self._broker.clear()
        self.active = False
        return removed

    def _all(self) -> Iterator[Fault]:
        yield from self._requests
        yield from self._broker


def _names(targets: Iterable[tuple[str, int | None]], topic: str, partition: int | None) -> bool:
    return any(
        name == topic and (partition is None or index is None or index == partition)
        for name, index in targets
    )


def request_targets(
    request: Any, resolve_topic_id: Callable[[uuid.UUID], str | None]
) -> Iterator[tuple[str, int | None]]:
    """The (topic, partition) pairs a parsed request names, found generically: a struct with
    a topic name (or a `topic_id`) field is a topic entry; its partition structs (or its list
    of partition indexes) are its partitions; a topic entry without any names the whole topic
    (partition None)."""
    if isinstance(request, Mapping):
        topic = topic_of(request, resolve_topic_id)
        if topic is not None:
            partitions = list(_partitions_of(request))
            if not partitions:
                yield topic, None
            for index in partitions:
                yield topic, index
            return
        for value in request.values():
            yield from request_targets(value, resolve_topic_id)
    elif isinstance(request, list):
        for item in request:
            if isinstance(item, Mapping | list):
                yield from request_targets(item, resolve_topic_id)


def topic_of(struct: Mapping[str, Any], resolve: Callable[[uuid.UUID], str | None]) -> str | None:
    for key in TOPIC_KEYS:
        value = struct.get(key)
        if isinstance(value, str) and value:
            return value
    topic_id = struct.get("topic_id")
    if isinstance(topic_id, uuid.UUID) and topic_id.int:
        return resolve(topic_id)
    return None


def _partitions_of(struct: Mapping[str, Any]) -> Iterator[int]:
    for value in struct.values():
        if not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, Mapping):
                for key in PARTITION_KEYS:
                    index = item.get(key)
                    if isinstance(index, int):
                        yield index
                        break
    for key in PARTITION_LIST_KEYS:
        value = struct.get(key)
        if isinstance(value, list):
            yield from (i for i in value if isinstance(i, int))


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _api_name(api_key: int) -> str:
    module = SCHEMAS.get(api_key)
    return str(module.NAME) if module is not None else f"api {api_key}"
