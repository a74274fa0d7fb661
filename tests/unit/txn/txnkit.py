"""A coordinator under test: every partition owned, appends applied at once."""

from __future__ import annotations

import itertools
from typing import Any

from protocol.errors import ErrorCode
from wirebroker.txn.config import TxnConfig
from wirebroker.txn.coordinator import TxnCoordinatorCore
from wirebroker.txn.effects import MarkerRequest, TxnAppend, TxnResult


class Kit:
    def __init__(self, **cfg: int) -> None:
        self.pids = itertools.count(1000)
        self.core = TxnCoordinatorCore(TxnConfig(**cfg), lambda: next(self.pids))
        self.now = 1_000_000
        self.log: list[TxnAppend] = []
        self.markers: list[MarkerRequest] = []
        for p in range(self.core.config.num_partitions):
            self.core.complete_loading(p, 3, {}, self.now)

    def apply(self, result: TxnResult[Any], fail: ErrorCode | None = None) -> Any:
        """Append everything `result` asks (failing with `fail`), return the last response."""
        response = result.response
        self.markers += result.markers
        for append in result.appends:
            self.log.append(append)
            done = self.core.append_done(append, fail, self.now)
            if done.response is not None:
                response = done.response
            self.markers += done.markers
            if done.appends:
                self.apply(TxnResult(appends=done.appends))
        return response

    def ack_markers(self) -> None:
        while self.markers:
            req = self.markers.pop(0)
            for tp in sorted(req.partitions):
                self.apply(self.core.marker_done(req, tp, self.now))

    def init(
        self, tid: str = "tx", timeout: int = 60_000, expected: tuple[int, int] | None = None
    ) -> Any:
        return self.apply(self.core.init_producer_id(tid, timeout, self.now, expected))
