"""The admin listener's route table: (method, path) -> async handler.

A handler takes a `Request` and returns a `Response` (status, headers, body); it never sees
h11 or the socket, so routes are tested without a server. How another package adds routes::

    from wirebroker.admin import Request, Response

    async def list_faults(request: Request) -> Response:
        return Response.json({"faults": []})

    broker.admin_routes.add("GET", "/faults", list_faults)
    broker.admin_routes.add("POST", "/faults/", add_fault, prefix=True)   # /faults/<anything>

`Broker.admin_routes` is the broker's table (built with the broker; lookups are live, so a
route added before or after `serve()` is served from then on). A `Routes` may also be built
from a list: `Routes([Route("GET", "/x", handler), ...])`.

Matching: an exact route wins over a prefix route; among prefix routes the longest prefix
wins. A path that matches with another method answers 405 with an `Allow` header; none: 404.
HEAD is answered by the GET handler, without the body.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs

__all__ = ["Handler", "Request", "Response", "Route", "RouteConflict", "Routes"]


@dataclass(frozen=True)
class Request:
    """One HTTP request as a handler sees it (the body is complete and within the limits)."""

    method: str
    path: str
    query_string: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    peer: tuple[str, int] = ("?", 0)

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(self.query_string, keep_blank_values=True)

    def header(self, name: str) -> str | None:
        lower = name.lower()
        for key, value in self.headers:
            if key == lower:
                return value
        return None

    def json(self) -> object:
        """The body parsed as JSON; ValueError when it is not JSON (the server answers 400)."""
        return json.loads(self.body or b"null")


@dataclass(frozen=True)
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, value: object, status: int = 200) -> Response:
        body = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
        return cls(status, body, "application/json")

    @classmethod
    def text(cls, text: str, status: int = 200) -> Response:
        return cls(status, text.encode())

    @classmethod
    def html(cls, text: str, status: int = 200) -> Response:
        return cls(status, text.encode(), "text/html; charset=utf-8")


Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler = field(compare=False)
    prefix: bool = False


class RouteConflict(ValueError):
    """A route for this method and path (or prefix) is already registered."""


class Routes:
    """The registry. `add` raises `RouteConflict` on a duplicate (method, path, prefix)."""

    def __init__(self, routes: Iterable[Route] = ()) -> None:
        self._exact: dict[tuple[str, str], Handler] = {}
        self._prefixes: dict[tuple[str, str], Handler] = {}
        for route in routes:
            self.add(route.method, route.path, route.handler, prefix=route.prefix)

    def add(self, method: str, path: str, handler: Handler, *, prefix: bool = False) -> None:
        if not path.startswith("/"):
            raise ValueError(f"route path {path!r} must start with '/'")
        table = self._prefixes if prefix else self._exact
        key = (method.upper(), path)
        if key in table:
            raise RouteConflict(f"{method} {path} is already routed")
        table[key] = handler

    def remove(self, method: str, path: str, *, prefix: bool = False) -> None:
        (self._prefixes if prefix else self._exact).pop((method.upper(), path), None)

    def __iter__(self) -> Iterator[Route]:
        for (method, path), handler in self._exact.items():
            yield Route(method, path, handler)
        for (method, path), handler in self._prefixes.items():
            yield Route(method, path, handler, prefix=True)

    def resolve(self, method: str, path: str) -> Handler | None:
        """The handler for (method, path), or None (see `allowed` for 404 vs 405)."""
        method = method.upper()
        found = self._exact.get((method, path))
        if found is not None:
            return found
        best: tuple[int, Handler] | None = None
        for (m, prefix), handler in self._prefixes.items():
            if m == method and path.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), handler)
        return None if best is None else best[1]

    def allowed(self, path: str) -> list[str]:
        """The methods some route serves at `path` (for 405's Allow header)."""
        methods = {m for (m, p) in self._exact if p == path}
        methods |= {m for (m, p) in self._prefixes if path.startswith(p)}
        return sorted(methods)
