"""Share groups through the group coordinator runtime (real storage, trio's MockClock): the
persister step after a heartbeat (initialize, its failure), deleting a group's share states,
and a restart that keeps the group (records replayed from `__consumer_offsets`)."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio

from protocol.errors import ErrorCode
from tests.unit.group.runtimekit import running
from wirebroker.group.share.messages import ShareHeartbeatRequest, ShareHeartbeatResult
from wirebroker.share.persister import InMemoryPersister


class FakePersister(InMemoryPersister):
    """Share states in memory, with a call log and an error to answer."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, str, uuid.UUID, int]] = []
        self.fail_with = ErrorCode.NONE

    async def initialize_state(
        self,
        group_id: str,
        topic_id: uuid.UUID,
        partition: int,
        state_epoch: int,
        start_offset: int,
    ) -> ErrorCode:
        self.calls.append(("init", group_id, topic_id, partition))
        assert start_offset == -1
        if self.fail_with is not ErrorCode.NONE:
            return self.fail_with
        return await super().initialize_state(
            group_id, topic_id, partition, state_epoch, start_offset
        )

    async def delete_state(self, group_id: str, topic_id: uuid.UUID, partition: int) -> ErrorCode:
        self.calls.append(("delete", group_id, topic_id, partition))
        return await super().delete_state(group_id, topic_id, partition)


def _lookup(node: object) -> object:
    topics = node.topics  # type: ignore[attr-defined]

    def lookup(name: str) -> tuple[uuid.UUID, int] | None:
        meta = topics.get(name)
        return None if meta is None else (meta.topic_id, meta.partitions)

    return lookup


async def _hb(node: object, member: str, epoch: int, **kw: object) -> ShareHeartbeatResult:
    req = ShareHeartbeatRequest("sg", member, epoch, client_id="c", client_host="/h", **kw)  # type: ignore[arg-type]
    runtime = node.runtime  # type: ignore[attr-defined]
    return await runtime.share_group_heartbeat(req, _lookup(node))  # type: ignore[no-any-return]


async def test_heartbeat_initializes_through_the_persister_then_assigns(
    tmp_path: Path, autojump_clock: object
) -> None:
    persister = FakePersister()
    async with running(tmp_path, {"share_persister": persister}) as node:
        node.create_topic("t", 2)
        topic_id = node.topics.get("t").topic_id
        first = await _hb(node, "m1", 0, subscribed_topic_names=("t",))
        assert (first.error, first.member_epoch, first.assignment) == (ErrorCode.NONE, 2, {})
        assert persister.calls == [("init", "sg", topic_id, 0), ("init", "sg", topic_id, 1)]
        assert set(persister.states()) == {("sg", topic_id, 0), ("sg", topic_id, 1)}
        await trio.sleep(1)  # the assignment interval (MockClock)
        second = await _hb(node, "m1", 2)
        assert (second.member_epoch, second.assignment) == (3, {topic_id: frozenset({0, 1})})
    # a restart loads the group back from __consumer_offsets
    async with running(tmp_path, {"share_persister": persister}) as node:
        again = await _hb(node, "m1", 3)
        assert (again.error, again.member_epoch, again.assignment) == (ErrorCode.NONE, 3, None)
        [described] = node.runtime.share_group_describe(["sg"])
        assert (described.state, described.group_epoch) == ("Stable", 3)
        assert (await _hb(node, "m1", -1)).error is ErrorCode.NONE
        persister.calls.clear()
        deleted = await node.runtime.delete_groups(["sg"])
        assert deleted.results[0].error is ErrorCode.NONE
        assert sorted(c[3] for c in persister.calls if c[0] == "delete") == [0, 1]
        assert persister.states() == {}


async def test_a_persister_error_is_logged_and_retried(
    tmp_path: Path, autojump_clock: object
) -> None:
    """As Kafka 4.4: the heartbeat's answer is unchanged, the partitions are no longer
    initializing, and the next heartbeat asks again."""
    persister = FakePersister()
    persister.fail_with = ErrorCode.COORDINATOR_NOT_AVAILABLE
    async with running(tmp_path, {"share_persister": persister}) as node:
        node.create_topic("t", 1)
        joined = await _hb(node, "m1", 0, subscribed_topic_names=("t",))
        assert (joined.error, joined.member_epoch, joined.assignment) == (ErrorCode.NONE, 2, {})
        state = node.runtime.core.state.share_states["sg"]
        assert state.initializing == {} and state.initialized == {}
        persister.fail_with = ErrorCode.NONE
        retried = await _hb(node, "m1", 2)
        assert retried.error is ErrorCode.NONE
        assert len([c for c in persister.calls if c[0] == "init"]) == 2
        assert node.runtime.core.state.share_states["sg"].initialized != {}


async def test_deleted_listeners_and_a_deleted_topic_over_a_restart(
    tmp_path: Path, autojump_clock: object
) -> None:
    """DeleteGroups tells the deleted listeners the share groups it deleted (not a refused
    one); `on_topics_deleted` records the topic out of the share-state bookkeeping, and a
    restart reads it so from `__consumer_offsets`."""
    persister = FakePersister()
    async with running(tmp_path, {"share_persister": persister}) as node:
        node.create_topic("t", 2)
        node.create_topic("u", 1)
        t_id, u_id = node.topics.get("t").topic_id, node.topics.get("u").topic_id
        await _hb(node, "m1", 0, subscribed_topic_names=("t", "u"))
        node.runtime.on_topics_deleted({t_id})
        assert set(node.runtime.core.state.share_states["sg"].initialized) == {u_id}
    async with running(tmp_path, {"share_persister": persister}) as node:
        assert set(node.runtime.core.state.share_states["sg"].initialized) == {u_id}
        heard: list[str] = []
        node.runtime.share.deleted_listeners.append(heard.append)
        refused = await node.runtime.delete_groups(["sg"])  # m1 is still a member
        assert refused.results[0].error is ErrorCode.NON_EMPTY_GROUP and heard == []
        assert (await _hb(node, "m1", -1)).error is ErrorCode.NONE
        persister.calls.clear()
        await node.runtime.delete_groups(["sg", "nope"])
        assert heard == ["sg"]
        assert [c[2] for c in persister.calls if c[0] == "delete"] == [u_id]  # not t's
