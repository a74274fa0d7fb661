"""The trio network shell: TCP listeners and one task per connection.

`KafkaServer` (server.py) binds and accepts; `Connection` (connection.py) cuts the byte stream
into frames, hands them one at a time to a `RequestDispatcher` (dispatch.py: the one interface
to the layer that serves requests; net imports no handler module) and sends the responses back
in order.
"""

from __future__ import annotations

from wirebroker.net.connection import Connection
from wirebroker.net.dispatch import DispatchReply, RequestDispatcher
from wirebroker.net.server import KafkaServer

__all__ = ["Connection", "DispatchReply", "KafkaServer", "RequestDispatcher"]
