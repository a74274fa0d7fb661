"""MemoryZooKeeper / MemoryCoordination on trio's MockClock: the ZooKeeper model and the
client-side rules of wirebroker.coordination (watches, session events). The behaviours shared
with a real ZooKeeper are also in tests/integration/test_coordination_contract.py."""

from __future__ import annotations

import gc
from contextlib import AbstractAsyncContextManager

import pytest
import trio
from coordination_sessions import open_sessions

from wirebroker.coordination.api import (
    BadVersionError,
    Check,
    CoordinationError,
    Create,
    Delete,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionState,
    SetData,
    Stat,
    TransactionError,
)
from wirebroker.coordination.memory import MemoryCoordination, MemoryZooKeeper

pytestmark = pytest.mark.usefixtures("autojump_clock")


def sessions(
    server: MemoryZooKeeper, count: int = 1
) -> AbstractAsyncContextManager[list[MemoryCoordination]]:
    return open_sessions(lambda: MemoryCoordination(server), count)


async def settle() -> None:
    """Let every run loop drain (MockClock: only the other tasks run meanwhile)."""
    await trio.testing.wait_all_tasks_blocked()


async def test_versions_and_czxids() -> None:
    server = MemoryZooKeeper()
    async with sessions(server) as (zk,):
        assert await zk.create("/a", b"1") == "/a"
        data, stat = await zk.get("/a")
        assert (data, stat.version, stat.ephemeral_owner) == (b"1", 0, 0)
        assert stat.czxid == server.zxid
        await zk.create("/b")
        assert (await zk.get("/b"))[1].czxid == stat.czxid + 1
        assert stat.mzxid == stat.czxid
        assert (await zk.set("/a", b"2")) == Stat(version=1, czxid=stat.czxid, mzxid=server.zxid)
        assert (await zk.set("/a", b"3", version=1)).version == 2
        with pytest.raises(BadVersionError):
            await zk.set("/a", b"4", version=1)
        assert await zk.get("/a") == (b"3", Stat(version=2, czxid=stat.czxid, mzxid=server.zxid))
        before = server.zxid
        await zk.multi([Create("/c"), Create("/d")])
        c, d = (await zk.get("/c"))[1], (await zk.get("/d"))[1]
        assert c.czxid == d.czxid == before + 1  # one transaction, one zxid


async def test_errors_like_zookeeper() -> None:
    server = MemoryZooKeeper()
    async with sessions(server) as (zk,):
        with pytest.raises(NoNodeError):
            await zk.create("/x/y")
        await zk.create("/x/y/z", makepath=True)
        with pytest.raises(NodeExistsError):
            await zk.create("/x")
        with pytest.raises(NotEmptyError):
            await zk.delete("/x")
        with pytest.raises(NoNodeError):
            await zk.get("/nope")
        with pytest.raises(NoNodeError):
            await zk.get_children("/nope")
        assert await zk.exists("/nope") is None
        with pytest.raises(BadVersionError):
            await zk.delete("/x", version=3, recursive=True)
        await zk.delete("/x", recursive=True)
        assert await zk.get_children("/") == []
        with pytest.raises(NoNodeError):
            await zk.delete("/x", recursive=True)
        await zk.ensure_path("/p/q")
        await zk.ensure_path("/p/q")
        assert await zk.get_children("/p") == ["q"]
        await zk.create("/eph", ephemeral=True)
        with pytest.raises(NoChildrenForEphemeralsError):
            await zk.create("/eph/child")
        with pytest.raises(ValueError):
            await zk.create("relative")


async def test_sequential_names_follow_the_parents_cversion() -> None:
    server = MemoryZooKeeper()
    async with sessions(server) as (zk,):
        await zk.create("/q")
        assert await zk.create("/q/n-", sequential=True) == "/q/n-0000000000"
        await zk.create("/q/other")
        await zk.delete("/q/other")
        # creates and deletes of children both count, as ZooKeeper's cversion does
        assert await zk.create("/q/n-", sequential=True, ephemeral=True) == "/q/n-0000000003"
        assert await zk.get_children("/q") == ["n-0000000000", "n-0000000003"]


async def test_multi_is_all_or_nothing() -> None:
    server = MemoryZooKeeper()
    async with sessions(server) as (zk,):
        await zk.create("/epoch", b"1")
        zxid = server.zxid
        with pytest.raises(TransactionError) as failed:
            await zk.multi([Create("/new"), SetData("/epoch", b"2"), Check("/epoch", 0)])
        assert failed.value.index == 2
        assert isinstance(failed.value.cause, BadVersionError)
        assert await zk.exists("/new") is None
        assert await zk.get("/epoch") == (b"1", Stat(version=0, czxid=zxid, mzxid=zxid))
        assert server.zxid == zxid
        with pytest.raises(TransactionError) as failed:
            await zk.multi([Check("/epoch", 5), SetData("/epoch", b"2")])
        assert failed.value.index == 0
        results = await zk.multi(
            [
                Check("/epoch", 0),
                Create("/s-", b"x", sequential=True),
                SetData("/epoch", b"2", version=0),
                Create("/s-0000000001/child"),  # sees the create before it
                Delete("/s-0000000001/child"),
            ]
        )
        assert results == [
            None,
            "/s-0000000001",
            Stat(version=1, czxid=zxid, mzxid=zxid + 1),
            "/s-0000000001/child",
            None,
        ]
        with pytest.raises(TransactionError) as failed:
            await zk.multi([Delete("/s-0000000001"), Create("/missing/x")])
        assert failed.value.index == 1
        assert isinstance(failed.value.cause, NoNodeError)
        assert (await zk.get("/s-0000000001"))[0] == b"x"  # the delete was undone


async def test_transactions_leave_no_cyclic_garbage() -> None:
    """Committed or undone, a write is freed by reference counting (a broker's heap makes every
    full collection of the cyclic garbage collector expensive)."""
    server = MemoryZooKeeper()
    async with sessions(server) as (zk,):
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            await zk.multi([Create("/a"), Create("/a/b"), SetData("/a", b"x")])
            with pytest.raises(TransactionError):
                await zk.multi([Create("/c"), Create("/a")])
            await zk.delete("/a", recursive=True)
            gc.collect()
            assert [o for o in gc.garbage if type(o).__name__ in ("_Txn", "function")] == []
        finally:
            gc.set_debug(0)
            gc.garbage.clear()


async def test_ephemerals_vanish_on_expiry_and_when_run_ends() -> None:
    server = MemoryZooKeeper()
    async with sessions(server, 2) as (a, b):
        await a.create("/brokers/ids/1", b"a", ephemeral=True, makepath=True)
        _, stat = await b.get("/brokers/ids/1")
        assert stat.ephemeral_owner == a.session_id
        server.expire_session(a.session_id)
        assert await b.exists("/brokers/ids/1") is None
        await settle()
        await a.create("/brokers/ids/1", b"a2", ephemeral=True)
        assert (await b.get("/brokers/ids/1"))[1].ephemeral_owner == a.session_id
        async with sessions(server) as (c,):
            await c.create("/brokers/ids/3", ephemeral=True)
            assert await b.get_children("/brokers/ids") == ["1", "3"]
        assert await b.get_children("/brokers/ids") == ["1"]
    assert list(server.paths()) == ["/", "/brokers", "/brokers/ids"]
    assert server.sessions == []


async def test_session_expiry_reports_lost_then_connected_with_a_new_session() -> None:
    server = MemoryZooKeeper()
    async with sessions(server, 2) as (a, b):
        states: list[tuple[SessionState, int]] = []
        a.add_session_listener(lambda s: states.append((s, a.session_id)))
        seen: list[bytes | None] = []
        await a.watch_data("/controller", lambda data, stat: seen.append(data))
        old = a.session_id
        server.expire_session(old)
        with pytest.raises(CoordinationError):
            server._get(old, "/")  # the old session is gone before the client heard of it
        await settle()
        new = a.session_id
        assert new != old
        assert states == [
            (SessionState.SUSPENDED, old),
            (SessionState.LOST, old),
            (SessionState.CONNECTED, new),
        ]
        assert server.sessions == sorted([b.session_id, new])
        await b.create("/controller", b"2")
        await settle()
        assert seen == [None, b"2"]  # the watch survived the session


async def test_disconnect_keeps_the_session_and_rereads_watches() -> None:
    server = MemoryZooKeeper()
    async with sessions(server, 2) as (a, b):
        await a.create("/e", ephemeral=True)
        await a.create("/w", b"0")
        states: list[SessionState] = []
        a.add_session_listener(states.append)
        seen: list[bytes | None] = []
        await a.watch_data("/w", lambda data, stat: seen.append(data))
        sid = a.session_id
        server.disconnect_session(sid)
        await b.set("/w", b"1")  # a's server-side watch was dropped with the connection
        await settle()
        assert states == [SessionState.SUSPENDED, SessionState.CONNECTED]
        assert a.session_id == sid
        assert await b.exists("/e") is not None
        assert seen == [b"0", b"1"]  # read again on CONNECTED: it changed
        server.disconnect_session(sid)
        await settle()
        assert seen == [b"0", b"1"]  # unchanged: no call


async def test_data_watch_sees_create_change_delete_in_order() -> None:
    server = MemoryZooKeeper()
    async with sessions(server, 2) as (a, b):
        seen: list[tuple[bytes | None, int | None]] = []
        tasks: list[str] = []

        def on_data(data: bytes | None, stat: Stat | None) -> None:
            seen.append((data, None if stat is None else stat.version))
            tasks.append(trio.lowlevel.current_task().name)

        watch = await a.watch_data("/n", on_data)
        assert seen == [(None, None)]  # the first call has run when watch_data returns
        await b.create("/n", b"0")
        await settle()
        await b.set("/n", b"1")
        await settle()
        await b.delete("/n")
        await settle()
        assert seen == [(None, None), (b"0", 0), (b"1", 1), (None, None)]
        assert len(set(tasks)) == 1 and "run" in tasks[0]
        watch.cancel()
        await b.create("/n", b"again")
        await settle()
        assert len(seen) == 4


async def test_fast_changes_collapse_to_the_latest_value() -> None:
    server = MemoryZooKeeper()
    async with sessions(server, 2) as (a, b):
        await b.create("/n", b"0")
        seen: list[bytes | None] = []
        await a.watch_data("/n", lambda data, stat: seen.append(data))
        for i in range(1, 6):
            await b.set("/n", str(i).encode())
        await settle()
        assert seen[0] == b"0" and seen[-1] == b"5"
        assert seen == sorted(seen, key=lambda d: int(d or 0))  # in order
        assert len(seen) < 6  # some collapsed


async def test_children_watch() -> None:
    server = MemoryZooKeeper()
    async with sessions(server, 2) as (a, b):
        seen: list[list[str] | None] = []
        await a.watch_children("/ids", seen.append)
        await b.create("/ids")
        await settle()
        await b.create("/ids/2", ephemeral=True)
        await settle()
        await b.create("/ids/1")
        await settle()
        await b.set("/ids", b"data changes are not child changes")
        await b.delete("/ids/1")
        await settle()
        await b.delete("/ids/2")
        await b.delete("/ids")
        await settle()
        assert seen == [None, [], ["2"], ["1", "2"], ["2"], None]


async def test_children_watch_calls_back_on_a_change_even_when_the_list_is_equal() -> None:
    server = MemoryZooKeeper()
    async with sessions(server, 2) as (a, b):
        await b.create("/ids/1", makepath=True)
        seen: list[list[str] | None] = []
        await a.watch_children("/ids", seen.append)
        await b.multi([Delete("/ids/1"), Create("/ids/1")])  # a bounce in one transaction
        await settle()
        assert seen == [["1"], ["1"]]


async def test_operations_need_a_running_session() -> None:
    server = MemoryZooKeeper()
    zk = MemoryCoordination(server)
    with pytest.raises(CoordinationError):
        await zk.get("/")
    async with trio.open_nursery() as nursery:
        await nursery.start(zk.run)
        assert await zk.get_children("/") == []
        nursery.cancel_scope.cancel()
    with pytest.raises(CoordinationError):
        await zk.create("/a")
    with pytest.raises(RuntimeError):
        await zk.run()


async def test_a_failing_callback_ends_run() -> None:
    server = MemoryZooKeeper()

    def boom(data: bytes | None, stat: Stat | None) -> None:
        if data is not None:
            raise RuntimeError("callback bug")

    zk = MemoryCoordination(server)
    with pytest.RaisesGroup(
        pytest.RaisesExc(RuntimeError, match="callback bug"), flatten_subgroups=True
    ):
        async with trio.open_nursery() as nursery:
            await nursery.start(zk.run)
            await zk.create("/e", ephemeral=True)
            await zk.watch_data("/n", boom)
            await zk.create("/n", b"x")
            await trio.sleep_forever()
    assert server.sessions == [] and list(server.paths()) == ["/", "/n"]
