"""The scripted conversation: steps (compared), actions (not compared) and scenarios.

A `Scenario` is a named sequence of items played on one connection per side:

- `Step`: one request, sent to both brokers; the answers are compared. Its body is a dict or
  a function of the side's `Ctx` (so a step can use what an earlier step's answer gave on that
  side: a member id, a producer id); `keep` reads values from the answer into `ctx.vars`.
- `Do`: a harness action on each side, not compared: set the stage (create a topic), or wait
  for a condition with a deadline (a partition has a leader; a transaction is complete) so that
  the next compared answer does not depend on timing.

Scenarios of the same `phase` run concurrently (each on its own connection and its own
topics/groups, so they cannot see each other); phases run in order. Both sides play the whole
script at the same time, each in its own thread pool.

Names: `ctx.name("orders")` is the run-unique real name (`<token>-orders`), the same on both
sides; the report shows it as `<orders>` (normalise.py, rule run-names).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from compat.conformance.transport import ANSWER, Connection, Outcome, Request


class HarnessError(RuntimeError):
    """An action could not set the stage on one side."""


BodyFn = Callable[["Ctx"], Mapping[str, Any]]
Body = Mapping[str, Any] | BodyFn


@dataclass(frozen=True)
class Step:
    id: str
    api: int
    version: int
    body: Body | None = None
    note: str = ""
    keep: Callable[[Ctx, Any], None] | None = None
    raw: Callable[[Ctx, Connection], Request] | None = None
    answer_due: bool = True
    listing: bool = False
    timeout: float | None = None


@dataclass(frozen=True)
class Do:
    what: str
    run: Callable[[Ctx], None]


Item = Step | Do


@dataclass(frozen=True)
class Scenario:
    name: str
    items: tuple[Item, ...]
    phase: int = 1

    def steps(self) -> list[Step]:
        return [i for i in self.items if isinstance(i, Step)]


class Names:
    """The run's real names: `<token>-<logical>`, shared by both sides."""

    def __init__(self, token: str) -> None:
        self.token = token
        self._real: dict[str, str] = {}
        self._lock = threading.Lock()

    def real(self, logical: str) -> str:
        with self._lock:
            if logical not in self._real:
                self._real[logical] = f"{self.token}-{logical}"
            return self._real[logical]

    def reverse(self) -> dict[str, str]:
        with self._lock:
            return {real: logical for logical, real in self._real.items()}


@dataclass
class Side:
    """One broker under comparison."""

    label: str  # "kafka" or "wirebroker"
    bootstrap: str
    names: Names
    node_id: int = -1
    cluster_id: str | None = None
    shared: dict[str, Any] = field(default_factory=dict)  # values set in one phase, read later
    advertised: dict[int, tuple[int, int]] = field(default_factory=dict)  # its ApiVersions

    def serves(self, api: int) -> bool:
        """Whether this broker advertises `api` (any version)."""
        return api in self.advertised

    @property
    def host(self) -> str:
        return self.bootstrap.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.bootstrap.rpartition(":")[2])


class Ctx:
    """One scenario on one side: its connection and the values its steps kept."""

    def __init__(self, side: Side, timeout: float = 15.0) -> None:
        self.side = side
        self.vars: dict[str, Any] = {}
        self.conn = Connection(side.bootstrap, timeout)

    def name(self, logical: str) -> str:
        return self.side.names.real(logical)

    def call(self, api: int, version: int, body: Mapping[str, Any], timeout: float = 15.0) -> Any:
        """One request for an action: its decoded answer, or HarnessError."""
        outcome = self.conn.exchange(self.conn.request(api, version, body), timeout=timeout)
        if outcome.kind != ANSWER:
            raise HarnessError(f"api {api} v{version}: {outcome.kind} {outcome.detail}")
        return outcome.body

    def wait(
        self,
        what: str,
        check: Callable[[], bool],
        timeout: float = 30.0,
        poll: float = 0.05,
    ) -> None:
        """Until `check()` is true; HarnessError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise HarnessError(f"{what}: not within {timeout:.0f} s")
            time.sleep(poll)

    def close(self) -> None:
        self.conn.close()


@dataclass(frozen=True)
class Played:
    """A step's outcome on one side."""

    step: Step
    outcome: Outcome


@dataclass
class SideResult:
    played: dict[str, Played] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # actions that failed: "scenario: what: why"
