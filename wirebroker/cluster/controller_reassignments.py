"""The controller's steps of partition reassignments (KIP-455; Kafka's ZooKeeper-mode
KafkaController.onPartitionReassignment), run by `ZkController` at the end of each pass.

While a reassignment runs, a partition's assignment holds the target replicas and the leaving
ones (adding_replicas / removing_replicas, written by `ZkTopicAdmin.alter_reassignments`), so
every election rule applies to all of them and every broker named there holds a replica.
For each such partition, each pass:

    start     once per reassignment (per assignment znode version): leader epoch + 1, same
              leader and ISR (Kafka's step A3, `announce`); the controller watches the
              partition's state from then on
    wait      until every target replica is in the ISR (`elections.reassignment_complete`;
              the leader adds a caught-up replica; its state write triggers the next pass)
    complete  one multi for the topic (Kafka's steps B3-B6 at once, as KRaft's single
              PartitionChangeRecord): the assignment shrunk to the targets and each completed
              partition's state (`elections.finish_reassignment`: the leaving replicas out of
              the ISR, a target replica leading, leader epoch + 1), conditional on the
              assignment's and each state's version, fenced by the controller epoch

The completing state and the new replica set share the multi's zxid, and a broker applies a
reassigning partition's state only with an assignment read at that zxid or later
(`ClusterMember._assignment_for_state`): the leader of the new epoch never counts a leaving
replica among its replicas, so it can never take it back into its ISR (it did when the state
was written first: compat/kafka-tools/FINDINGS.md, `kafka-reassign-partitions.move`). Kafka's
controller sends the new replica set with that epoch (B3). A state or assignment changed
meanwhile fails the multi; the next pass decides again from what is there then.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.elections import finish_reassignment, reassignment_complete
from wirebroker.coordination.api import Coordination, NoNodeError, Op, SetData, Watch

__all__ = ["Reassignments"]

log = logging.getLogger("wirebroker.controller")


class Reassignments:
    """One controller's reassignment steps (see the module docstring)."""

    def __init__(
        self,
        coord: Coordination,
        epoch: int,
        write: Callable[[list[Op]], Awaitable[None]],
        trigger: Callable[[str], Callable[..., None]],
    ) -> None:
        self.coord = coord
        self.epoch = epoch  # the controller epoch written into the states
        self._write = write  # one multi of the ops, fenced by the controller epoch
        self._trigger = trigger  # topic -> a watch callback asking for a pass over it
        self._state_watches: dict[tuple[str, int], Watch] = {}
        # (topic, partition) -> the assignment znode version whose reassignment was announced
        self._announced: dict[tuple[str, int], int] = {}

    def cancel(self) -> None:
        for watch in self._state_watches.values():
            watch.cancel()
        self._state_watches.clear()

    async def advance(
        self,
        topic: str,
        assignment: zl.TopicAssignment,
        version: int,
        states: dict[int, zl.PartitionState | None],
        live: set[int],
    ) -> None:
        """Start, or complete, the reassignments of `topic`'s partitions; `assignment` was
        read at znode `version`, `states` in this pass (updated with the announcements)."""
        done: dict[int, tuple[int, ...]] = {}
        ops: list[Op] = []
        for index in sorted(set(assignment.adding) | set(assignment.removing)):
            key = (topic, index)
            if key not in self._state_watches:
                self._state_watches[key] = await self.coord.watch_data(
                    zl.state_path(topic, index), self._trigger(topic)
                )
            leaving = assignment.removing.get(index, ())
            target = tuple(r for r in assignment.replicas(index) if r not in leaving)
            state = states.get(index)
            if state is None or not reassignment_complete(target, state):
                if state is not None and self._announced.get(key) != version:
                    states[index] = await self.announce(topic, index, state)
                    self._announced[key] = version
                continue
            write = await self._completing_state(topic, index, target, live)
            if write is None:
                continue  # the state moved on since the pass read it: its watch triggers
            ops.extend(write)
            done[index] = target
        if done:
            await self._complete(topic, assignment, version, done, ops)

    async def _complete(
        self,
        topic: str,
        assignment: zl.TopicAssignment,
        version: int,
        done: dict[int, tuple[int, ...]],
        states: list[Op],
    ) -> None:
        """The one multi: the assignment with `done` partitions at their targets, and the
        `states` writes."""
        partitions = dict(assignment.partitions)
        adding = dict(assignment.adding)
        removing = dict(assignment.removing)
        for index, target in done.items():
            partitions[index] = target
            adding.pop(index, None)
            removing.pop(index, None)
        new_assignment = dataclasses.replace(
            assignment, partitions=partitions, adding=adding, removing=removing
        )
        await self._write(
            [SetData(zl.topic_path(topic), zl.encode_topic(new_assignment), version), *states]
        )
        for index in done:
            self._announced.pop((topic, index), None)
            watch = self._state_watches.pop((topic, index), None)
            if watch is not None:
                watch.cancel()
        log.info("%s: reassignment of partition(s) %s complete", topic, sorted(done))

    async def _completing_state(
        self, topic: str, index: int, target: tuple[int, ...], live: set[int]
    ) -> list[Op] | None:
        """The write of a completing partition's state (`finish_reassignment` of its state as
        read now, at its version): none when the state already fits the target; None when it
        is gone or no longer complete (another pass follows its change)."""
        path = zl.state_path(topic, index)
        try:
            data, stat = await self.coord.get(path)
        except NoNodeError:
            return None
        state = zl.decode_partition_state(topic, index, data)
        if not reassignment_complete(target, state):
            return None
        new = finish_reassignment(target, state, live=live, controller_epoch=self.epoch)
        if new is None:
            return []
        log.info(
            "%s-%d: reassignment complete: leader %d, leader epoch %d, ISR %s, replicas %s",
            topic,
            index,
            new.leader,
            new.leader_epoch,
            list(new.isr),
            list(target),
        )
        return [SetData(path, zl.encode_partition_state(new), stat.version)]

    async def announce(self, topic: str, index: int, state: zl.PartitionState) -> zl.PartitionState:
        """Kafka's step A3 (updateLeaderEpochAndSendRequest): the partition's leader epoch goes
        up by one, same leader and ISR, as Kafka's controller does to send the new replica set
        to the leader (wirebroker's brokers take it from the assignment, with or without a new
        state: `ReplicaManager.make_leader`). Returns the state now in ZooKeeper (unchanged
        when it has no leader, or changed meanwhile: the pass that change triggers sees the
        reassignment as announced)."""
        if state.leader < 0:
            return state
        path = zl.state_path(topic, index)
        data, stat = await self.coord.get(path)
        current = zl.decode_partition_state(topic, index, data)
        if current != state:
            return current
        bumped = dataclasses.replace(
            state, leader_epoch=state.leader_epoch + 1, controller_epoch=self.epoch
        )
        await self._write([SetData(path, zl.encode_partition_state(bumped), stat.version)])
        log.info("%s-%d: reassignment started: leader epoch %d", topic, index, bumped.leader_epoch)
        return bumped
