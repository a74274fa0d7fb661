"""Topics created in a batch (a CreateTopics of many topics reaching a cluster member):

- `TopicStore.put_many` is one atomic rewrite: a process crash (kill -9: the page cache
  survives, nothing more runs) at every file operation of it leaves a store that opens with
  either none or all of the batch, never part of it;
- `LogManager.create_topics` (behind `ReplicaManager.ensure_partitions`) makes the logs of
  several topics with one round of fsyncs: one per new partition directory and one per log
  dir, not one per topic; an I/O error in the middle removes every log of the batch;
- `ReplicaManager.ensure_partitions` builds the partitions over those logs (role NONE until
  the member applies a role) and leaves existing partitions alone;
- three `ClusterMember`s over the in-memory ZooKeeper (test_zk_member's nodes) mirror a
  CreateTopics of 40 topics with one store write each, and the controller creates each new
  topic's states in one multi.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio
from crash_fs import Crash, CrashingFileSystem
from test_zk_member import settle, start_node

from wirebroker.cluster import zk_layout as zl
from wirebroker.config import BrokerConfig
from wirebroker.coordination.memory import MemoryZooKeeper
from wirebroker.log import LogConfig, LogManager, StorageError
from wirebroker.log.fs import OsFileSystem
from wirebroker.metadata.topic_admin import NewTopic
from wirebroker.metadata.topic_store import TopicInfo, TopicStore
from wirebroker.replication.partition import Role
from wirebroker.replication.replica_manager import ReplicaManager

NOW = 1_700_000_000_000


def _info(name: str, partitions: int = 2, replicas: tuple[int, ...] = (0, 1, 2)) -> TopicInfo:
    return TopicInfo(
        name=name,
        topic_id=uuid.uuid4(),
        partitions=partitions,
        replication_factor=len(replicas),
        configs={"retention.ms": "1000"} if name.endswith("1") else {},
        assignment=tuple(replicas for _ in range(partitions)),
    )


def test_put_many_is_atomic_across_a_crash_at_every_step(tmp_path: Path) -> None:
    old = [_info(f"old-{i}") for i in range(3)]
    batch = [_info(f"new-{i}") for i in range(40)]
    counting = CrashingFileSystem()
    probe = TopicStore.open(tmp_path / "probe", fs=counting)
    probe.put_many(old)
    before = counting.ops
    probe.put_many(batch)
    steps = counting.ops - before
    assert steps >= 4  # temporary file, data, fsync, rename, directory fsync

    outcomes = set()
    for crash_at in range(steps + 1):
        directory = tmp_path / f"crash-{crash_at}"
        fs = CrashingFileSystem()
        store = TopicStore.open(directory, fs=fs)
        store.put_many(old)
        fs.crash_at = fs.ops + crash_at
        with contextlib.suppress(Crash):
            store.put_many(batch)
        fs.release()
        reopened = TopicStore.open(directory)  # the next start
        names = {t.name for t in reopened.all()}
        if names == {t.name for t in old}:
            outcomes.add("old")
        else:
            assert names == {t.name for t in old + batch}, f"crash at step {crash_at}: {names}"
            assert [reopened.get(t.name) for t in batch] == batch
            outcomes.add("new")
    assert outcomes == {"old", "new"}  # the rename is the commit point


class CountingFileSystem(OsFileSystem):
    """Counts directory fsyncs (none is done) and fails the `fail_on`-th segment create."""

    def __init__(self, fail_on: int = 0) -> None:
        self.dir_fsyncs: list[Path] = []
        self.fail_on = fail_on
        self.segments = 0

    def fsync(self, fd: int) -> None:
        pass

    def fsync_dir(self, path: Path) -> None:
        self.dir_fsyncs.append(Path(path))

    def open(self, path: Path, flags: int, mode: int = 0o644) -> int:
        if str(path).endswith(".log") and flags & os.O_CREAT:
            self.segments += 1
            if self.segments == self.fail_on:
                raise OSError(28, "No space left on device (injected)")
        return super().open(path, flags, mode)


def test_create_topics_fsyncs_each_new_directory_and_the_log_dir_once(tmp_path: Path) -> None:
    fs = CountingFileSystem()
    logs = LogManager([tmp_path], fs=fs)
    batch = [(f"t{i}", [0, 1], LogConfig(), uuid.uuid4()) for i in range(50)]
    made = logs.create_topics(batch, NOW)
    assert [(p.topic, p.partition) for p in made] == [
        (f"t{i}", p) for i in range(50) for p in (0, 1)
    ]
    assert sorted(fs.dir_fsyncs) == sorted(
        [tmp_path / f"t{i}-{p}" for i in range(50) for p in (0, 1)] + [tmp_path]
    )
    # existing logs come back as they are, nothing fsynced again
    fs.dir_fsyncs.clear()
    assert logs.create_topics([("t3", [1], LogConfig(), None)], NOW) == [made[7]]
    assert fs.dir_fsyncs == []
    logs.close()


def test_an_io_error_in_a_batch_removes_every_log_of_it(tmp_path: Path) -> None:
    fs = CountingFileSystem(fail_on=7)
    logs = LogManager([tmp_path], fs=fs)
    batch = [(f"t{i}", [0, 1], LogConfig(), uuid.uuid4()) for i in range(5)]
    with pytest.raises(StorageError):
        logs.create_topics(batch, NOW)
    assert all(logs.get(f"t{i}", p) is None for i in range(5) for p in (0, 1))
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == []
    fs.fail_on = 0
    assert len(logs.create_topics(batch, NOW)) == 10  # a retry works
    logs.close()


def test_ensure_partitions_builds_the_batch_over_new_logs(tmp_path: Path) -> None:
    config = BrokerConfig({"node.id": "1", "log.dirs": str(tmp_path)})
    store = TopicStore.open(tmp_path)
    fs = CountingFileSystem()
    logs = LogManager([tmp_path], fs=fs)
    rm = ReplicaManager(config, logs, store, node_id=1)
    rm.load(NOW)
    infos = [_info(f"t{i}") for i in range(4)]
    store.put_many(infos)
    existing = rm.ensure_partition(infos[0], 0, now_ms=NOW)
    fs.dir_fsyncs.clear()
    rm.ensure_partitions([(info, [0, 1]) for info in infos], now_ms=NOW)
    assert len(fs.dir_fsyncs) == 7 + 1  # the 7 new partition directories, the log dir
    assert rm.partition("t0", 0) is existing
    for info in infos:
        for index in (0, 1):
            part = rm.partition(info.name, index)
            assert part is not None and part.role is Role.NONE
            assert part.log.topic_id == info.topic_id
    assert rm.partition("t1", 0).log.config.retention_ms == 1000  # type: ignore[union-attr]
    logs.close()


async def test_a_batch_of_new_topics_is_mirrored_with_few_store_writes(tmp_path: Path) -> None:
    """One CreateTopics of 40 topics: every broker mirrors them in a few batches (one store
    rewrite per batch, not one per topic), the controller creates each new topic's states in
    one multi, and every partition gets a leader and a role on every broker."""
    server = MemoryZooKeeper()
    async with trio.open_nursery() as nursery:
        nodes = [await start_node(nursery, server, i, tmp_path) for i in (1, 2, 3)]
        await settle(nodes)
        writes = dict.fromkeys(range(3), 0)
        multis: list[int] = []
        for i, n in enumerate(nodes):
            store = n.member.topics
            save = store._save

            def counting(save: Any = save, i: int = i) -> None:
                writes[i] += 1
                save()

            store._save = counting  # type: ignore[method-assign]
            multi = n.coord.multi

            async def counting_multi(ops: Any, multi: Any = multi) -> Any:
                multis.append(len(ops))
                return await multi(ops)

            n.coord.multi = counting_multi  # type: ignore[method-assign]
        names = [f"t{i:02d}" for i in range(40)]
        results = nodes[0].admin.create_topics([NewTopic(t, 2, 3) for t in names], now_ms=0)
        assert all(isinstance(r, TopicInfo) for r in results)
        assert await nodes[0].admin.wait_settled(names, 5) == {}
        await settle(nodes)
        for i, n in enumerate(nodes):
            assert len(n.member.topics) == 40
            assert 1 <= writes[i] <= 4, writes
            assert len(n.roles.roles) == 80
        # 40 admin multis (config + topic), 40 controller multis (check + 5 creates each)
        assert sorted(multis).count(6) == 40 and sorted(multis).count(2) == 40
        for name in names:
            for index in range(2):
                data, _stat = await nodes[0].coord.get(zl.state_path(name, index))
                st = zl.decode_partition_state(name, index, data)
                assert st.leader_epoch == 0 and sorted(st.isr) == [1, 2, 3]
        nursery.cancel_scope.cancel()
