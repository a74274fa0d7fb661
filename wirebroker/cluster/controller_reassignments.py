"""The runtime of the controller's partition reassignment steps (KIP-455; Kafka's ZooKeeper-
mode KafkaController.onPartitionReassignment), run by `ZkController` at the end of each pass:
it watches the reassigning partitions' states and applies what the pure
`controller_context.plan_reassignment` decides from the states the pass read.

While a reassignment runs, a partition's assignment holds the target replicas and the leaving
ones (adding_replicas / removing_replicas, written by `ZkTopicAdmin.alter_reassignments`), so
every election rule applies to all of them and every broker named there holds a replica.
For each such partition, each pass:

    start     once per reassignment (per assignment znode version): leader epoch + 1, same
              leader and ISR (Kafka's step A3; wirebroker's brokers take the new replica set
              from the assignment, with or without a new state: `ReplicaManager.make_leader`);
              the controller watches the partition's state from then on (a change re-reads
              that state into its context and plans the partition again)
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
since the pass read it fails the write (each is conditional on the version read); the next
pass decides again from what is there then.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Collection

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller_context import ControllerContext, plan_reassignment
from wirebroker.coordination.api import Coordination, Op, SetData, Watch

__all__ = ["Reassignments"]

log = logging.getLogger("wirebroker.controller")


class Reassignments:
    """One controller's reassignment steps (see the module docstring)."""

    def __init__(
        self,
        coord: Coordination,
        context: ControllerContext,
        write: Callable[[list[Op]], Awaitable[None]],
        trigger: Callable[[str, int], Callable[..., None]],
    ) -> None:
        self.coord = coord
        self.context = context
        self._write = write  # one multi of the ops, fenced by the controller epoch
        #: (topic, partition) -> a watch callback asking to read that state and plan again
        self._trigger = trigger
        self._state_watches: dict[tuple[str, int], Watch] = {}

    def cancel(self) -> None:
        for watch in self._state_watches.values():
            watch.cancel()
        self._state_watches.clear()

    def forget(self, topic: str) -> None:
        """Stop watching the states of `topic` (deleted)."""
        for key in [k for k in self._state_watches if k[0] == topic]:
            self._state_watches.pop(key).cancel()

    async def advance(self, topic: str, live: Collection[int]) -> None:
        """Start, or complete, the reassignments of `topic`'s partitions, from the assignment
        and states the context holds. Each successful write updates the context (the state, or
        the assignment, at its znode's next version); a refused one raises TransactionError."""
        entry = self.context.topics.get(topic)
        if entry is None:
            return
        assignment = entry.assignment
        for index in sorted(set(assignment.adding) | set(assignment.removing)):
            key = (topic, index)
            if key not in self._state_watches:
                self._state_watches[key] = await self.coord.watch_data(
                    zl.state_path(topic, index), self._trigger(topic, index)
                )
        step = plan_reassignment(self.context, topic, live)
        for key, start in step.starts:
            if start is not None:
                path = zl.state_path(*key)
                new = zl.encode_partition_state(start.new)
                await self._write([SetData(path, new, start.version)])
                self.context.wrote(start)
                log.info(
                    "%s-%d: reassignment started: leader epoch %d",
                    *key,
                    start.new.leader_epoch,
                )
            self.context.started[key] = entry.version
        done = step.complete
        if done is None:
            return
        ops: list[Op] = [
            SetData(zl.topic_path(topic), zl.encode_topic(done.assignment), done.version)
        ]
        for write in done.states:
            path = zl.state_path(topic, write.partition)
            ops.append(SetData(path, zl.encode_partition_state(write.new), write.version))
        await self._write(ops)
        self.context.set_topic(
            topic, dataclasses.replace(entry, assignment=done.assignment, version=done.version + 1)
        )
        for write in done.states:
            self.context.wrote(write)
            log.info(
                "%s-%d: reassignment complete: leader %d, leader epoch %d, ISR %s, replicas %s",
                topic,
                write.partition,
                write.new.leader,
                write.new.leader_epoch,
                list(write.new.isr),
                list(done.assignment.replicas(write.partition)),
            )
        for index in done.done:
            self.context.started.pop((topic, index), None)
            watch = self._state_watches.pop((topic, index), None)
            if watch is not None:
                watch.cancel()
        log.info("%s: reassignment of partition(s) %s complete", topic, sorted(done.done))
