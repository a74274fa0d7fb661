"""TxnVerifier's connection to the transaction coordinator (over real loopback sockets).

A coordinator whose broker was restarted (kill -9, same address) leaves the verifier's cached
connection dead without the verifier noticing while it is idle; the next verification must not
fail for that (it became COORDINATOR_NOT_AVAILABLE for TxnOffsetCommit, making the producer
abort its transaction): the request is sent once more on a new connection.
"""

from __future__ import annotations

import struct
from typing import Any, cast

import trio

from protocol.api import ApiKey
from protocol.codec import decode_request, encode_response
from protocol.errors import ErrorCode as E
from wirebroker.replication.txn_verify import TxnVerifier
from wirebroker.txn.partitioning import partition_for

TP = ("out", 0)


class _Verifier(TxnVerifier):
    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(cast(Any, None), partition_for, node_id=1)  # no view: fixed address
        self.address = address

    def coordinator(self, transactional_id: str) -> tuple[str, int] | None:
        return self.address


async def _answer_one_request_then_close(stream: trio.SocketStream) -> None:
    """A coordinator that serves one verification per connection, then goes away."""
    async with stream:
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            data = await stream.receive_some(65536)
            if not data:
                return
            buf += data
        header, req = decode_request(buf[4:])
        assert header.api_key == ApiKey.ADD_PARTITIONS_TO_TXN
        [txn] = req.transactions
        body: dict[str, Any] = {
            "throttle_time_ms": 0,
            "error_code": 0,
            "results_by_transaction": [
                {
                    "transactional_id": txn.transactional_id,
                    "topic_results": [
                        {
                            "name": t.name,
                            "results_by_partition": [
                                {"partition_index": p, "partition_error_code": 0}
                                for p in t.partitions
                            ],
                        }
                        for t in txn.topics
                    ],
                }
            ],
        }
        await stream.send_all(
            encode_response(header.api_key, header.api_version, header.correlation_id, body)
        )


async def test_a_connection_gone_stale_while_idle_is_replaced(nursery: trio.Nursery) -> None:
    listeners = await nursery.start(trio.serve_tcp, _answer_one_request_then_close, 0)
    port = listeners[0].socket.getsockname()[1]
    verifier = _Verifier(("127.0.0.1", port))
    with trio.fail_after(10):
        assert await verifier.verify("tx", 7, 0, [TP]) == {TP: E.NONE}
        verifier.on_marker(7, *TP)  # the transaction ended: the next one is verified again
        # the coordinator closed that connection meanwhile (its broker restarted)
        assert await verifier.verify("tx", 7, 0, [TP]) == {TP: E.NONE}
    await verifier.aclose()
