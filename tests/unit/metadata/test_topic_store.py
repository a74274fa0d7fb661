from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from wirebroker.log.fs import OsFileSystem
from wirebroker.metadata.topic_store import (
    STORE_FILE,
    MetaPropertiesError,
    TopicInfo,
    TopicStore,
    TopicStoreError,
    ensure_meta_properties,
    new_random_uuid,
    read_meta_properties,
    uuid_to_base64,
)


def _info(name: str = "t", partitions: int = 3, **configs: str) -> TopicInfo:
    return TopicInfo(
        name=name,
        topic_id=new_random_uuid(),
        partitions=partitions,
        replication_factor=1,
        configs=configs,
    )


def test_new_store_generates_cluster_id(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    assert store.created
    assert len(store.cluster_id) == 22
    assert not store.cluster_id.startswith("-")
    assert "=" not in store.cluster_id
    assert (tmp_path / STORE_FILE).exists()
    other = TopicStore.open(tmp_path / "other")
    assert other.cluster_id != store.cluster_id


def test_persists_across_reopen(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    a = _info("a", 3, **{"retention.ms": "1000"})
    b = TopicInfo(
        name="__consumer_offsets",
        topic_id=new_random_uuid(),
        partitions=50,
        replication_factor=1,
        configs={"cleanup.policy": "compact"},
        is_internal=True,
    )
    store.put(a)
    store.put(b)
    reopened = TopicStore.open(tmp_path)
    assert not reopened.created
    assert reopened.cluster_id == store.cluster_id
    assert reopened.get("a") == a
    assert reopened.get("__consumer_offsets") == b
    assert reopened.by_id(a.topic_id) == a
    assert reopened.get("a").configs["retention.ms"] == "1000"  # type: ignore[union-attr]
    assert [t.name for t in reopened.all()] == ["__consumer_offsets", "a"]
    assert reopened.remove("a") == a
    again = TopicStore.open(tmp_path)
    assert again.get("a") is None
    assert again.by_id(a.topic_id) is None
    assert again.remove("missing") is None


def test_put_replaces_and_keeps_id_index(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    a = _info("a", 1)
    store.put(a)
    grown = TopicInfo(name="a", topic_id=a.topic_id, partitions=4, replication_factor=1)
    store.put(grown)
    assert store.by_id(a.topic_id) == grown
    with pytest.raises(ValueError):
        store.put(TopicInfo(name="b", topic_id=a.topic_id, partitions=1, replication_factor=1))
    assert store.get("b") is None


def test_put_many_writes_once_all_or_nothing(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    a, b = _info("a", 1), _info("b", 2)
    store.put(a)
    grown = TopicInfo(name="a", topic_id=a.topic_id, partitions=4, replication_factor=1)
    store.put_many([grown, b])
    assert TopicStore.open(tmp_path).all() == [grown, b]
    clash = TopicInfo(name="c", topic_id=b.topic_id, partitions=1, replication_factor=1)
    with pytest.raises(ValueError):
        store.put_many([_info("d"), clash])
    assert store.all() == [grown, b] and store.by_id(b.topic_id) == b


def test_topic_info_configs_are_read_only() -> None:
    info = _info("a", 1, **{"retention.ms": "5"})
    with pytest.raises(TypeError):
        info.configs["retention.ms"] = "6"  # type: ignore[index]
    assert hash(info) == hash(
        TopicInfo(name="a", topic_id=info.topic_id, partitions=1, replication_factor=1)
    )


def test_file_path_form_and_configured_cluster_id(tmp_path: Path) -> None:
    path = tmp_path / "meta" / "topics.json"
    store = TopicStore.open(path, cluster_id="abcdefghijklmnopqrstuv")
    assert store.cluster_id == "abcdefghijklmnopqrstuv"
    assert path.exists()
    with pytest.raises(TopicStoreError):
        TopicStore.open(path, cluster_id="zzzzzzzzzzzzzzzzzzzzzz")


def test_corrupt_store_refuses_to_open(tmp_path: Path) -> None:
    (tmp_path / STORE_FILE).write_text("{not json")
    with pytest.raises(TopicStoreError):
        TopicStore.open(tmp_path)
    (tmp_path / STORE_FILE).write_text(json.dumps({"format": 99, "cluster_id": "x"}))
    with pytest.raises(TopicStoreError):
        TopicStore.open(tmp_path)
    (tmp_path / STORE_FILE).write_text(
        json.dumps({"format": 1, "cluster_id": "x", "topics": [{"name": 5}]})
    )
    with pytest.raises(TopicStoreError):
        TopicStore.open(tmp_path)


def test_stale_tmp_file_is_ignored(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    store.put(_info("a"))
    (tmp_path / (STORE_FILE + ".tmp")).write_text("garbage from a crash")
    reopened = TopicStore.open(tmp_path)
    assert reopened.get("a") is not None
    reopened.put(_info("b"))
    assert TopicStore.open(tmp_path).get("b") is not None


def test_producer_id_reservations_persist(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    assert store.reserve_producer_ids(10) == 0
    assert store.reserve_producer_ids(5) == 10
    assert TopicStore.open(tmp_path).next_producer_id == 15
    with pytest.raises(ValueError):
        store.reserve_producer_ids(0)


def test_uuid_helpers() -> None:
    u = uuid.UUID("00000000-0000-0000-0000-000000000002")
    assert uuid_to_base64(u) == "AAAAAAAAAAAAAAAAAAAAAg"
    taken = {new_random_uuid() for _ in range(50)}
    fresh = new_random_uuid(taken)
    assert fresh not in taken
    assert fresh.int not in (0, 1)


def test_meta_properties_written_and_verified(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    ensure_meta_properties(dirs, node_id=3, cluster_id="clusterAAAAAAAAAAAAAAA")
    for d in dirs:
        props = read_meta_properties(d)
        assert props is not None
        assert props["version"] == "1"
        assert props["node.id"] == "3"
        assert props["cluster.id"] == "clusterAAAAAAAAAAAAAAA"
        assert len(props["directory.id"]) == 22
    ids = {read_meta_properties(d)["directory.id"] for d in dirs}  # type: ignore[index]
    assert len(ids) == 2
    # Same node and cluster: accepted, files unchanged.
    before = (dirs[0] / "meta.properties").read_text()
    ensure_meta_properties(dirs, node_id=3, cluster_id="clusterAAAAAAAAAAAAAAA")
    assert (dirs[0] / "meta.properties").read_text() == before
    with pytest.raises(MetaPropertiesError, match="cluster"):
        ensure_meta_properties(dirs, node_id=3, cluster_id="clusterBBBBBBBBBBBBBBB")
    with pytest.raises(MetaPropertiesError, match="node id"):
        ensure_meta_properties(dirs, node_id=4, cluster_id="clusterAAAAAAAAAAAAAAA")


def test_meta_properties_v0_and_bad_version(tmp_path: Path) -> None:
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=1\ncluster.id=c\n")
    ensure_meta_properties([tmp_path], node_id=1, cluster_id="c")
    with pytest.raises(MetaPropertiesError):
        ensure_meta_properties([tmp_path], node_id=2, cluster_id="c")
    (tmp_path / "meta.properties").write_text("version=7\n")
    with pytest.raises(MetaPropertiesError, match="version"):
        ensure_meta_properties([tmp_path], node_id=1, cluster_id="c")
    (tmp_path / "meta.properties").write_text("no equals sign here\n")
    with pytest.raises(MetaPropertiesError):
        ensure_meta_properties([tmp_path], node_id=1, cluster_id="c")


def test_new_store_adopts_cluster_id_from_meta_properties(tmp_path: Path) -> None:
    ensure_meta_properties([tmp_path], node_id=0, cluster_id="keptCLUSTERidAAAAAAAAA")
    store = TopicStore.open(tmp_path)
    assert store.cluster_id == "keptCLUSTERidAAAAAAAAA"


class _FailingRename(OsFileSystem):
    """Fails every rename: a write torn before its commit point."""

    def __init__(self) -> None:
        self.renames = 0

    def rename(self, src: Path, dst: Path) -> None:
        self.renames += 1
        raise OSError("injected: rename failed")


def test_writes_go_through_the_file_system_seam(tmp_path: Path) -> None:
    store = TopicStore.open(tmp_path)
    store.put(_info("kept"))
    fs = _FailingRename()
    torn = TopicStore.open(tmp_path, fs=fs)
    with pytest.raises(OSError, match="injected"):
        torn.put(_info("lost"))
    assert fs.renames == 1
    assert torn.get("lost") is None  # rolled back in memory
    assert [t.name for t in TopicStore.open(tmp_path).all()] == ["kept"]


def test_removal_listeners_hear_of_each_topic_gone(tmp_path: Path) -> None:
    """A topic removed, or its name taken by a new topic id (deleted and re-created while
    this broker was away): the listeners get the old TopicInfo, after the store wrote it; a
    listener that raises does not stop the others or the store."""
    store = TopicStore.open(tmp_path)
    heard: list[TopicInfo] = []

    def broken(info: TopicInfo) -> None:
        raise RuntimeError("boom")

    store.add_removal_listener(broken)
    store.add_removal_listener(heard.append)
    a, b = _info("a"), _info("b")
    store.put_many([a, b])
    store.put(TopicInfo(name="a", topic_id=a.topic_id, partitions=5, replication_factor=1))
    assert heard == []  # grown, same id: nothing gone
    a2 = _info("a")
    store.put(a2)
    assert [h.topic_id for h in heard] == [a.topic_id]
    assert store.remove("b") == b and heard[-1] == b
    assert store.remove("b") is None and len(heard) == 2
    assert TopicStore.open(tmp_path).get("a") == a2
