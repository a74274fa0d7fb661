"""When the partition leader forgets its share partitions (Kafka's SharePartitionManager
listeners): the group's last share session closed with its connection (onGroupEmpty), the
group deleted, the topic deleted, the leadership lost. What is forgotten is read again from
the persister on its next use: nothing held only in memory (acquisition locks) comes back.
Over real partitions in tmp_path, the services' FakeClock."""

from __future__ import annotations

from test_share_fetch import FETCH, acquired, fetch_body, init, parts_of, share

from protocol.errors import ErrorCode

__all__ = ["share"]  # the fixture, from test_share_fetch


async def test_the_groups_last_session_closed_with_its_connection_forgets_the_group(
    call, share, produce
) -> None:
    """Kafka's onGroupEmpty, as Kafka 4.4 calls it: when a disconnection leaves the group
    without a share session here (a ShareFetch closing its session, FINAL epoch, does not:
    the probe of 2026-12-08 against Kafka 4.4 served the old window after it)."""
    tid = await init(share, start=0)
    await init(share, "other", start=0)
    produce(share, "t", 0, n=2)
    manager = share.share_partitions
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="m2", group="other"))
    await call(FETCH, 1, fetch_body(tid, {1: []}, epoch=0, member="m3"))
    # m1 closes its session with the FINAL epoch: nothing is forgotten
    resp = await call(FETCH, 1, fetch_body(tid, {0: [(0, 0, [1])]}, epoch=-1))
    assert parts_of(resp)[0].acknowledge_error_code == 0
    await manager.release_closed()
    assert manager.partition("g", tid, 0) is not None
    # m3, the last session of "g", closes with its connection: "g" is forgotten
    manager.sessions.get("g", "m3").connection.closed()
    await manager.release_closed()
    assert manager.partition("g", tid, 0) is None and manager.partition("g", tid, 1) is None
    assert manager.partition("other", tid, 0) is not None
    # read again from the persister: the acknowledged record stays done, the released one is
    # delivered again with its delivery taken back
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="m4"))
    assert acquired(resp) == [(1, 1, 1)]


async def test_a_group_deleted_and_made_again_starts_from_its_new_state(
    call, share, produce
) -> None:
    """DeleteGroups deletes the persisted states, then the broker forgets the group: a new
    group of that id reads its new state (start offset -1: latest), not the old window with
    its acquired records."""
    tid = await init(share, start=0)
    produce(share, "t", 0, n=3)
    manager = share.share_partitions
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0))
    assert acquired(resp) == [(0, 2, 1)]  # held by m1 (its session stays open)
    for p in (0, 1):  # what DeleteGroups does through the persister
        assert await share.share_persister.delete_state("g", tid, p) is ErrorCode.NONE
    manager.forget_group("g")  # the group coordinator's deleted listener
    await init(share)  # the new group's heartbeat: start offset -1
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=0, member="new"))
    assert acquired(resp) == []  # latest: from offset 3
    produce(share, "t", 0, n=1)
    resp = await call(FETCH, 1, fetch_body(tid, {0: []}, epoch=1, member="new"))
    assert acquired(resp) == [(3, 3, 1)]
    sp = manager.partition("g", tid, 0)
    assert sp is not None and sp.start_offset == 3


async def test_a_deleted_topics_share_partitions_are_forgotten(call, share, produce) -> None:
    tid = await init(share, start=0)
    produce(share, "t", 0, n=1)
    manager = share.share_partitions
    await call(FETCH, 1, fetch_body(tid, {0: [], 1: []}, epoch=0))
    assert manager.partition("g", tid, 0) is not None
    manager.forget_partition(tid, 1)  # no longer the leader of t-1
    assert manager.partition("g", tid, 1) is None and manager.partition("g", tid, 0) is not None
    manager.forget_topic(tid)
    assert manager.partition("g", tid, 0) is None
    assert manager.sessions.get("g", "m1") is not None  # sessions are the members'
