"""The admin plane: an HTTP/1.1 listener on the broker's trio loop (off by default).

    routes.py   the route table: (method, path) -> async handler(Request) -> Response;
                other packages add their routes to `Broker.admin_routes` (see its docstring)
    server.py   `AdminServer`: h11 over trio, keep-alive, bounded heads/bodies/connections
    listen.py   `admin.listeners` / `--admin-port`: what to bind

Enabled by `admin.listeners` (HOST:PORT, comma-separated; `--admin-port P` sets
127.0.0.1:P); loopback by default; port 0 picks a free port (logged, and reported as
`Broker.admin_bound`). The admin plane reads the broker's state; it never changes the Kafka
path (docs/admin.md).
"""

from wirebroker.admin.routes import Handler, Request, Response, Route, RouteConflict, Routes
from wirebroker.admin.server import AdminServer

__all__ = ["AdminServer", "Handler", "Request", "Response", "Route", "RouteConflict", "Routes"]
