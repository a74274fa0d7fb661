"""`IsrManager`: the ISR changes a leader asks for, and their answers (the proposing side of
Kafka's AlterPartitionManager, plus ReplicaManager's ISR shrink and expand).

A leader proposes a new ISR through the one `IsrChangeListener` (the cluster layer: a CAS on
the partition's state znode), which answers `committed` or `rejected`; without a listener the
change is committed at once, locally. Proposals come from a follower that may join
(`expand_on_fetch`), from the periodic check (`maybe_shrink`: members out of sync for
replica.lag.time.max.ms), from a replica set that lost members (`drop_non_replicas`) and from
fault injection (`force_shrink`, whose replicas stay out, `holds`, until `release_hold`).
Pure: no trio; every change is reported through the `ReplicaEvents`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from wirebroker.replication.partition import Partition
from wirebroker.replication.replica_events import ReplicaEvents

__all__ = ["IsrChangeListener", "IsrManager"]

# the messages keep the replica manager's logger (operators and tests look for them)
log = logging.getLogger("wirebroker.replication.replica_manager")


class IsrChangeListener(Protocol):
    """Stores the ISR changes a leader wants (the cluster layer: a CAS on the partition's
    state znode at version `partition_epoch`, keeping `leader_epoch`). It must answer each
    call, later or at once, with `ReplicaManager.isr_committed` or `isr_rejected`."""

    def propose_isr(
        self, topic: str, index: int, *, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None: ...


class IsrManager:
    """ISR proposals and their answers for the partitions this broker leads (module doc)."""

    def __init__(
        self,
        events: ReplicaEvents,
        partition: Callable[[str, int], Partition | None],
        all_partitions: Callable[[], list[Partition]],
        last_now_ms: Callable[[], int],
    ) -> None:
        self._events = events
        self._partition = partition
        self._all_partitions = all_partitions
        self._last_now_ms = last_now_ms
        self.listener: IsrChangeListener | None = None
        #: (topic, partition, replica) kept out of the ISR by an injected fault
        self.holds: set[tuple[str, int, int]] = set()

    def expand_on_fetch(self, part: Partition, replica_id: int, now_ms: int) -> None:
        """Propose the ISR with follower `replica_id` when it may join now (not held out)."""
        wanted = part.isr_to_expand(replica_id)
        if wanted is not None and (part.topic, part.index, replica_id) in self.holds:
            wanted = None  # an injected ISR shrink keeps it out (wirebroker.faults)
        if wanted is not None:
            log.info("%s-%d: ISR expanding %s -> %s", part.topic, part.index, part.isr, wanted)
            self.propose(part, wanted, now_ms)

    def drop_non_replicas(self, part: Partition, now_ms: int) -> None:
        """A leader proposes its ISR without the brokers that are not replicas."""
        wanted = part.isr_without_non_replicas()
        if wanted is not None:
            log.info(
                "%s-%d: ISR shrinking %s -> %s (not replicas: replicas %s)",
                part.topic,
                part.index,
                part.isr,
                wanted,
                part.replicas,
            )
            self.propose(part, wanted, now_ms)

    def maybe_shrink(self, now_ms: int) -> int:
        """Propose dropping the out-of-sync ISR members of every led partition; also moves HWs
        that time alone lets advance. Returns the number of proposals made."""
        proposals = 0
        for part in self._all_partitions():
            if not part.is_leader or part.single_replica:
                continue
            wanted = part.isr_to_shrink(now_ms)
            if wanted is not None:
                log.info(
                    "%s-%d: ISR shrinking %s -> %s (out of sync for replica.lag.time.max.ms)",
                    part.topic,
                    part.index,
                    part.isr,
                    wanted,
                )
                proposals += 1
                self.propose(part, wanted, now_ms)
            elif part.maybe_advance_high_watermark(now_ms):
                self._events.state_changed(part)
        return proposals

    def force_shrink(self, part: Partition, remove: Sequence[int], now_ms: int) -> list[int]:
        """Fault injection (`wirebroker.faults.control`): propose the ISR without `remove`
        (the leader stays) through the ordinary ISR change path, and keep those replicas out
        (`holds`) until `release_hold`. Returns the ISR proposed."""
        isr = [r for r in part.isr if r == part.node_id or r not in remove]
        for replica in remove:
            self.holds.add((part.topic, part.index, replica))
        if isr != part.isr:
            log.warning(
                "%s-%d: ISR shrinking %s -> %s (injected fault)",
                part.topic,
                part.index,
                part.isr,
                isr,
            )
            self.propose(part, isr, now_ms)
        return isr

    def release_hold(self, topic: str, index: int, replicas: Sequence[int]) -> None:
        """The replicas may join the ISR again (when caught up, as always)."""
        for replica in replicas:
            self.holds.discard((topic, index, replica))

    def propose(self, part: Partition, isr: list[int], now_ms: int) -> None:
        listener = self.listener
        if listener is None:
            part.commit_isr(isr, part.partition_epoch + 1, now_ms)
            self._events.state_changed(part)
            return
        part.propose_isr(isr)
        listener.propose_isr(
            part.topic,
            part.index,
            leader_epoch=part.leader_epoch,
            partition_epoch=part.partition_epoch,
            isr=list(isr),
        )

    def committed(
        self,
        topic: str,
        index: int,
        *,
        isr: Sequence[int],
        partition_epoch: int,
        now_ms: int | None = None,
    ) -> None:
        """The ISR `isr` is stored at `partition_epoch` (ignored unless newer than the
        partition's). `now_ms` defaults to the latest time this manager was given (the HW
        rule only needs it to judge followers outside the ISR, and an older time is the
        conservative side)."""
        part = self._partition(topic, index)
        if part is None:
            return
        now = self._last_now_ms() if now_ms is None else now_ms
        if part.commit_isr(isr, partition_epoch, now) or part.is_leader:
            self._events.state_changed(part)
        self.drop_non_replicas(part, now)

    def rejected(
        self,
        topic: str,
        index: int,
        *,
        leader_epoch: int | None = None,
        partition_epoch: int | None = None,
    ) -> None:
        """The proposal was refused: no ISR change until the next make_leader. With the
        (leader epoch, partition epoch) the proposal was made at: a refusal that arrives
        after the partition moved past them (a new leadership applied meanwhile, whose state
        is what refused it) is stale and ignored, as Kafka ignores an AlterPartition error
        for a state it already left; fencing the new leadership would freeze its ISR."""
        part = self._partition(topic, index)
        if (
            part is not None
            and partition_epoch is not None
            and (part.leader_epoch != leader_epoch or part.partition_epoch != partition_epoch)
        ):
            log.info(
                "%s-%d: stale ISR rejection (proposed at leader epoch %s, partition epoch "
                "%s; now %d, %d): ignored",
                topic,
                index,
                leader_epoch,
                partition_epoch,
                part.leader_epoch,
                part.partition_epoch,
            )
            return
        if part is not None:
            log.warning(
                "%s-%d: ISR change rejected; no more ISR changes until new leadership",
                topic,
                index,
            )
            part.reject_isr()
