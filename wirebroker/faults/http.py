"""The JSON API of fault control, served at /faults by the admin listener.

    GET    /faults           200 {"faults": [fault, ...]}             the active faults
    GET    /faults/schema    200 the JSON schema of a POST body (FAULT_SCHEMA)
    POST   /faults           a fault (body: one JSON object, FAULT_SCHEMA):
                               201 {"fault": fault}                  a fault that stays listed
                               200 {"result": {...}}                 one-shot kinds
                               400 {"error": "..."}                  the body is not valid
                               404 / 409 {"error": "...", ...}       no such partition / the
                                                                     broker cannot do it now
    DELETE /faults           200 {"removed": [fault, ...]}            every fault (undone)
    DELETE /faults/<id>      200 {"removed": fault} or 404

unreachable, refuse_connections and reachable (and removing those faults) answer once the
Kafka listeners are closed / bound again, so the next connection attempt sees the new state.

Kinds: "error", "delay", "close" (request faults: `wirebroker.faults.core`), "unreachable",
"reachable", "refuse_connections", "drop_connections", "move_leader", "shrink_isr" (broker
faults: `wirebroker.faults.control`). `api_key` and `error_code` take numbers or Kafka's names
("Produce" or "PRODUCE"; "NOT_LEADER_OR_FOLLOWER").

`handle(control, method, path, body) -> (status, json value)` is the whole API, independent of
the HTTP server: the admin routes (`mount`, a thin adapter onto `wirebroker.admin.Routes`)
and the in-process test client
(`wirebroker.testing.faults`) both call it. The body is validated by `validate` against
FAULT_SCHEMA (a small JSON-schema subset checked by hand: type, enum, minimum, required per
kind, no unknown keys) with a message naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from protocol.api import SCHEMAS, ApiKey
from protocol.errors import ErrorCode
from wirebroker.admin.routes import Request, Response, Routes
from wirebroker.faults.control import FaultControl, FaultError
from wirebroker.faults.core import REQUEST_KINDS

__all__ = ["FAULT_SCHEMA", "handle", "mount", "validate"]

BROKER_KINDS = ("unreachable", "reachable", "refuse_connections", "drop_connections")
KINDS = (*REQUEST_KINDS, *BROKER_KINDS, "move_leader", "shrink_isr")
_INT = {"type": "integer", "minimum": 0}
_REQUEST_FIELDS = ("api_key", "count", "topic", "partition", "client_id", "duration_ms")

FAULT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "wirebroker fault",
    "type": "object",
    "additionalProperties": False,
    "required": ["kind"],
    "properties": {
        "kind": {"enum": list(KINDS)},
        "api_key": {
            "type": ["integer", "string", "null"],
            "description": "API key number or name (Produce, FETCH, ...); null: every API",
        },
        "count": {
            "type": ["integer", "null"],
            "minimum": 1,
            "description": "requests to hit (default 1); null: until removed",
        },
        "topic": {"type": "string", "description": "only requests naming this topic"},
        "partition": {**_INT, "description": "with topic: only requests naming it"},
        "client_id": {"type": "string", "description": "only requests of this client id"},
        "error_code": {
            "type": ["integer", "string"],
            "description": "kind error: the code, number or name (NOT_LEADER_OR_FOLLOWER)",
        },
        "delay_ms": {**_INT, "description": "kind delay: how long"},
        "duration_ms": {
            "type": "integer",
            "minimum": 1,
            "description": "request faults end by themselves after this long",
        },
        "to": {**_INT, "description": "move_leader: the new leader (default: next in ISR)"},
        "replicas": {
            "type": "array",
            "items": _INT,
            "description": "shrink_isr: followers to drop (default: all)",
        },
    },
    "x-required-by-kind": {
        "error": ["error_code"],
        "delay": ["delay_ms"],
        "move_leader": ["topic", "partition"],
        "shrink_isr": ["topic", "partition"],
    },
    "x-fields-by-kind": {
        "error": [*_REQUEST_FIELDS, "error_code"],
        "delay": [*_REQUEST_FIELDS, "delay_ms"],
        "close": list(_REQUEST_FIELDS),
        "move_leader": ["topic", "partition", "to"],
        "shrink_isr": ["topic", "partition", "replicas"],
    },
}


class BadFault(ValueError):
    """The POST body does not follow FAULT_SCHEMA (the message names the field)."""


def validate(body: object) -> dict[str, Any]:
    """The fault described by `body`, checked against FAULT_SCHEMA, with names resolved."""
    if not isinstance(body, dict):
        raise BadFault("the body must be a JSON object with a 'kind'")
    props: dict[str, Any] = FAULT_SCHEMA["properties"]
    unknown = sorted(set(body) - set(props))
    if unknown:
        raise BadFault(f"unknown field(s) {unknown}; known: {sorted(props)}")
    kind = body.get("kind")
    if kind not in KINDS:
        raise BadFault(f"'kind' must be one of {list(KINDS)}, not {kind!r}")
    allowed = {"kind", *FAULT_SCHEMA["x-fields-by-kind"].get(kind, [])}
    extra = sorted(set(body) - allowed)
    if extra:
        raise BadFault(f"field(s) {extra} do not apply to kind {kind!r}")
    for key in FAULT_SCHEMA["x-required-by-kind"].get(kind, []):
        if key not in body:
            raise BadFault(f"kind {kind!r} needs {key!r}")
    for key, value in body.items():
        _check(key, value, props[key])
    out = dict(body)
    if "api_key" in out:
        out["api_key"] = _api_key(out["api_key"])
    if "error_code" in out:
        out["error_code"] = _error_code(out["error_code"])
    return out


_TYPES: dict[str, Any] = {
    "integer": int,
    "string": str,
    "array": list,
    "null": type(None),
    "object": dict,
}


def _check(key: str, value: Any, schema: dict[str, Any]) -> None:
    if "enum" in schema:
        return
    types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    ok = any(
        isinstance(value, _TYPES[t]) and not (t == "integer" and isinstance(value, bool))
        for t in types
    )
    if not ok:
        raise BadFault(f"{key!r} must be {' or '.join(types)}, not {json.dumps(value)}")
    if isinstance(value, int) and "minimum" in schema and value < schema["minimum"]:
        raise BadFault(f"{key!r} must be at least {schema['minimum']}, not {value}")
    if isinstance(value, list):
        for item in value:
            _check(f"{key}[]", item, schema["items"])


def _api_key(value: int | str | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, int):
        if value not in SCHEMAS:
            raise BadFault(f"'api_key' {value} is not a Kafka API key")
        return value
    wanted = value.replace("_", "").lower()
    for key, module in SCHEMAS.items():
        if str(module.NAME).lower() == wanted:
            return int(key)
    names = {k.name.replace("_", "").lower(): int(k) for k in ApiKey}
    if wanted in names:
        return names[wanted]
    raise BadFault(f"'api_key' {value!r} names no Kafka API (Produce, Fetch, Metadata, ...)")


def _error_code(value: int | str) -> int:
    if isinstance(value, int):
        try:
            return int(ErrorCode(value))
        except ValueError:
            raise BadFault(f"'error_code' {value} is not a Kafka error code") from None
    try:
        return int(ErrorCode[value.upper()])
    except KeyError:
        raise BadFault(f"'error_code' {value!r} names no Kafka error") from None


async def handle(control: FaultControl, method: str, path: str, body: bytes) -> tuple[int, Any]:
    """The API (see the module docstring): (HTTP status, JSON value)."""
    path = path.rstrip("/") or "/"
    try:
        if path == "/faults":
            if method in ("GET", "HEAD"):
                return 200, {"faults": [f.to_json() for f in control.faults()]}
            if method == "POST":
                return await _post(control, body)
            if method == "DELETE":
                removed = control.clear()
                await control.settled()
                return 200, {"removed": [f.to_json() for f in removed]}
            return 405, {"error": f"{method} is not allowed on /faults"}
        if path == "/faults/schema" and method in ("GET", "HEAD"):
            return 200, FAULT_SCHEMA
        if path.startswith("/faults/") and method == "DELETE":
            tail = path.removeprefix("/faults/")
            if not tail.isdigit():
                return 400, {"error": f"not a fault id: {tail!r}"}
            fault = control.remove(int(tail))
            if fault is None:
                return 404, {"error": f"no fault {tail}"}
            await control.settled()
            return 200, {"removed": fault.to_json()}
        return 404, {"error": f"no route {method} {path}"}
    except FaultError as exc:
        return exc.status, {"error": str(exc), **exc.details}


async def _post(control: FaultControl, body: bytes) -> tuple[int, Any]:
    try:
        spec = validate(json.loads(body or b"null"))
    except ValueError as exc:  # BadFault, and json's JSONDecodeError
        message = str(exc) if isinstance(exc, BadFault) else f"the body is not JSON: {exc}"
        return 400, {"error": message, "schema": "/faults/schema"}
    kind = spec.pop("kind")
    if kind in REQUEST_KINDS:
        return 201, {"fault": control.add_request_fault(kind, **spec).to_json()}
    if kind == "unreachable":
        return 201, {"fault": (await control.unreachable()).to_json()}
    if kind == "refuse_connections":
        return 201, {"fault": (await control.refuse_connections()).to_json()}
    if kind == "shrink_isr":
        return 201, {"fault": control.shrink_isr(**spec).to_json()}
    if kind == "reachable":
        removed = await control.reachable()
        return 200, {"result": {"removed": [f.to_json() for f in removed]}}
    if kind == "drop_connections":
        return 200, {"result": {"dropped": control.drop_connections()}}
    return 200, {"result": await control.move_leader(**spec)}


def mount(routes: Routes, control: FaultControl) -> None:
    """Serve the API on the admin listener's route table (`Broker.admin_routes`)."""

    async def serve(request: Request) -> Response:
        status, value = await handle(control, request.method, request.path, request.body)
        return Response.json(value, status)

    for method in ("GET", "POST", "DELETE"):
        routes.add(method, "/faults", serve)
    for method in ("GET", "DELETE"):
        routes.add(method, "/faults/", serve, prefix=True)
