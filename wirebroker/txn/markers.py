"""The WriteTxnMarkers sender: the coordinator's side of Kafka's marker channel manager.

`send(request, partitions)` queues one item per partition of a `MarkerRequest`. The sender's
task (`run`) resolves each queued partition's leader from the cluster view (`leader_of`), groups
the items by leader broker and sends each broker ONE WriteTxnMarkers v1 request at a time with
every item queued for it (one marker entry per transaction, its partitions grouped by topic),
over a `replication.broker_client.BrokerConnection` -- also when the leader is this broker
(over loopback to its own listener: the coordinator and the partition leaders talk only over
the wire, see TXN.md).

Per partition answer:
    NONE, UNKNOWN_TOPIC_OR_PARTITION   done: `on_done(request, partition)` (a deleted topic
                                       needs no marker, as Kafka)
    anything else                      retried after `backoff_s`, the leader resolved again
A connection failure or timeout retries every item of that request. Items whose leader is
unknown wait `backoff_s`. Before each send an item whose request is no longer `wanted`
(the coordinator unloaded the transaction's partition, or its epoch changed) is dropped.
Two markers of one producer id never share a request (the response is keyed by producer id).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import trio

from protocol.api import ApiKey
from protocol.errors import ErrorCode
from wirebroker.replication.broker_client import BrokerConnection, BrokerConnectionError
from wirebroker.txn.effects import MarkerRequest
from wirebroker.txn.metadata import TopicPartition

__all__ = ["WRITE_TXN_MARKERS_VERSION", "MarkerSender"]

log = logging.getLogger(__name__)

WRITE_TXN_MARKERS_VERSION = 1
_DONE = (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


@dataclass(eq=False)
class _Item:
    request: MarkerRequest
    partition: TopicPartition
    not_before: float = 0.0
    attempts: int = field(default=0)


class MarkerSender:
    """See the module docstring. `leader_of(topic, partition)`: (node id, host, port) or None."""

    def __init__(
        self,
        leader_of: Callable[[str, int], tuple[int, str, int] | None],
        *,
        on_done: Callable[[MarkerRequest, TopicPartition], None],
        wanted: Callable[[MarkerRequest], bool],
        client_id: str = "wirebroker-txn-coordinator",
        max_frame_bytes: int = 100 * 1024 * 1024,
        backoff_s: float = 0.1,
        timeout_s: float = 30.0,
    ) -> None:
        self.leader_of = leader_of
        self.on_done = on_done
        self.wanted = wanted
        self.client_id = client_id
        self.max_frame_bytes = max_frame_bytes
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self._queue: list[_Item] = []
        self._busy: set[int] = set()
        self._conns: dict[int, BrokerConnection] = {}
        self._wake = trio.Event()
        #: requests sent (for tests and figures)
        self.requests_sent = 0

    def send(self, request: MarkerRequest, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._queue.append(_Item(request, TopicPartition(*tp)))
        self._wake.set()

    def pending(self) -> int:
        return len(self._queue)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started()
            try:
                while True:
                    self._wake = trio.Event()
                    next_due = self._dispatch(nursery)
                    if next_due is None:
                        await self._wake.wait()
                    else:
                        with trio.move_on_at(next_due):
                            await self._wake.wait()
            finally:
                with trio.CancelScope(shield=True):
                    for conn in list(self._conns.values()):
                        await conn.aclose()
                    self._conns.clear()

    def _dispatch(self, nursery: trio.Nursery) -> float | None:
        """Start a send for each idle leader with due items; the earliest later due time."""
        now = trio.current_time()
        batches: dict[int, tuple[tuple[str, int], list[_Item]]] = {}
        keep: list[_Item] = []
        next_due: float | None = None
        for item in self._queue:
            if not self.wanted(item.request):
                continue  # the coordinator gave the transaction up (unloaded / fenced)
            if item.not_before > now:
                keep.append(item)
                next_due = item.not_before if next_due is None else min(next_due, item.not_before)
                continue
            leader = self.leader_of(item.partition.topic, item.partition.partition)
            if leader is None:
                item.not_before = now + self.backoff_s
                keep.append(item)
                next_due = item.not_before if next_due is None else min(next_due, item.not_before)
                continue
            node, host, port = leader
            if node in self._busy:
                keep.append(item)
                continue
            batch = batches.setdefault(node, ((host, port), []))[1]
            same_pid = [
                i
                for i in batch
                if i.request.producer_id == item.request.producer_id
                and i.request is not item.request
            ]
            if same_pid:
                keep.append(item)  # next request to this broker
                continue
            batch.append(item)
        self._queue = keep
        for node, (address, items) in batches.items():
            self._busy.add(node)
            nursery.start_soon(self._send, node, address, items)
        return next_due

    async def _send(self, node: int, address: tuple[str, int], items: list[_Item]) -> None:
        retry: list[_Item] = []
        try:
            answers = await self._request(node, address, items)
            for item in items:
                error = answers.get((item.request.producer_id, item.partition))
                if error in _DONE:
                    try:
                        self.on_done(item.request, item.partition)
                    except Exception:
                        log.exception("marker completion failed")
                else:
                    if item.attempts % 50 == 0:
                        log.info(
                            "WriteTxnMarkers %s-%d (producer %d) to broker %d: %s; retrying",
                            item.partition.topic,
                            item.partition.partition,
                            item.request.producer_id,
                            node,
                            "no answer" if error is None else error.name,
                        )
                    retry.append(item)
        except (BrokerConnectionError, trio.TooSlowError) as exc:
            log.info("WriteTxnMarkers to broker %d at %s:%d: %s", node, *address, exc)
            conn = self._conns.pop(node, None)
            if conn is not None:
                await conn.aclose()
            retry = items
        finally:
            self._busy.discard(node)
            later = trio.current_time() + self.backoff_s
            for item in retry:
                item.attempts += 1
                item.not_before = later
            self._queue.extend(retry)
            self._wake.set()

    async def _request(
        self, node: int, address: tuple[str, int], items: list[_Item]
    ) -> dict[tuple[int, TopicPartition], ErrorCode]:
        conn = self._conns.get(node)
        if conn is not None and (conn.closed or conn.address != address):
            await conn.aclose()
            conn = None
        with trio.fail_after(self.timeout_s):
            if conn is None:
                conn = await BrokerConnection.open(
                    *address, client_id=self.client_id, max_frame_bytes=self.max_frame_bytes
                )
                self._conns[node] = conn
            self.requests_sent += 1
            response = await conn.request(
                int(ApiKey.WRITE_TXN_MARKERS), WRITE_TXN_MARKERS_VERSION, _body(items)
            )
        answers: dict[tuple[int, TopicPartition], ErrorCode] = {}
        for marker in response.markers:
            for topic in marker.topics:
                for p in topic.partitions:
                    tp = TopicPartition(topic.name, p.partition_index)
                    answers[(marker.producer_id, tp)] = _error(p.error_code)
        return answers


def _error(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN


def _body(items: list[_Item]) -> dict[str, object]:
    """One marker entry per transaction, its partitions grouped by topic."""
    by_request: dict[int, tuple[MarkerRequest, dict[str, list[int]]]] = {}
    for item in items:
        topics = by_request.setdefault(id(item.request), (item.request, {}))[1]
        topics.setdefault(item.partition.topic, []).append(item.partition.partition)
    return {
        "markers": [
            {
                "producer_id": req.producer_id,
                "producer_epoch": req.producer_epoch,
                "transaction_result": req.commit,
                "topics": [
                    {"name": name, "partition_indexes": sorted(parts)}
                    for name, parts in sorted(topics.items())
                ],
                "coordinator_epoch": req.coordinator_epoch,
            }
            for req, topics in by_request.values()
        ]
    }
