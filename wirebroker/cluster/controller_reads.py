"""What the controller reads from ZooKeeper into its `ControllerContext` (Kafka's
KafkaController reads through KafkaZkClient): the whole tree once when the broker becomes
controller (`load`), then only what a watch says changed.

    load                 /brokers/ids (each broker's czxid: its epoch), /wirebroker/
                         controlled_shutdown, every topic's assignment and unclean setting,
                         every partition's state and state znode version
    brokers              /brokers/ids only (a broker change)
    shutting_down        /wirebroker/controlled_shutdown only
    topic(T)             one topic's assignment and unclean setting (gone: forgotten)
    states(keys)         those partitions' states only (an ISR change notification, a failed
                         conditional write, a reassigning partition's state watch)
    isr_changes(names)   the ISR change notifications named (their partitions), deleted once
                         read (Kafka's processIsrChangeNotification)
    unclean(topics)      those topics' unclean.leader.election.enable (read just before an
                         election that may need it, as Kafka's controller reads the topic's
                         config when an offline partition has no live ISR member)
    election_requests    a preferred or unclean election request znode

Reads run `PARALLEL` at a time. A read that fails with a CoordinationError propagates: the
controller then reloads everything (`load`) before its next decision.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from wirebroker.cluster import workers
from wirebroker.cluster import zk_layout as zl
from wirebroker.cluster.controller_context import (
    ControllerContext,
    PartitionKey,
    StateEntry,
    TopicEntry,
)
from wirebroker.coordination.api import Coordination, CoordinationError, NoNodeError

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig

__all__ = ["PARALLEL", "ContextReader"]

log = logging.getLogger("wirebroker.controller")

T = TypeVar("T")

#: ZooKeeper requests the controller keeps in flight (a broker failure touches every
#: partition it led or followed; one at a time would take a round trip each).
PARALLEL = 16
_CATCH = (CoordinationError, zl.LayoutError)


async def each(items: Iterable[T], job: Callable[[T], Awaitable[object]]) -> None:
    """`job` for every item, PARALLEL at a time; then the first failure, if any."""
    await workers.each_or_raise(list(items), job, limit=PARALLEL, catch=_CATCH)


class ContextReader:
    """Reads ZooKeeper into one controller's context (see the module docstring)."""

    def __init__(
        self, coord: Coordination, context: ControllerContext, config: BrokerConfig | None
    ) -> None:
        self.coord = coord
        self.context = context
        self.config = config

    async def children(self, path: str) -> list[str]:
        try:
            return await self.coord.get_children(path)
        except NoNodeError:
            return []

    async def ids(self, path: str) -> set[int]:
        return {int(c) for c in await self.children(path) if c.isdigit()}

    # -- the whole tree ------------------------------------------------------------------------
    async def load(self) -> set[int]:
        """Everything the context holds, read afresh (topics and states replace the old
        ones); returns the bounced brokers (see `brokers`)."""
        context = self.context
        bounced = await self.brokers()
        await self.shutting_down()
        topics = await self.children(zl.BROKER_TOPICS)
        started = dict(context.started)  # this controller's reassignment starts stay done
        context.keep_topics(())
        context.states.clear()
        await each(topics, self.topic)
        await each(context.partitions(), self._state)
        context.started = {k: v for k, v in started.items() if k[0] in context.topics}
        log.info(
            "controller context loaded: %d broker(s), %d topic(s), %d partition(s)",
            len(context.live),
            len(context.topics),
            len(context.states),
        )
        return bounced

    # -- one concern each ----------------------------------------------------------------------
    async def brokers(self) -> set[int]:
        """The registered brokers and their epochs; returns the bounced ones
        (`ControllerContext.set_brokers`)."""
        epochs: dict[int, int] = {}

        async def read(broker: int) -> None:
            stat = await self.coord.exists(zl.broker_path(broker))
            if stat is not None:
                epochs[broker] = stat.czxid

        await each(sorted(await self.ids(zl.BROKER_IDS)), read)
        return self.context.set_brokers(epochs)

    async def shutting_down(self) -> None:
        self.context.shutting_down = await self.ids(zl.CONTROLLED_SHUTDOWN)

    async def topic(self, topic: str) -> bool:
        """Read `topic`'s assignment and unclean setting into the context; False (and the
        topic forgotten) when it is gone or cannot be decoded."""
        try:
            data, stat = await self.coord.get(zl.topic_path(topic))
            assignment = zl.decode_topic(topic, data)
        except NoNodeError:
            self.context.drop_topic(topic)
            return False
        except zl.LayoutError as exc:
            log.warning("ignoring topic %s: %s", topic, exc)
            self.context.drop_topic(topic)
            return False
        unclean = await self._unclean(topic)
        self.context.set_topic(topic, TopicEntry(assignment, stat.version, unclean))
        for key in [k for k in self.context.states if k[0] == topic]:
            if key[1] not in assignment.partitions:
                self.context.forget_state(*key)
        return True

    async def states(self, keys: Iterable[PartitionKey]) -> None:
        """Read these partitions' states (of topics the context holds) into the context."""
        known = [k for k in sorted(set(keys)) if k[0] in self.context.topics]
        await each(known, self._state)

    async def _state(self, key: PartitionKey) -> None:
        topic, index = key
        self.context.forget_state(topic, index)
        try:
            data, stat = await self.coord.get(zl.state_path(topic, index))
            entry = StateEntry(zl.decode_partition_state(topic, index, data), stat.version)
        except NoNodeError:
            entry = StateEntry(None)
        except zl.LayoutError as exc:  # left out: planned as a partition not read
            log.warning("%s-%d: ignoring its state: %s", topic, index, exc)
            return
        self.context.set_state(topic, index, entry)

    async def isr_changes(self, names: Iterable[str]) -> set[PartitionKey]:
        """The partitions the ISR change notifications `names` (children of
        /isr_change_notification) name; each is deleted once read."""
        out: set[PartitionKey] = set()

        async def read(name: str) -> None:
            path = f"{zl.ISR_CHANGE_NOTIFICATION}/{name}"
            try:
                data, _stat = await self.coord.get(path)
            except NoNodeError:
                return  # read and deleted already
            with contextlib.suppress(zl.LayoutError):
                out.update(zl.decode_preferred_election(data, path))
            with contextlib.suppress(NoNodeError):
                await self.coord.delete(path)

        await each(sorted(names), read)
        return out

    async def unclean(self, topics: Iterable[str]) -> None:
        """Refresh these topics' unclean.leader.election.enable in the context."""

        async def read(topic: str) -> None:
            entry = self.context.topics.get(topic)
            if entry is None:
                return
            unclean = await self._unclean(topic)
            if topic in self.context.topics and unclean != entry.unclean:
                self.context.set_topic(topic, TopicEntry(entry.assignment, entry.version, unclean))

        await each(sorted(set(topics)), read)

    async def _unclean(self, topic: str) -> bool:
        try:
            data, _stat = await self.coord.get(zl.topic_config_path(topic))
            value = zl.decode_topic_config(topic, data).get("unclean.leader.election.enable")
        except (NoNodeError, zl.LayoutError):
            value = None
        if value is None:
            value = self.config.raw("unclean.leader.election.enable") if self.config else None
        return (value or "false").lower() == "true"

    async def election_requests(self, path: str) -> set[PartitionKey]:
        """The partitions a preferred or unclean election request (`path`) names."""
        try:
            data, _stat = await self.coord.get(path)
        except NoNodeError:
            return set()
        try:
            return set(zl.decode_preferred_election(data, path))
        except zl.LayoutError as exc:
            log.warning("ignoring %s: %s", path, exc)
            return set()

    async def new_topics(
        self, topics: Iterable[str], watch: Callable[[str], Awaitable[None]]
    ) -> dict[str, tuple[bytes | None, int, bool]]:
        """For each topic: `watch(topic)`, its assignment document and whether it has partition
        states (a /partitions znode), all in flight together: topic -> (document or None when
        gone, its version, has states)."""
        out: dict[str, tuple[bytes | None, int, bool]] = {}
        await each(topics, functools.partial(self._new_topic, watch=watch, into=out))
        return out

    async def _new_topic(
        self,
        topic: str,
        *,
        watch: Callable[[str], Awaitable[None]],
        into: dict[str, tuple[bytes | None, int, bool]],
    ) -> None:
        got: dict[str, object] = {}

        async def data() -> None:
            with contextlib.suppress(NoNodeError):
                got["data"], stat = await self.coord.get(zl.topic_path(topic))
                got["version"] = stat.version

        async def states() -> None:
            with contextlib.suppress(NoNodeError):
                await self.coord.get_children(zl.partitions_path(topic))
                got["states"] = True

        await workers.together_or_raise(functools.partial(watch, topic), data, states, catch=_CATCH)
        raw, version = got.get("data"), got.get("version")
        into[topic] = (
            raw if isinstance(raw, bytes) else None,
            version if isinstance(version, int) else -1,
            bool(got.get("states")),
        )
