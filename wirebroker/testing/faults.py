"""Fault control from a test: the /faults API of a broker as Python calls.

    with wirebroker.running() as broker:
        broker.faults.error("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic="orders")
        broker.faults.delay("Fetch", 500)
        broker.faults.close("Metadata", client_id="flaky")
        broker.faults.unreachable(); ...; broker.faults.reachable()
        broker.faults.drop_connections()
        broker.faults.list(); broker.faults.clear()

    with wirebroker.running_cluster(3) as cluster:
        cluster.faults.move_leader("orders", 0)          # to the next in-sync replica
        cluster.faults.shrink_isr("orders", 0)           # sent to the partition's leader
        cluster.faults[2].unreachable()                  # one broker (node id 2)

Two transports, one API (`wirebroker.faults.http.handle` behind both): `Faults.http(url)`
speaks HTTP to a broker's admin listener (urllib: no dependency), `Faults.in_process(broker,
trio_token)` calls a broker served from a thread of this process (`running(thread=True)`)
on its own trio loop. Every method raises `FaultRequestError` (status + the broker's message)
when the broker refuses. Fault ids are ints; `remove(id)` undoes one.
"""

from __future__ import annotations

import builtins
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wirebroker.broker import Broker

__all__ = ["ClusterFaults", "FaultRequestError", "Faults"]

Call = Callable[[str, str, "dict[str, Any] | None"], "tuple[int, Any]"]


#: How long `ClusterFaults.shrink_isr` follows a leadership that is still moving.
LEADER_WAIT_S = 10.0


class FaultRequestError(RuntimeError):
    """The broker refused a fault request (`status`: 400 bad request, 404, 409)."""

    def __init__(self, status: int, body: Any) -> None:
        message = body.get("error") if isinstance(body, dict) else body
        super().__init__(f"{status}: {message}")
        self.status = status
        self.body = body


class Faults:
    """The faults of one broker (see the module docstring)."""

    def __init__(self, call: Call, *, where: str = "") -> None:
        self._call = call
        self.where = where

    @classmethod
    def http(cls, admin_url: str, *, timeout: float = 60.0) -> Faults:
        """Over HTTP: `admin_url` is the admin listener, e.g. "http://127.0.0.1:9644"."""
        base = admin_url.rstrip("/")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no *_proxy

        def call(method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
            data = None if body is None else json.dumps(body).encode()
            request = urllib.request.Request(base + path, data=data, method=method)
            if data is not None:
                request.add_header("Content-Type", "application/json")
            try:
                with opener.open(request, timeout=timeout) as response:
                    return response.status, json.loads(response.read() or b"null")
            except urllib.error.HTTPError as exc:
                raw = exc.read()
                try:
                    return exc.code, json.loads(raw or b"null")
                except ValueError:
                    return exc.code, raw.decode(errors="replace")

        return cls(call, where=base)

    @classmethod
    def in_process(cls, broker: Broker, trio_token: Any) -> Faults:
        """A broker served by `trio.run` in another thread of this process."""
        import trio

        from wirebroker.faults.http import handle

        def call(method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
            raw = b"" if body is None else json.dumps(body).encode()
            return trio.from_thread.run(
                handle, broker.fault_control, method, path, raw, trio_token=trio_token
            )

        return cls(call, where=f"broker {broker.config.node_id} (in process)")

    def __repr__(self) -> str:
        return f"<Faults of {self.where}>"

    # -- requests -------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        status, answer = self._call(method, path, body)
        if status >= 400:
            raise FaultRequestError(status, answer)
        return answer

    def add(self, kind: str, **fields: Any) -> dict[str, Any]:
        """POST one fault as the JSON API takes it (None values are left out); the answer."""
        body = {"kind": kind, **{k: v for k, v in fields.items() if v is not None}}
        answer: dict[str, Any] = self._request("POST", "/faults", body)
        return answer

    def error(
        self,
        api: int | str | None,
        error: int | str,
        *,
        count: int | None = 1,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
        duration_ms: int | None = None,
    ) -> int:
        """Answer the next `count` requests of `api` (None: every API; count None: until
        removed) with `error` (a code or a name: "NOT_LEADER_OR_FOLLOWER"). The fault's id."""
        return self._post_request_fault(
            "error", api, count, topic, partition, client_id, duration_ms, error_code=error
        )

    def delay(
        self,
        api: int | str | None,
        delay_ms: int,
        *,
        count: int | None = 1,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
        duration_ms: int | None = None,
    ) -> int:
        """Hold the next `count` requests of `api` for `delay_ms`, then serve them."""
        return self._post_request_fault(
            "delay", api, count, topic, partition, client_id, duration_ms, delay_ms=delay_ms
        )

    def close(
        self,
        api: int | str | None,
        *,
        count: int | None = 1,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
        duration_ms: int | None = None,
    ) -> int:
        """Close the connection of the next `count` requests of `api`, unanswered."""
        return self._post_request_fault(
            "close", api, count, topic, partition, client_id, duration_ms
        )

    def _post_request_fault(
        self,
        kind: str,
        api: int | str | None,
        count: int | None,
        topic: str | None,
        partition: int | None,
        client_id: str | None,
        duration_ms: int | None,
        **extra: Any,
    ) -> int:
        body: dict[str, Any] = {"kind": kind, "api_key": api, "count": count, **extra}
        for key, value in (
            ("topic", topic),
            ("partition", partition),
            ("client_id", client_id),
            ("duration_ms", duration_ms),
        ):
            if value is not None:
                body[key] = value
        answer = self._request("POST", "/faults", body)
        return int(answer["fault"]["id"])

    # -- broker faults ----------------------------------------------------------------------
    def unreachable(self) -> int:
        """Close the Kafka listeners and reset every connection until `reachable()`."""
        return int(self.add("unreachable")["fault"]["id"])

    def reachable(self) -> list[dict[str, Any]]:
        """Accept connections again (removes unreachable and refuse_connections faults)."""
        removed: list[dict[str, Any]] = self.add("reachable")["result"]["removed"]
        return removed

    def refuse_connections(self) -> int:
        """Refuse new connections (current ones go on) until the fault is removed."""
        return int(self.add("refuse_connections")["fault"]["id"])

    def drop_connections(self) -> int:
        """Reset every current connection now; how many there were."""
        return int(self.add("drop_connections")["result"]["dropped"])

    def move_leader(self, topic: str, partition: int, to: int | None = None) -> dict[str, Any]:
        """Move the partition's leadership (to `to`, default the next in-sync replica);
        returns {"leader", "leader_epoch", "replicas"} once this broker sees it."""
        result: dict[str, Any] = self.add("move_leader", topic=topic, partition=partition, to=to)[
            "result"
        ]
        return result

    def shrink_isr(self, topic: str, partition: int, replicas: Sequence[int] | None = None) -> int:
        """On the partition's leader: drop `replicas` (default every follower) from the ISR
        and keep them out until the fault is removed."""
        fields: dict[str, Any] = {"topic": topic, "partition": partition}
        if replicas is not None:
            fields["replicas"] = list(replicas)
        return int(self.add("shrink_isr", **fields)["fault"]["id"])

    # -- listing and removing ---------------------------------------------------------------
    def list(self) -> list[dict[str, Any]]:
        faults: list[dict[str, Any]] = self._request("GET", "/faults")["faults"]
        return faults

    def remove(self, fault_id: int) -> dict[str, Any]:
        removed: dict[str, Any] = self._request("DELETE", f"/faults/{fault_id}")["removed"]
        return removed

    def clear(self) -> builtins.list[dict[str, Any]]:
        removed: builtins.list[dict[str, Any]] = self._request("DELETE", "/faults")["removed"]
        return removed

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.list())


class ClusterFaults:
    """The faults of every broker of a cluster: `cluster.faults[node_id]` is one broker's
    `Faults`; `move_leader` asks any broker; `shrink_isr` asks the partition's leader;
    `list` / `clear` cover every broker."""

    def __init__(self, brokers: dict[int, Faults], leader_of: Callable[[str, int], int]) -> None:
        self.brokers = brokers
        self._leader_of = leader_of

    def __getitem__(self, node_id: int) -> Faults:
        return self.brokers[node_id]

    def move_leader(self, topic: str, partition: int, to: int | None = None) -> dict[str, Any]:
        return next(iter(self.brokers.values())).move_leader(topic, partition, to)

    def shrink_isr(
        self, topic: str, partition: int, replicas: Sequence[int] | None = None
    ) -> tuple[int, int]:
        """(leader node id, fault id): remove it with `cluster.faults[leader].remove(id)`.
        Sent where metadata says the leader is; a broker that does not lead names the leader
        it knows (409 {"leader": N}), which is asked next. Right after a move the brokers may
        still disagree (each learns it from its own ZooKeeper watch, so two may name each
        other for a moment): a broker named a second time is asked again after a short pause,
        until LEADER_WAIT_S have passed."""
        deadline = time.monotonic() + LEADER_WAIT_S
        leader = self._leader_of(topic, partition)
        asked: set[int] = set()
        while True:
            asked.add(leader)
            try:
                return leader, self.brokers[leader].shrink_isr(topic, partition, replicas)
            except FaultRequestError as exc:
                hint = exc.body.get("leader") if isinstance(exc.body, dict) else None
                if exc.status != 409 or time.monotonic() >= deadline:
                    raise
                if hint not in self.brokers or hint == leader:
                    hint = self._leader_of(topic, partition)
                if hint in asked:  # the views have not converged yet
                    time.sleep(0.05)
                leader = hint

    def list(self) -> dict[int, list[dict[str, Any]]]:
        return {node: faults.list() for node, faults in self.brokers.items()}

    def clear(self) -> None:
        for faults in self.brokers.values():
            faults.clear()
