"""The WriteTxnMarkers sender against a scripted broker on a real socket (port 0): batching
per leader, retries, dropped requests, a connection that breaks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from protocol.api import ApiKey
from protocol.codec import decode_request, encode_response
from protocol.errors import ErrorCode as E
from protocol.framing import FrameDecoder
from wirebroker.txn.effects import MarkerRequest
from wirebroker.txn.markers import MarkerSender
from wirebroker.txn.metadata import TopicPartition

TP = TopicPartition
Answer = Callable[[int, TopicPartition], E]


class ScriptedBroker:
    """Answers WriteTxnMarkers with `answer(producer_id, partition)`; `break_next` closes the
    connection instead of answering once."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[Any] = []
        self.break_next = False
        self.port = 0

    async def serve(self, stream: trio.SocketStream) -> None:
        decoder = FrameDecoder(1 << 20)
        async with stream:
            while True:
                data = await stream.receive_some(65536)
                if not data:
                    return
                decoder.receive_data(bytes(data))
                while (frame := decoder.next_frame()) is not None:
                    header, body = decode_request(frame)
                    assert header.api_key == ApiKey.WRITE_TXN_MARKERS and header.api_version == 1
                    self.requests.append(body)
                    if self.break_next:
                        self.break_next = False
                        return
                    await stream.send_all(
                        encode_response(27, 1, header.correlation_id, self._response(body))
                    )

    def _response(self, body: Any) -> dict[str, Any]:
        return {
            "markers": [
                {
                    "producer_id": m.producer_id,
                    "topics": [
                        {
                            "name": t.name,
                            "partitions": [
                                {
                                    "partition_index": p,
                                    "error_code": int(self.answer(m.producer_id, TP(t.name, p))),
                                }
                                for p in t.partition_indexes
                            ],
                        }
                        for t in m.topics
                    ],
                }
                for m in body.markers
            ]
        }


def _request(pid: int, *parts: TopicPartition, commit: bool = True) -> MarkerRequest:
    return MarkerRequest(f"tx{pid}", pid, 3, 7, commit, frozenset(parts))


async def _run(
    answer: Answer, work: Callable[[MarkerSender, ScriptedBroker, trio.Event], Any], **kw: Any
) -> tuple[ScriptedBroker, list[tuple[int, TopicPartition]]]:
    broker = ScriptedBroker(answer)
    done: list[tuple[int, TopicPartition]] = []
    all_done = trio.Event()
    expected: dict[str, int] = {"n": 0}
    unwanted: set[int] = kw.pop("unwanted", set())

    def on_done(req: MarkerRequest, tp: TopicPartition) -> None:
        done.append((req.producer_id, tp))
        if len(done) >= expected["n"]:
            all_done.set()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            lambda task_status: trio.serve_tcp(
                broker.serve, 0, host="127.0.0.1", task_status=task_status
            )
        )
        port = listeners[0].socket.getsockname()[1]
        sender = MarkerSender(
            lambda topic, p: (1, "127.0.0.1", port),
            on_done=on_done,
            wanted=lambda req: req.producer_id not in unwanted,
            backoff_s=0.01,
            timeout_s=5,
        )
        expected["n"] = work(sender, broker, all_done)
        await nursery.start(sender.run)
        with trio.fail_after(10):
            await all_done.wait()
        nursery.cancel_scope.cancel()
    return broker, done


async def test_one_request_per_leader_with_every_transaction() -> None:
    def work(sender: MarkerSender, broker: ScriptedBroker, _: trio.Event) -> int:
        sender.send(_request(1, TP("a", 0), TP("a", 1)), [TP("a", 0), TP("a", 1)])
        sender.send(_request(2, TP("b", 0), commit=False), [TP("b", 0)])
        return 3

    broker, done = await _run(lambda pid, tp: E.NONE, work)
    assert len(broker.requests) == 1
    [m1, m2] = sorted(broker.requests[0].markers, key=lambda m: m.producer_id)
    assert (m1.producer_id, m1.producer_epoch, m1.transaction_result, m1.coordinator_epoch) == (
        1,
        3,
        True,
        7,
    )
    assert [(t.name, list(t.partition_indexes)) for t in m1.topics] == [("a", [0, 1])]
    assert m2.transaction_result is False
    assert sorted(done) == [(1, TP("a", 0)), (1, TP("a", 1)), (2, TP("b", 0))]


async def test_errors_are_retried_and_unknown_topics_dropped() -> None:
    failures = {TP("a", 0): [E.NOT_LEADER_OR_FOLLOWER, E.REQUEST_TIMED_OUT]}

    def answer(pid: int, tp: TopicPartition) -> E:
        if tp == TP("gone", 0):
            return E.UNKNOWN_TOPIC_OR_PARTITION
        left = failures.get(tp)
        return left.pop(0) if left else E.NONE

    def work(sender: MarkerSender, broker: ScriptedBroker, _: trio.Event) -> int:
        sender.send(_request(1), [TP("a", 0), TP("gone", 0)])
        return 2

    broker, done = await _run(answer, work)
    assert len(broker.requests) == 3
    assert sorted(done) == [(1, TP("a", 0)), (1, TP("gone", 0))]


async def test_a_broken_connection_is_retried() -> None:
    def work(sender: MarkerSender, broker: ScriptedBroker, _: trio.Event) -> int:
        broker.break_next = True
        sender.send(_request(1), [TP("a", 0)])
        return 1

    broker, done = await _run(lambda pid, tp: E.NONE, work)
    assert len(broker.requests) == 2
    assert done == [(1, TP("a", 0))]


async def test_unwanted_requests_are_dropped() -> None:
    def work(sender: MarkerSender, broker: ScriptedBroker, _: trio.Event) -> int:
        sender.send(_request(9), [TP("a", 0)])
        sender.send(_request(1), [TP("a", 1)])
        return 1

    broker, done = await _run(lambda pid, tp: E.NONE, work, unwanted={9})
    assert [m.producer_id for r in broker.requests for m in r.markers] == [1]
    assert done == [(1, TP("a", 1))]
