"""The /faults JSON API without a server: validation messages, statuses, undo on removal."""

from __future__ import annotations

import json
from typing import Any

import pytest

from protocol.errors import ErrorCode
from wirebroker.faults.control import FaultControl
from wirebroker.faults.core import FaultRules
from wirebroker.faults.http import FAULT_SCHEMA, handle


class FakeServer:
    def __init__(self) -> None:
        self.accepting = True
        self.connections = 2

    def pause_accepting(self) -> None:
        self.accepting = False

    def resume_accepting(self) -> None:
        self.accepting = True

    async def wait_listening(self, listening: bool) -> None:
        assert self.accepting == listening

    def drop_connections(self) -> int:
        dropped, self.connections = self.connections, 0
        return dropped


def _control() -> tuple[FaultControl, FakeServer]:
    server = FakeServer()
    control = FaultControl(
        FaultRules(),
        server=server,  # type: ignore[arg-type]
        replicas=None,  # type: ignore[arg-type]
        admin=None,  # type: ignore[arg-type]
        member=lambda: None,
        node_id=0,
        clock=lambda: 1000,
    )
    return control, server


async def _call(control: FaultControl, method: str, path: str, body: Any = None) -> Any:
    raw = b"" if body is None else json.dumps(body).encode()
    return await handle(control, method, path, raw)


async def test_add_list_remove_a_request_fault() -> None:
    control, _ = _control()
    body = {"kind": "error", "api_key": "Produce", "error_code": "NOT_LEADER_OR_FOLLOWER"}
    status, answer = await _call(control, "POST", "/faults", {**body, "count": 3})
    assert status == 201
    fault = answer["fault"]
    assert (fault["api_key"], fault["error_code"], fault["count"]) == (0, 6, 3)
    assert (await _call(control, "GET", "/faults"))[1] == {"faults": [fault]}
    status, answer = await _call(control, "DELETE", f"/faults/{fault['id']}")
    assert status == 200 and answer["removed"]["id"] == fault["id"]
    assert (await _call(control, "DELETE", f"/faults/{fault['id']}"))[0] == 404
    assert (await _call(control, "GET", "/faults"))[1] == {"faults": []}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[1]", "must be a JSON object"),
        ({"kind": "explode"}, "'kind' must be one of"),
        ({"kind": "error"}, "kind 'error' needs 'error_code'"),
        ({"kind": "error", "error_code": "NO_SUCH"}, "names no Kafka error"),
        ({"kind": "delay", "delay_ms": -1}, "'delay_ms' must be at least 0"),
        ({"kind": "delay", "delay_ms": "1"}, "'delay_ms' must be integer"),
        ({"kind": "close", "api_key": "Nope"}, "names no Kafka API"),
        ({"kind": "close", "count": 0}, "'count' must be at least 1"),
        ({"kind": "close", "colour": 1}, "unknown field(s) ['colour']"),
        ({"kind": "unreachable", "topic": "t"}, "do not apply to kind 'unreachable'"),
        ({"kind": "close", "partition": 0}, "partition needs topic"),
    ],
)
async def test_bad_bodies_are_answered_400_with_the_reason(body: Any, message: str) -> None:
    control, _ = _control()
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    status, answer = await handle(control, "POST", "/faults", raw)
    assert status == 400
    assert message in answer["error"]
    assert (await handle(control, "POST", "/faults", b"{nope"))[0] == 400


async def test_unreachable_until_reachable_and_clear_undoes() -> None:
    control, server = _control()
    status, answer = await _call(control, "POST", "/faults", {"kind": "unreachable"})
    assert status == 201 and answer["fault"]["hits"] == 2
    assert not server.accepting
    await _call(control, "POST", "/faults", {"kind": "refuse_connections"})
    status, answer = await _call(control, "POST", "/faults", {"kind": "reachable"})
    assert status == 200 and len(answer["result"]["removed"]) == 2
    assert server.accepting
    await _call(control, "POST", "/faults", {"kind": "refuse_connections"})
    removed = (await _call(control, "DELETE", "/faults"))[1]["removed"]
    assert [f["kind"] for f in removed] == ["refuse_connections"]
    assert server.accepting


async def test_unlimited_count_and_numbers_for_names() -> None:
    control, _ = _control()
    body = {"kind": "error", "api_key": 12, "error_code": 15, "count": None}
    fault = (await _call(control, "POST", "/faults", body))[1]["fault"]
    assert fault["count"] is None and fault["error"] == ErrorCode.COORDINATOR_NOT_AVAILABLE.name
    assert fault["api"] == "Heartbeat"


async def test_the_schema_is_served_and_unknown_routes_are_404() -> None:
    control, _ = _control()
    assert (await _call(control, "GET", "/faults/schema")) == (200, FAULT_SCHEMA)
    assert (await _call(control, "PUT", "/faults"))[0] == 405
    assert (await _call(control, "DELETE", "/faults/x"))[0] == 400
