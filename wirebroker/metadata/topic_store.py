"""The persisted topic metadata of this broker, and Kafka's `meta.properties` marker files.

Topic store file
----------------
One JSON document, `wirebroker-topics.json`, in the first log dir (or at the path given when
it ends in `.json`)::

    {"format": 1,
     "cluster_id": "<22-char url-safe base64 uuid>",
     "next_producer_id": 5000,          # first producer id of the next unreserved block
     "topics": [{"name": "t", "topic_id": "<uuid hex string>", "partitions": 3,
                 "replication_factor": 1, "configs": {"retention.ms": "1000"},
                 "is_internal": false}, ...],
     "broker_configs": {"<default>": {"log.retention.ms": "1000"}, "0": {...}},
     "user_configs": {"alice": {"SCRAM-SHA-256": "salt=..,stored_key=..,..."}},
     "acl_nodes": {"/kafka-acl/Topic/t": "{\"version\":1,\"acls\":[...]}"},
     "quota_configs": {"clients/app-1": {"producer_byte_rate": "102400"}},
     "group_configs": {"g1": {"consumer.session.timeout.ms": "50000"}}}

`broker_configs` (absent when none are set) holds a single broker's dynamic broker configs
(wirebroker.dynamic_configs): the cluster default and this broker's, by ZooKeeper entity name.
`user_configs` (absent when none are set) holds a single broker's `/config/users/<user>`
configs by user name: its SCRAM users' credentials (salted keys, never passwords;
wirebroker.cluster.zk_scram_users), and their quotas (a user's node holds both).
`acl_nodes` (absent when there are none) holds a single broker's ACL znodes by path, as
ZooKeeper holds them (wirebroker.cluster.zk_acls).
`quota_configs` (absent when none are set): the other client quota entities' nodes, by their
path under `/config` (`clients/<id>`, `users/<user>/clients/<id>`, `ips/<ip>`, names
sanitized, `<default>` the default; wirebroker.cluster.zk_client_quotas).
`group_configs` (absent when none are set): a single broker's group config overrides by group
name (`/config/groups/<group>`; wirebroker.cluster.zk_group_configs).

Every mutation rewrites the whole document atomically before returning
(`wirebroker.log.fs.write_file_atomic` through the `FileSystem` seam): write `<file>.tmp`,
fsync it, rename it over the file, fsync the directory. A crash leaves either the old or the
new document, never a mix (a stale `.tmp` is ignored and overwritten by the next write).

The cluster id is generated on first start as Kafka does (`Uuid.randomUuid()`: 16 random
bytes, url-safe base64 without padding, never starting with '-'), unless a log dir already
holds a `meta.properties` naming one (the store was removed but the logs were kept).

meta.properties
---------------
Kafka writes `meta.properties` in every log dir and refuses to start when a dir belongs to
another cluster or node. wirebroker writes the KRaft (version=1) form::

    version=1
    cluster.id=<cluster id>
    node.id=<node id>
    directory.id=<a random uuid per log dir>

`ensure_meta_properties` writes missing files and raises `MetaPropertiesError` when an
existing one names another cluster or node (Kafka: InconsistentClusterIdException / "Stored
node id ... doesn't match previous node id"). Version 0 files (ZooKeeper mode: `broker.id`)
are accepted and checked the same way.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from wirebroker.log.fs import FileSystem, OsFileSystem, read_file, write_file_atomic

log = logging.getLogger(__name__)

__all__ = [
    "META_PROPERTIES",
    "STORE_FILE",
    "MetaPropertiesError",
    "TopicInfo",
    "TopicStore",
    "TopicStoreError",
    "ensure_meta_properties",
    "new_random_uuid",
    "read_meta_properties",
    "uuid_to_base64",
]

STORE_FILE = "wirebroker-topics.json"
META_PROPERTIES = "meta.properties"
_FORMAT = 1

#: Uuids Kafka reserves: the zero uuid (no id) and the metadata topic's id.
_RESERVED_UUIDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})


class TopicStoreError(Exception):
    """The store file exists but cannot be read (not JSON, wrong shape): refuse to start."""


class MetaPropertiesError(Exception):
    """A log dir's meta.properties belongs to another cluster or node, or is unreadable."""


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka's textual form of a Uuid: url-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def new_random_uuid(taken: Iterable[uuid.UUID] = ()) -> uuid.UUID:
    """A random uuid as Kafka's `Uuid.randomUuid()` picks one (not reserved, no leading '-')."""
    taken_set = set(taken)
    while True:
        value = uuid.uuid4()
        if (
            value not in _RESERVED_UUIDS
            and value not in taken_set
            and not uuid_to_base64(value).startswith("-")
        ):
            return value


@dataclass(frozen=True)
class TopicInfo:
    """One topic as the metadata image knows it.

    `configs` holds only the explicit topic-level overrides (Kafka topic config names); the
    effective values come from `topic_configs.effective_topic_configs`. It is read-only.
    """

    name: str
    topic_id: uuid.UUID
    partitions: int
    replication_factor: int
    configs: Mapping[str, str] = field(default_factory=dict)
    is_internal: bool = False
    #: Replica broker ids per partition, head = preferred leader (a cluster's
    #: /brokers/topics/<T>); () on a single broker, which holds every partition.
    assignment: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "configs", MappingProxyType(dict(self.configs)))

    def hosted_by(self, node_id: int, index: int) -> bool:
        """Whether broker `node_id` holds a replica of partition `index`."""
        if not self.assignment:
            return True
        return index < len(self.assignment) and node_id in self.assignment[index]

    def __hash__(self) -> int:
        return hash((self.name, self.topic_id))

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "topic_id": str(self.topic_id),
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "configs": dict(self.configs),
            "is_internal": self.is_internal,
            **({"assignment": [list(r) for r in self.assignment]} if self.assignment else {}),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> TopicInfo:
        configs = obj.get("configs") or {}
        if not isinstance(configs, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in configs.items()
        ):
            raise TopicStoreError(f"topic {obj.get('name')!r}: configs must map str to str")
        name, partitions, rf = obj["name"], obj["partitions"], obj["replication_factor"]
        if (
            not isinstance(name, str)
            or not isinstance(partitions, int)
            or not isinstance(rf, int)
            or partitions < 0
        ):
            raise TopicStoreError(f"bad topic entry {obj!r}")
        return cls(
            name=name,
            topic_id=uuid.UUID(str(obj["topic_id"])),
            partitions=partitions,
            replication_factor=rf,
            configs=configs,
            is_internal=bool(obj.get("is_internal", False)),
            assignment=_assignment(obj.get("assignment"), name),
        )


def _assignment(value: Any, name: str) -> tuple[tuple[int, ...], ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(r, list) and all(isinstance(b, int) for b in r) for r in value
    ):
        raise TopicStoreError(f"topic {name!r}: assignment must be a list of lists of ints")
    return tuple(tuple(r) for r in value)


def read_meta_properties(log_dir: Path, fs: FileSystem | None = None) -> dict[str, str] | None:
    """The key=value pairs of `<log_dir>/meta.properties`, or None when it does not exist."""
    path = Path(log_dir) / META_PROPERTIES
    try:
        data = read_file(fs or OsFileSystem(), path)
        if data is None:
            return None
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MetaPropertiesError(f"cannot read {path}: {exc}") from exc
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise MetaPropertiesError(f"{path}: malformed line {raw!r}")
        out[key.strip()] = value.strip()
    return out


def ensure_meta_properties(
    log_dirs: Sequence[Path], *, node_id: int, cluster_id: str, fs: FileSystem | None = None
) -> None:
    """Check every log dir's meta.properties against this node and cluster; write missing ones."""
    fs = fs or OsFileSystem()
    for log_dir in log_dirs:
        directory = Path(log_dir)
        directory.mkdir(parents=True, exist_ok=True)
        props = read_meta_properties(directory, fs)
        path = directory / META_PROPERTIES
        if props is None:
            text = (
                "#\n#Written by wirebroker\n"
                "version=1\n"
                f"cluster.id={cluster_id}\n"
                f"node.id={node_id}\n"
                f"directory.id={uuid_to_base64(new_random_uuid())}\n"
            )
            write_file_atomic(fs, path, text.encode("utf-8"))
            continue
        version = props.get("version")
        if version not in ("0", "1"):
            raise MetaPropertiesError(f"{path}: unsupported version {version!r}")
        stored_cluster = props.get("cluster.id")
        if stored_cluster is not None and stored_cluster != cluster_id:
            raise MetaPropertiesError(
                f"{path}: the log dir belongs to cluster {stored_cluster!r}, but this broker "
                f"is in cluster {cluster_id!r}"
            )
        stored_node = props.get("node.id" if version == "1" else "broker.id")
        if stored_node is not None and stored_node != str(node_id):
            raise MetaPropertiesError(
                f"{path}: stored node id {stored_node} doesn't match this broker's node id "
                f"{node_id}"
            )


def _cluster_id_from_meta(directory: Path, fs: FileSystem) -> str | None:
    if not directory.is_dir():
        return None
    props = read_meta_properties(directory, fs)
    return props.get("cluster.id") if props else None


class TopicStore:
    """Topic name -> TopicInfo, the cluster id and the producer-id reservation, on disk.

    Mutations (`put`, `remove`, `reserve_producer_ids`) are durable when they return. Not
    thread-safe: the broker calls it from its one trio thread.
    """

    def __init__(
        self,
        file: Path,
        cluster_id: str,
        topics: Mapping[str, TopicInfo],
        next_producer_id: int,
        *,
        fs: FileSystem | None = None,
    ) -> None:
        self.path = file
        self.fs: FileSystem = fs or OsFileSystem()
        self.cluster_id = cluster_id
        self._topics: dict[str, TopicInfo] = dict(topics)
        self._by_id: dict[uuid.UUID, TopicInfo] = {t.topic_id: t for t in topics.values()}
        self._next_producer_id = next_producer_id
        self._broker_configs: dict[str, dict[str, str]] = {}
        self._user_configs: dict[str, dict[str, str]] = {}
        self._acl_nodes: dict[str, str] = {}
        self._quota_configs: dict[str, dict[str, str]] = {}
        self._group_configs: dict[str, dict[str, str]] = {}
        #: True when `open` created the store file (first start, or the file was lost).
        self.created = False
        #: told of each topic gone once that is durable (removed, or its name taken by a
        #: new topic id): the share groups' cleanup (`add_removal_listener`)
        self._removal_listeners: list[Callable[[TopicInfo], None]] = []

    @classmethod
    def open(
        cls, path: Path, *, cluster_id: str | None = None, fs: FileSystem | None = None
    ) -> TopicStore:
        """Open (or create) the store.

        `path` is a log dir (the store is `<path>/wirebroker-topics.json`) or a file path ending
        in `.json`. A new store takes `cluster_id` when given, else the cluster id of an existing
        `meta.properties` in that dir, else a fresh one; it is written at once. Every read and
        write goes through `fs` (the storage layer's seam, so crash tests can tear them).
        """
        fs = fs or OsFileSystem()
        path = Path(path)
        if path.suffix == ".json":
            file, directory = path, path.parent
        else:
            file, directory = path / STORE_FILE, path
        raw = read_file(fs, file)
        if raw is None:
            directory.mkdir(parents=True, exist_ok=True)
            chosen = (
                cluster_id
                or _cluster_id_from_meta(directory, fs)
                or uuid_to_base64(new_random_uuid())
            )
            store = cls(file, chosen, {}, 0, fs=fs)
            store._save()
            store.created = True
            return store
        try:
            doc = json.loads(raw.decode("utf-8"))
            if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
                raise TopicStoreError(
                    f"{file}: unknown format {doc.get('format')!r}"
                    if isinstance(doc, dict)
                    else f"{file}: not an object"
                )
            stored_cluster = doc["cluster_id"]
            next_pid = doc.get("next_producer_id", 0)
            if not isinstance(stored_cluster, str) or not isinstance(next_pid, int):
                raise TopicStoreError(f"{file}: bad cluster_id or next_producer_id")
            topics = [TopicInfo.from_json(t) for t in doc.get("topics", [])]
            broker_configs = {
                str(entity): {str(k): str(v) for k, v in configs.items()}
                for entity, configs in doc.get("broker_configs", {}).items()
            }
            user_configs = {
                str(user): {str(k): str(v) for k, v in configs.items()}
                for user, configs in doc.get("user_configs", {}).items()
            }
            acl_nodes = {str(p): str(d) for p, d in doc.get("acl_nodes", {}).items()}
            quota_configs = {
                str(path): {str(k): str(v) for k, v in configs.items()}
                for path, configs in doc.get("quota_configs", {}).items()
            }
            group_configs = {
                str(group): {str(k): str(v) for k, v in configs.items()}
                for group, configs in doc.get("group_configs", {}).items()
            }
        except TopicStoreError:
            raise
        except (ValueError, KeyError, TypeError) as exc:
            raise TopicStoreError(f"{file}: cannot parse topic store: {exc}") from exc
        if cluster_id is not None and cluster_id != stored_cluster:
            raise TopicStoreError(
                f"{file}: stored cluster id {stored_cluster!r} differs from the configured "
                f"cluster.id {cluster_id!r}"
            )
        store = cls(file, stored_cluster, {t.name: t for t in topics}, next_pid, fs=fs)
        store._broker_configs = broker_configs
        store._user_configs = user_configs
        store._acl_nodes = acl_nodes
        store._quota_configs = quota_configs
        store._group_configs = group_configs
        return store

    # -- reads ------------------------------------------------------------------------------
    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[TopicInfo]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def __contains__(self, name: object) -> bool:
        return name in self._topics

    def __len__(self) -> int:
        return len(self._topics)

    @property
    def next_producer_id(self) -> int:
        """First producer id not yet reserved by any block."""
        return self._next_producer_id

    def broker_configs(self) -> dict[str, dict[str, str]]:
        """The dynamic broker configs kept here: ZooKeeper entity name -> configs."""
        return {entity: dict(configs) for entity, configs in self._broker_configs.items()}

    def user_configs(self) -> dict[str, dict[str, str]]:
        """The users' configs kept here (`/config/users/<user>`): user name -> configs."""
        return {user: dict(configs) for user, configs in self._user_configs.items()}

    def acl_nodes(self) -> dict[str, str]:
        """The ACL znodes kept here (`/kafka-acl...` path -> node data)."""
        return dict(self._acl_nodes)

    def quota_configs(self) -> dict[str, dict[str, str]]:
        """The client quota nodes kept here other than users' (path under /config -> configs)."""
        return {path: dict(configs) for path, configs in self._quota_configs.items()}

    def group_configs(self) -> dict[str, dict[str, str]]:
        """The group config overrides kept here: group name -> configs."""
        return {group: dict(configs) for group, configs in self._group_configs.items()}

    # -- mutations (durable on return) ---------------------------------------------------------
    def set_acl_nodes(self, nodes: Mapping[str, str]) -> None:
        """Replace the ACL znodes kept here (written only when they changed)."""
        old = self._acl_nodes
        if dict(nodes) == old:
            return
        self._acl_nodes = dict(nodes)
        try:
            self._save()
        except BaseException:
            self._acl_nodes = old
            raise

    def set_broker_configs(self, entity: str, configs: Mapping[str, str]) -> None:
        """Replace one entity's dynamic broker configs (an empty mapping removes it)."""
        self._set_configs(self._broker_configs, entity, configs)

    def set_user_configs(self, user: str, configs: Mapping[str, str]) -> None:
        """Replace one user's configs (an empty mapping removes the user)."""
        self._set_configs(self._user_configs, user, configs)

    def set_quota_configs(self, path: str, configs: Mapping[str, str]) -> None:
        """Replace one client quota node's configs (an empty mapping removes it)."""
        self._set_configs(self._quota_configs, path, configs)

    def set_group_configs(self, group: str, configs: Mapping[str, str]) -> None:
        """Replace one group's config overrides (an empty mapping removes the group)."""
        self._set_configs(self._group_configs, group, configs)

    def _set_configs(
        self, table: dict[str, dict[str, str]], key: str, configs: Mapping[str, str]
    ) -> None:
        old = table.get(key)
        if dict(configs) == (old or {}):
            return
        if configs:
            table[key] = dict(configs)
        else:
            table.pop(key, None)
        try:
            self._save()
        except BaseException:
            if old is None:
                table.pop(key, None)
            else:
                table[key] = old
            raise

    def put(self, info: TopicInfo) -> None:
        """Add or replace a topic (same name). A topic id may not move to another name."""
        self.put_many((info,))

    def add_removal_listener(self, listener: Callable[[TopicInfo], None]) -> None:
        """Call `listener(old info)` after each topic removed (`remove`, or a `put` giving its
        name a new topic id): what follows a topic deletion on every broker (Kafka's
        metadata publishers). A listener's exception is logged, not raised."""
        self._removal_listeners.append(listener)

    def _removed(self, infos: Iterable[TopicInfo]) -> None:
        for info in infos:
            for listener in list(self._removal_listeners):
                try:
                    listener(info)
                except Exception:
                    log.exception("a listener of the deletion of topic %s failed", info.name)

    def put_many(self, infos: Iterable[TopicInfo]) -> None:
        """`put` of each topic, written once (all or none)."""
        topics, by_id = dict(self._topics), dict(self._by_id)
        replaced: list[TopicInfo] = []
        for info in infos:
            other = self._by_id.get(info.topic_id)
            if other is not None and other.name != info.name:
                self._topics, self._by_id = topics, by_id
                raise ValueError(f"topic id {info.topic_id} already belongs to {other.name!r}")
            old = self._topics.get(info.name)
            self._topics[info.name] = info
            if old is not None and old.topic_id != info.topic_id:
                self._by_id.pop(old.topic_id, None)
                replaced.append(old)
            self._by_id[info.topic_id] = info
        try:
            self._save()
        except BaseException:
            self._topics, self._by_id = topics, by_id
            raise
        self._removed(replaced)

    def remove(self, name: str) -> TopicInfo | None:
        old = self._topics.pop(name, None)
        if old is None:
            return None
        self._by_id.pop(old.topic_id, None)
        try:
            self._save()
        except BaseException:
            self._topics[name] = old
            self._by_id[old.topic_id] = old
            raise
        self._removed((old,))
        return old

    def reserve_producer_ids(self, count: int) -> int:
        """Reserve `count` producer ids; returns the first. Durable before returning."""
        if count <= 0:
            raise ValueError("count must be positive")
        first = self._next_producer_id
        self._next_producer_id = first + count
        try:
            self._save()
        except BaseException:
            self._next_producer_id = first
            raise
        return first

    # -- internals ---------------------------------------------------------------------------
    def _save(self) -> None:
        doc = {
            "format": _FORMAT,
            "cluster_id": self.cluster_id,
            "next_producer_id": self._next_producer_id,
            "topics": [t.to_json() for t in self.all()],
        }
        if self._broker_configs:
            doc["broker_configs"] = self._broker_configs
        if self._user_configs:
            doc["user_configs"] = self._user_configs
        if self._acl_nodes:
            doc["acl_nodes"] = self._acl_nodes
        if self._quota_configs:
            doc["quota_configs"] = self._quota_configs
        if self._group_configs:
            doc["group_configs"] = self._group_configs
        data = json.dumps(doc, indent=1, sort_keys=True).encode("utf-8")
        write_file_atomic(self.fs, self.path, data)
