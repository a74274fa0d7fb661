"""The ISR writer: a leader's ISR changes stored in ZooKeeper (Kafka's AlterPartitionManager).

`IsrWriter` is the ReplicaManager's `IsrChangeListener` (through `ClusterMember.propose_isr`):
each proposal is one multi: a conditional setData of the partition's state znode (version =
the partition epoch it was made at, leader epoch unchanged) and a sequential ISR change
notification naming the partition (/isr_change_notification/isr_change_<seq>, which the
controller reads to refresh that partition's state in its context, then deletes; Kafka's
leader writes the notification separately, batched: here it lands with the change or not at
all, so the controller never misses one), run as a task of the member.
Success -> `isr_committed` with the znode's new version, also mirrored; a stale version ->
`isr_rejected` (a zombie leader cannot shrink the ISR, so it can never acknowledge acks=all
alone); an unknown outcome (connection lost) is retried, see `IsrWriter._set_state`.
One proposal per partition is in flight: the leader's `Partition` proposes again only once
answered (`pending_isr`); a retried write whose partition moved on (a new state mirrored)
stops by itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.zk_metadata_cache import ZkMetadataCache
from wirebroker.cluster.zk_registration import Registration
from wirebroker.cluster.zk_roles import ReplicaRoles
from wirebroker.coordination.api import (
    BadVersionError,
    Coordination,
    CoordinationError,
    Create,
    NoNodeError,
    SetData,
    Stat,
    TransactionError,
)
from wirebroker.metadata.partition_state import PartitionState

__all__ = ["ISR_RETRY_MAX_S", "ISR_RETRY_MIN_S", "IsrWriter"]

log = logging.getLogger("wirebroker.cluster")

#: An ISR write whose outcome is unknown (connection lost) is retried this often, doubling.
ISR_RETRY_MIN_S = 0.1
ISR_RETRY_MAX_S = 2.0


class IsrWriter:
    """Writes the ISR changes a leader proposes (see the module docstring)."""

    def __init__(
        self,
        coord: Coordination,
        *,
        node_id: int,
        cache: ZkMetadataCache,
        replicas: ReplicaRoles,
        registration: Registration,
        start_soon: Callable[..., None],
    ) -> None:
        self.coord = coord
        self.node_id = node_id
        self.cache = cache
        self.replicas = replicas
        self.registration = registration
        self._start_soon = start_soon

    def propose_isr(
        self, topic: str, index: int, *, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None:
        self._start_soon(self._write_isr, topic, index, leader_epoch, partition_epoch, isr)

    async def _write_isr(
        self, topic: str, index: int, leader_epoch: int, partition_epoch: int, isr: list[int]
    ) -> None:
        entry = self.cache.state(topic, index)
        controller_epoch = entry[0].controller_epoch if entry is not None else 0
        state = PartitionState(self.node_id, leader_epoch, tuple(isr), controller_epoch)
        stat = await self._set_state(topic, index, state, partition_epoch)
        if stat is None:
            return
        log.info("%s-%d: ISR now %s (leader epoch %d)", topic, index, isr, leader_epoch)
        mirror = self.cache.topics.get(topic)
        if mirror is not None:
            mirror.set_state(index, state, stat)
        self.replicas.isr_committed(topic, index, isr=isr, partition_epoch=stat.version)

    async def _write(self, topic: str, index: int, data: bytes, version: int) -> Stat:
        """One multi: the state znode's setData at `version` and the ISR change notification.
        BadVersionError / NoNodeError: the state moved on; any other CoordinationError: not
        written, or unknown (a missing /isr_change_notification is created first)."""
        notification = Create(
            zl.ISR_CHANGE_PREFIX, zl.encode_preferred_election([(topic, index)]), sequential=True
        )
        try:
            results = await self.coord.multi(
                [SetData(zl.state_path(topic, index), data, version), notification]
            )
        except TransactionError as exc:
            if exc.index == 0 and isinstance(exc.cause, (BadVersionError, NoNodeError)):
                raise exc.cause from exc
            if exc.index == 1 and isinstance(exc.cause, NoNodeError):
                await self.coord.ensure_path(zl.ISR_CHANGE_NOTIFICATION)
            raise
        stat = results[0]
        assert isinstance(stat, Stat)
        return stat

    async def _set_state(
        self, topic: str, index: int, state: PartitionState, partition_epoch: int
    ) -> Stat | None:
        """The ISR write (`_write`: the state znode at version `partition_epoch`, with its
        notification). Returns its Stat, or None after telling the ReplicaManager (or when
        nobody needs telling).

        A refused write (BADVERSION, NONODE: the state moved on) is `isr_rejected`, unless the
        znode already holds exactly this state: an earlier attempt landed and only its answer
        was lost with the connection (Kafka's ZooKeeper-mode ISR update checks the same),
        which is success at the znode's version. Any other error (connection loss, timeout)
        leaves the outcome unknown: the write is retried, with the proposal still pending (so
        the high watermark keeps counting the larger of the two ISRs, the safe side), as
        Kafka's ZooKeeper client retries a request across a reconnection; it stops quietly
        when the session is lost (every leadership is dropped then) or the mirror shows the
        partition moved on (the new state's make_leader/make_follower replaces the proposal).
        """
        path = zl.state_path(topic, index)
        data = zl.encode_partition_state(state)
        delay = ISR_RETRY_MIN_S
        while True:
            try:
                return await self._write(topic, index, data, partition_epoch)
            except (BadVersionError, NoNodeError):
                pass
            except CoordinationError as exc:
                entry = self.cache.state(topic, index)
                if not self.registration.registered or (
                    entry is not None and entry[1] != partition_epoch
                ):
                    log.info("%s-%d: ISR change to %s abandoned: %s", topic, index, state.isr, exc)
                    return None
                log.warning(
                    "%s-%d: ISR change to %s failed (%s); retrying in %.1f s",
                    topic,
                    index,
                    list(state.isr),
                    exc,
                    delay,
                )
                await trio.sleep(delay)
                delay = min(delay * 2, ISR_RETRY_MAX_S)
                continue
            try:
                now, stat = await self.coord.get(path)
            except NoNodeError:
                now = None
            except CoordinationError:
                continue  # unknown again: the next set attempt decides
            if now is not None and zl.decode_partition_state(topic, index, now) == state:
                log.info("%s-%d: ISR change to %s had landed", topic, index, list(state.isr))
                return stat
            log.info(
                "%s-%d: ISR change to %s refused (the partition state moved on)",
                topic,
                index,
                list(state.isr),
            )
            self.replicas.isr_rejected(
                topic, index, leader_epoch=state.leader_epoch, partition_epoch=partition_epoch
            )
            return None
