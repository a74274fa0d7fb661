"""The admin plane's own routes: /metrics, /api/state and the web view /.

`add_builtin_routes(routes, sources)` is called by the composition root; other packages add
theirs to the same `Routes` (wirebroker/admin/routes.py).

    GET /metrics      Prometheus text format (metrics.py)
    GET /api/state    the snapshot as JSON (state.py)
    GET /             the live web view (web.py)
"""

from __future__ import annotations

from wirebroker.admin.metrics import metrics_registry, metrics_route
from wirebroker.admin.routes import Request, Response, Routes
from wirebroker.admin.state import AdminSources, snapshot
from wirebroker.admin.web import render_page

__all__ = ["add_builtin_routes"]


def add_builtin_routes(routes: Routes, sources: AdminSources) -> None:
    async def state(request: Request) -> Response:
        return Response.json(snapshot(sources))

    async def page(request: Request) -> Response:
        return Response.html(render_page(snapshot(sources)))

    routes.add("GET", "/metrics", metrics_route(metrics_registry(sources)))
    routes.add("GET", "/api/state", state)
    routes.add("GET", "/", page)
