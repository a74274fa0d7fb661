"""The trio network shell: TCP listeners and one task per connection.

`KafkaServer` (server.py) binds and accepts; `Connection` (connection.py) turns frames into
handler calls, one request at a time, and sends the responses back in order.
"""

from __future__ import annotations

from wirebroker.net.connection import Connection
from wirebroker.net.server import KafkaServer

__all__ = ["Connection", "KafkaServer"]
