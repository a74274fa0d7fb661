"""The admin route table: exact and prefix routes, 404 vs 405, conflicts."""

from __future__ import annotations

import pytest

from wirebroker.admin import Request, Response, Route, RouteConflict, Routes


async def ok(request: Request) -> Response:
    return Response.text("ok")


async def other(request: Request) -> Response:
    return Response.text("other")


def test_exact_route_resolves_by_method_and_path() -> None:
    routes = Routes([Route("GET", "/metrics", ok)])
    assert routes.resolve("get", "/metrics") is ok
    assert routes.resolve("POST", "/metrics") is None
    assert routes.resolve("GET", "/metrics/x") is None
    assert routes.allowed("/metrics") == ["GET"]
    assert routes.allowed("/nothing") == []


def test_longest_prefix_wins_and_exact_beats_prefix() -> None:
    routes = Routes()
    routes.add("POST", "/faults/", ok, prefix=True)
    routes.add("POST", "/faults/api/", other, prefix=True)
    routes.add("POST", "/faults/clear", other)
    assert routes.resolve("POST", "/faults/x") is ok
    assert routes.resolve("POST", "/faults/api/3") is other
    assert routes.resolve("POST", "/faults/clear") is other
    assert routes.resolve("POST", "/fault") is None
    assert {r.path for r in routes} == {"/faults/", "/faults/api/", "/faults/clear"}


def test_duplicate_route_is_refused_and_remove_frees_it() -> None:
    routes = Routes()
    routes.add("GET", "/a", ok)
    with pytest.raises(RouteConflict):
        routes.add("GET", "/a", other)
    routes.remove("GET", "/a")
    routes.add("GET", "/a", other)
    assert routes.resolve("GET", "/a") is other
    with pytest.raises(ValueError):
        routes.add("GET", "relative", ok)


def test_request_helpers() -> None:
    req = Request("POST", "/x", "a=1&b=&a=2", (("content-type", "application/json"),), b'{"k":1}')
    assert req.query == {"a": ["1", "2"], "b": [""]}
    assert req.header("Content-Type") == "application/json"
    assert req.json() == {"k": 1}
    with pytest.raises(ValueError):
        Request("POST", "/x", body=b"{").json()
    assert Response.json({"b": 1, "a": [2]}).body == b'{"a":[2],"b":1}'
