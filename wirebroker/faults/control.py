"""Fault control of one running broker: request faults and broker-level faults (trio).

`FaultControl` owns the broker's `FaultRules` (the dispatcher consults the same object) and
applies the faults that are not about one request:

    unreachable          close the Kafka listeners (new clients: connection refused) and reset
                         every current connection; stays until removed (or `reachable()`),
                         then the same addresses are bound again. The admin listener, the
                         ZooKeeper session and this broker's own fetchers are untouched: the
                         broker is unreachable for clients and for the followers fetching
                         from it (so their ISR membership lapses after replica.lag.time.max.ms,
                         as after a network partition)
    refuse_connections   close the Kafka listeners only; current connections go on
    drop_connections     one-shot: reset every current connection (clients reconnect)
    move_leader          a partition's leadership to another replica, through the path an
                         operator takes: a reassignment to the same replicas with the target
                         first (`TopicAdmin.alter_reassignments`, the controller's KIP-455
                         path), then a preferred-leader election (`TopicAdmin.elect_leaders`,
                         /admin/preferred_replica_election); waits until this broker's
                         metadata shows the new leader. One-shot (the new order stays, as
                         after Kafka's tools). On a single broker: an error (one replica)
    shrink_isr           on the partition's leader: the ISR without the given followers (all
                         of them by default) through the leader's ordinary ISR change (a
                         ZooKeeper CAS, partition epoch + 1), and those followers kept out
                         until the fault is removed; then they rejoin once caught up

Every fault added, hit or removed is logged at WARNING on "wirebroker.faults" (request faults
are logged on each hit by the dispatcher). Errors a caller can fix raise `FaultError` (the HTTP
layer answers 400 or 409 with its message).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import trio

from protocol.errors import ErrorCode
from wirebroker.faults.core import BrokerFault, Fault, FaultRules, RequestFault

if TYPE_CHECKING:
    from wirebroker.cluster.zk_member import ClusterMember
    from wirebroker.metadata.topic_admin import TopicAdmin
    from wirebroker.net.server import KafkaServer
    from wirebroker.replication.replica_manager import ReplicaManager

__all__ = ["BROKER_KINDS", "FaultControl", "FaultError"]

log = logging.getLogger("wirebroker.faults")

BROKER_KINDS = (
    "unreachable",
    "refuse_connections",
    "drop_connections",
    "move_leader",
    "shrink_isr",
)
_PAUSING = ("unreachable", "refuse_connections")


class FaultError(Exception):
    """A fault that cannot be applied; `status` 400 (bad request) or 409 (wrong state)."""

    def __init__(self, message: str, status: int = 409, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.details = details


class FaultControl:
    """The faults of one broker (see the module docstring)."""

    def __init__(
        self,
        rules: FaultRules,
        *,
        server: KafkaServer,
        replicas: ReplicaManager,
        admin: TopicAdmin,
        member: Callable[[], ClusterMember | None],
        node_id: int,
        clock: Callable[[], int],
    ) -> None:
        self.rules = rules
        self.server = server
        self.replicas = replicas
        self.admin = admin
        self._member = member
        self.node_id = node_id
        self.clock = clock

    # -- request faults -----------------------------------------------------------------------
    def add_request_fault(self, kind: str, **spec: Any) -> RequestFault:
        try:
            fault = self.rules.add_request_fault(kind, now_ms=self.clock(), **spec)
        except ValueError as exc:
            raise FaultError(str(exc), 400) from exc
        log.warning("fault added: %s", fault.describe())
        return fault

    # -- connections --------------------------------------------------------------------------
    async def unreachable(self) -> BrokerFault:
        fault = self.rules.add_broker_fault("unreachable")
        self.server.pause_accepting()
        await self.server.wait_listening(False)
        dropped = self.server.drop_connections()
        fault.hits = dropped
        log.warning(
            "fault %d: broker %d unreachable (listeners closed, %d connection(s) reset)",
            fault.id,
            self.node_id,
            dropped,
        )
        return fault

    async def reachable(self) -> list[Fault]:
        """Remove every unreachable / refuse_connections fault; returns once accepting."""
        pausing = [f.id for f in self.rules.broker_faults() if f.kind in _PAUSING]
        removed = [self._remove(fault_id) for fault_id in pausing]
        await self.settled()
        return [f for f in removed if f is not None]

    async def settled(self) -> None:
        """Return once the listeners are as the faults say (closed while one pauses them)."""
        paused = any(f.kind in _PAUSING for f in self.rules.broker_faults())
        await self.server.wait_listening(not paused)

    async def refuse_connections(self) -> BrokerFault:
        fault = self.rules.add_broker_fault("refuse_connections")
        self.server.pause_accepting()
        await self.server.wait_listening(False)
        log.warning("fault %d: broker %d refuses new connections", fault.id, self.node_id)
        return fault

    def drop_connections(self) -> int:
        dropped = self.server.drop_connections()
        log.warning("fault: broker %d reset %d connection(s)", self.node_id, dropped)
        return dropped

    # -- partitions ---------------------------------------------------------------------------
    async def move_leader(
        self, topic: str, partition: int, to: int | None = None, *, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        """Leadership of `topic`-`partition` to replica `to` (default: the next in-sync
        replica after the current leader); returns {"leader", "leader_epoch", "replicas"}."""
        member = self._member()
        view = member.cache.partition(topic, partition) if member is not None else None
        if member is None or view is None:
            raise FaultError(f"unknown partition {topic}-{partition}", 404)
        if to is None:
            others = [r for r in view.isr if r != view.leader]
            if not others:
                raise FaultError(
                    f"{topic}-{partition} has no other in-sync replica to lead it "
                    f"(replicas {view.replicas}, ISR {view.isr})"
                )
            to = others[0]
        if to not in view.replicas:
            raise FaultError(
                f"broker {to} is not a replica of {topic}-{partition} ({view.replicas})"
            )
        if to == view.leader:
            raise FaultError(f"broker {to} already leads {topic}-{partition}")
        if to not in view.isr:
            raise FaultError(f"broker {to} is not in the ISR of {topic}-{partition} ({view.isr})")
        order = [to, *(r for r in view.replicas if r != to)]
        log.warning(
            "fault: moving the leadership of %s-%d from %d to %d (replicas %s -> %s)",
            topic,
            partition,
            view.leader,
            to,
            view.replicas,
            order,
        )
        with trio.move_on_after(timeout_s):
            await self._reorder(member, topic, partition, order)
            elected = await self.admin.elect_leaders(
                [(topic, partition)], preferred=True, timeout_s=timeout_s
            )
            code, message = (elected or {}).get((topic, partition), (0, None))
            if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED):
                raise FaultError(f"election failed: {ErrorCode(code).name}: {message}")
        view = member.cache.partition(topic, partition)
        if view is None or view.leader != to:
            raise FaultError(f"{topic}-{partition}: broker {to} did not take the leadership")
        return {"leader": view.leader, "leader_epoch": view.leader_epoch, "replicas": order}

    async def _reorder(
        self, member: ClusterMember, topic: str, partition: int, order: list[int]
    ) -> None:
        result = await self.admin.alter_reassignments(
            [(topic, partition, order)], allow_rf_change=False
        )
        code, message = (result or {}).get((topic, partition), (0, None))
        if code:
            raise FaultError(f"reassignment refused: {ErrorCode(code).name}: {message}")
        while True:  # this broker's mirror must show the new order before electing
            view = member.cache.partition(topic, partition)
            if view is not None and view.replicas == order:
                return
            await member.changed.wait()

    def shrink_isr(
        self, topic: str, partition: int, replicas: Sequence[int] | None = None
    ) -> BrokerFault:
        """On the leader: the ISR without `replicas` (default: every follower), held."""
        part = self.replicas.partition(topic, partition)
        if part is None:
            raise FaultError(f"unknown partition {topic}-{partition}", 404)
        if not part.is_leader:
            leader = self._leader_of(topic, partition)
            raise FaultError(
                f"broker {self.node_id} does not lead {topic}-{partition} (broker {leader} "
                "does): ask the leader's admin listener",
                409,
                leader=leader,
            )
        followers = [r for r in part.replicas if r != self.node_id]
        remove = list(followers if replicas is None else replicas)
        if not remove:
            raise FaultError(
                f"{topic}-{partition} has no follower to drop from its ISR "
                f"(replicas {part.replicas})"
            )
        if self.node_id in remove:
            raise FaultError("the leader cannot leave its own ISR (move_leader first)", 400)
        unknown = [r for r in remove if r not in followers]
        if unknown:
            raise FaultError(f"{unknown} are not followers of {topic}-{partition}", 400)
        before = list(part.isr)
        isr = self.replicas.force_isr_shrink(part, remove, self.clock())
        fault = self.rules.add_broker_fault(
            "shrink_isr", topic=topic, partition=partition, replicas=remove, isr=isr
        )
        log.warning(
            "fault %d: %s-%d ISR %s -> %s, %s kept out until the fault is removed",
            fault.id,
            topic,
            partition,
            before,
            isr,
            remove,
        )
        return fault

    def _leader_of(self, topic: str, partition: int) -> int:
        member = self._member()
        view = member.cache.partition(topic, partition) if member is not None else None
        return view.leader if view is not None else -1

    # -- listing and removing -----------------------------------------------------------------
    def faults(self) -> list[Fault]:
        return self.rules.list(self.clock())

    def remove(self, fault_id: int) -> Fault | None:
        return self._remove(fault_id)

    def clear(self) -> list[Fault]:
        removed = self.rules.clear()
        for fault in removed:
            self._undo(fault)
        return removed

    def _remove(self, fault_id: int) -> Fault | None:
        fault = self.rules.remove(fault_id)
        if fault is not None:
            self._undo(fault)
        return fault

    def _undo(self, fault: Fault) -> None:
        log.warning("fault %d (%s) removed", fault.id, fault.kind)
        if not isinstance(fault, BrokerFault):
            return
        if fault.kind in _PAUSING and not any(
            f.kind in _PAUSING for f in self.rules.broker_faults()
        ):
            self.server.resume_accepting()
        elif fault.kind == "shrink_isr":
            params = fault.params
            self.replicas.release_isr_hold(params["topic"], params["partition"], params["replicas"])
