"""Kafka's ZooKeeper layout: znode paths and the JSON in them (Kafka 3.9, `ZkData.scala`).

Pure: bytes in, dataclasses out, and back. Writers produce exactly Kafka's documents, so a
ZooKeeper written by wirebroker reads like one written by Kafka's ZooKeeper mode (and the
Kafka tools that read it, e.g. `zookeeper-shell`, show the familiar JSON). Readers accept any
key order and ignore unknown keys, as Kafka's Jackson-based readers do.

Paths and documents::

    /cluster/id                               {"version":"1","id":"<base64 uuid>"}
    /controller          EPHEMERAL            {"version":1,"brokerid":1,"timestamp":"<ms>"}
    /controller_epoch                         5              (plain ASCII integer)
    /brokers/ids/<id>    EPHEMERAL            {"version":5,"host":"h","port":9092,"jmx_port":-1,
                                               "timestamp":"<ms>","endpoints":["PLAINTEXT://h:9092"],
                                               "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
                                               "rack":"r1","features":{}}   (rack only when set)
    /brokers/topics/<T>                       {"version":3,"partitions":{"0":[1,2,3]},
                                               "adding_replicas":{},"removing_replicas":{},
                                               "topic_id":"<base64 uuid>"}
    /brokers/topics/<T>/partitions/<P>/state  {"version":1,"leader":1,"leader_epoch":0,
                                               "isr":[1,2,3],"controller_epoch":5}
    /config/topics/<T>                        {"version":1,"config":{"k":"v"}}
    /config/brokers/<id>, /config/brokers/<default>
                                              {"version":1,"config":{"k":"v"}} (dynamic broker
                                               configs: one broker's, the cluster default)
    /config/users/<user>                      {"version":1,"config":{"SCRAM-SHA-256":
                                               "salt=..,stored_key=..,server_key=..,
                                               iterations=n"}} (the user's SCRAM credentials;
                                               <user> sanitized as Kafka's Sanitizer does)
    /config/changes/config_change_<seq>       {"version":2,"entity_path":"topics/<T>"} (or
                                               "brokers/<id>", "brokers/<default>",
                                               "users/<user>")
    /admin/delete_topics/<T>                  (empty marker)
    /admin/preferred_replica_election         {"version":1,"partitions":
                                               [{"topic":"t","partition":0}]}

The broker epoch is the czxid of the broker's `/brokers/ids/<id>` znode; the "partition epoch"
is the zkVersion of its state znode; `leader` -1 means no leader (the partition is offline).

wirebroker additions (not in Kafka's layout, used because brokers learn of changes through
watches instead of controller requests; see ARCHITECTURE.md):

    /wirebroker/controlled_shutdown/<id>      {"version":1,"broker_epoch":<czxid>}
        a broker asking the controller to move its leaderships away before it stops
    /wirebroker/unclean_leader_election       {"version":1,"partitions":
                                               [{"topic":"t","partition":0}]}
        an ElectLeaders UNCLEAN (KIP-460) asked of any broker, for the controller: as
        /admin/preferred_replica_election (Kafka's ZooKeeper mode had no znode for it: its
        ElectLeaders went to the controller broker itself)
"""

from __future__ import annotations

import base64
import json
import urllib.parse
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wirebroker.metadata.partition_state import PartitionState, TopicAssignment

__all__ = [
    "ADMIN_DELETE_TOPICS",
    "BROKER_IDS",
    "BROKER_TOPICS",
    "CLUSTER_ID",
    "CONFIG_BROKERS",
    "CONFIG_CHANGES",
    "CONFIG_GROUPS",
    "CONFIG_TOPICS",
    "CONFIG_USERS",
    "CONTROLLED_SHUTDOWN",
    "CONTROLLER",
    "CONTROLLER_EPOCH",
    "ISR_CHANGE_NOTIFICATION",
    "ISR_CHANGE_PREFIX",
    "PERSISTENT_PATHS",
    "PREFERRED_REPLICA_ELECTION",
    "UNCLEAN_LEADER_ELECTION",
    "BrokerRegistration",
    "LayoutError",
    "broker_config_path",
    "broker_path",
    "decode_broker",
    "decode_broker_config",
    "decode_cluster_id",
    "decode_controller",
    "decode_controller_epoch",
    "decode_group_config",
    "decode_partition_state",
    "decode_preferred_election",
    "decode_topic",
    "decode_topic_config",
    "desanitize_user",
    "encode_broker",
    "encode_broker_config",
    "encode_cluster_id",
    "encode_config_change",
    "encode_controller",
    "encode_controller_epoch",
    "encode_entity_change",
    "encode_group_config",
    "encode_partition_state",
    "encode_preferred_election",
    "encode_topic",
    "encode_topic_config",
    "group_config_path",
    "partition_path",
    "partitions_path",
    "sanitize_user",
    "state_path",
    "topic_config_path",
    "topic_path",
    "user_config_path",
]

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONFIG_CHANGES = "/config/changes"
CONFIG_USERS = "/config/users"
CONFIG_GROUPS = "/config/groups"
ADMIN_DELETE_TOPICS = "/admin/delete_topics"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
UNCLEAN_LEADER_ELECTION = "/wirebroker/unclean_leader_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
#: An ISR change notification: a sequential child whose data names the partitions (the format
#: of `encode_preferred_election`); Kafka's IsrChangeNotificationSequenceZNode.
ISR_CHANGE_PREFIX = f"{ISR_CHANGE_NOTIFICATION}/isr_change_"
CONTROLLED_SHUTDOWN = "/wirebroker/controlled_shutdown"

#: Created at start-up when missing (Kafka's ZkData.PersistentZkPaths, plus ours).
PERSISTENT_PATHS = (
    "/consumers",
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_CHANGES,
    ADMIN_DELETE_TOPICS,
    BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION,
    "/latest_producer_id_block",
    "/log_dir_event_notification",
    CONFIG_TOPICS,
    CONFIG_BROKERS,
    "/config/clients",
    CONFIG_USERS,
    CONTROLLED_SHUTDOWN,
)


class LayoutError(ValueError):
    """A znode holds something that is not the document Kafka writes there."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def _dump(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _load(data: bytes | None, what: str) -> dict[str, Any]:
    if not data:
        raise LayoutError(f"{what}: empty znode")
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise LayoutError(f"{what}: not JSON ({exc})") from exc
    if not isinstance(obj, dict):
        raise LayoutError(f"{what}: not a JSON object")
    return obj


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise LayoutError(f"{what}: {key!r} must be an integer, not {value!r}")
    return value


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise LayoutError(f"{what}: expected a list of integers, not {value!r}")
    return tuple(value)


def uuid_to_kafka(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: url-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def uuid_from_kafka(text: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return uuid.UUID(bytes=raw)
    except (ValueError, TypeError) as exc:
        raise LayoutError(f"bad topic id {text!r}") from exc


# -- /cluster/id ---------------------------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None) -> str:
    obj = _load(data, CLUSTER_ID)
    value = obj.get("id")
    if not isinstance(value, str) or not value:
        raise LayoutError(f"{CLUSTER_ID}: no id")
    return value


# -- /controller, /controller_epoch -----------------------------------------------------------
def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)})


def decode_controller(data: bytes | None) -> int:
    return _int(_load(data, CONTROLLER), "brokerid", CONTROLLER)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes | None) -> int:
    try:
        return int((data or b"").decode().strip())
    except (ValueError, UnicodeDecodeError) as exc:
        raise LayoutError(f"{CONTROLLER_EPOCH}: not an integer: {data!r}") from exc


# -- /brokers/ids/<id> -------------------------------------------------------------------------
#: (every listener's (name, host, port), (name, security protocol) pairs) of a registration
Endpoints = tuple[tuple[tuple[str, str, int], ...], tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    rack: str | None = None
    timestamp_ms: int = 0
    #: (listener name, host, port) of every advertised listener; () = PLAINTEXT at host:port
    endpoints: tuple[tuple[str, str, int], ...] = ()
    #: listener name -> security protocol
    protocols: tuple[tuple[str, str], ...] = ()


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def encode_broker(reg: BrokerRegistration) -> bytes:
    """`host`/`port` are the inter-broker listener's address (Kafka writes its PLAINTEXT
    listener's there; only wirebroker brokers read them), `endpoints` every listener."""
    endpoints = reg.endpoints or (("PLAINTEXT", reg.host, reg.port),)
    protocols = dict(reg.protocols) if reg.endpoints else {"PLAINTEXT": "PLAINTEXT"}
    doc: dict[str, Any] = {
        "version": 5,
        "host": reg.host,
        "port": reg.port,
        "jmx_port": -1,
        "timestamp": str(reg.timestamp_ms),
        "endpoints": [f"{name}://{_bracketed(h)}:{p}" for name, h, p in endpoints],
        "listener_security_protocol_map": protocols,
        "features": {},
    }
    if reg.rack is not None:
        doc["rack"] = reg.rack
    return _dump(doc)


def _parse_endpoint(text: str) -> tuple[str, str, int] | None:
    name, sep, rest = text.partition("://")
    if not sep:
        return None
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return name, host.strip("[]"), int(port)


def decode_broker(broker_id: int, data: bytes | None) -> BrokerRegistration:
    what = broker_path(broker_id)
    obj = _load(data, what)
    host, port = obj.get("host"), obj.get("port")
    protocol_map = obj.get("listener_security_protocol_map") or {}
    endpoints = []
    for text in obj.get("endpoints") or []:
        parsed = _parse_endpoint(str(text)) if isinstance(text, str) else None
        if parsed is not None:
            endpoints.append(parsed)
    if not isinstance(host, str) or not host or not isinstance(port, int) or port < 0:
        plaintext = [e for e in endpoints if protocol_map.get(e[0], e[0]) == "PLAINTEXT"]
        if not (plaintext or endpoints):
            raise LayoutError(f"{what}: no endpoint")
        _name, host, port = (plaintext or endpoints)[0]
    rack = obj.get("rack")
    stamp = obj.get("timestamp")
    return BrokerRegistration(
        broker_id,
        host,
        port,
        rack if isinstance(rack, str) else None,
        int(stamp) if isinstance(stamp, str) and stamp.isdigit() else 0,
        tuple(endpoints),
        tuple((str(k), str(v)) for k, v in protocol_map.items()),
    )


# -- /brokers/topics/<T> -----------------------------------------------------------------------
def encode_topic(assignment: TopicAssignment) -> bytes:
    def part_map(m: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
        return {str(p): list(r) for p, r in sorted(m.items())}

    doc: dict[str, Any] = {
        "version": 3,
        "partitions": part_map(assignment.partitions),
        "adding_replicas": part_map(assignment.adding),
        "removing_replicas": part_map(assignment.removing),
    }
    if assignment.topic_id is not None:
        doc["topic_id"] = uuid_to_kafka(assignment.topic_id)
    return _dump(doc)


def decode_topic(topic: str, data: bytes | None) -> TopicAssignment:
    what = topic_path(topic)
    obj = _load(data, what)

    def part_map(value: Any) -> dict[int, tuple[int, ...]]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise LayoutError(f"{what}: partitions must be an object")
        out: dict[int, tuple[int, ...]] = {}
        for key, replicas in value.items():
            if not isinstance(key, str) or not key.isdigit():
                raise LayoutError(f"{what}: bad partition key {key!r}")
            out[int(key)] = _int_list(replicas, what)
        return out

    partitions = part_map(obj.get("partitions"))
    if sorted(partitions) != list(range(len(partitions))):
        raise LayoutError(f"{what}: partitions are not 0..n-1: {sorted(partitions)}")
    raw_id = obj.get("topic_id")
    return TopicAssignment(
        partitions,
        uuid_from_kafka(raw_id) if isinstance(raw_id, str) else None,
        part_map(obj.get("adding_replicas")),
        part_map(obj.get("removing_replicas")),
    )


# -- /brokers/topics/<T>/partitions/<P>/state ---------------------------------------------------
#: Decoded state documents by their bytes: a cluster has few distinct ones (leader, epoch and
#: ISR repeat across partitions; on a single broker they are all alike), and the controller
#: and every broker decode each partition's. `PartitionState` is immutable, so it is shared.
_STATES: dict[bytes, PartitionState] = {}
_STATES_MAX = 4096


def encode_partition_state(state: PartitionState) -> bytes:
    doc: dict[str, Any] = {
        "version": 1,
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
        "controller_epoch": state.controller_epoch,
    }
    if state.recovering:
        doc["leader_recovery_state"] = 1
    return _dump(doc)


def decode_partition_state(topic: str, partition: int, data: bytes | None) -> PartitionState:
    if data:
        known = _STATES.get(data)
        if known is not None:
            return known
    what = state_path(topic, partition)
    obj = _load(data, what)
    state = PartitionState(
        leader=_int(obj, "leader", what),
        leader_epoch=_int(obj, "leader_epoch", what),
        isr=_int_list(obj.get("isr"), what),
        controller_epoch=_int(obj, "controller_epoch", what),
        recovering=obj.get("leader_recovery_state") == 1,
    )
    if data is not None:
        if len(_STATES) >= _STATES_MAX:
            _STATES.clear()
        _STATES[data] = state
    return state


# -- /config/topics/<T>, /config/changes ---------------------------------------------------------
def encode_topic_config(configs: Mapping[str, str]) -> bytes:
    return _dump({"version": 1, "config": dict(sorted(configs.items()))})


def decode_topic_config(topic: str, data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    obj = _load(data, topic_config_path(topic))
    config = obj.get("config") or {}
    if not isinstance(config, dict):
        raise LayoutError(f"{topic_config_path(topic)}: config must be an object")
    return {str(k): str(v) for k, v in config.items()}


def encode_config_change(topic: str) -> bytes:
    return encode_entity_change(f"topics/{topic}")


def encode_entity_change(entity_path: str) -> bytes:
    """A /config/changes notification for `entity_path` ("topics/<T>", "brokers/<id>")."""
    return _dump({"version": 2, "entity_path": entity_path})


# -- /config/brokers/<entity> (dynamic broker configs) ------------------------------------------
def broker_config_path(entity: str) -> str:
    """`entity`: a broker id, or "<default>" for the cluster-wide default."""
    return f"{CONFIG_BROKERS}/{entity}"


def encode_broker_config(configs: Mapping[str, str]) -> bytes:
    return encode_topic_config(configs)


def decode_broker_config(entity: str, data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    obj = _load(data, broker_config_path(entity))
    config = obj.get("config") or {}
    if not isinstance(config, dict):
        raise LayoutError(f"{broker_config_path(entity)}: config must be an object")
    return {str(k): str(v) for k, v in config.items()}


# -- /config/users/<user> (SCRAM credentials; wirebroker.security.credentials encodes them) ----
_SANITIZE_KEEP = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def sanitize_user(user: str) -> str:
    """A user name as a znode name, as Kafka's `Sanitizer.sanitize` writes it: UTF-8 bytes
    percent-encoded except letters, digits and ".-_" (so "/" can never split a path)."""
    return "".join(chr(b) if b in _SANITIZE_KEEP else f"%{b:02X}" for b in user.encode("utf-8"))


def desanitize_user(name: str) -> str:
    """The user a `/config/users` child names (Kafka's `Sanitizer.desanitize`)."""
    return urllib.parse.unquote_plus(name, errors="strict")


def user_config_path(user: str) -> str:
    return f"{CONFIG_USERS}/{sanitize_user(user)}"


# -- /config/groups/<group> (KIP-848 group configs) ---------------------------------------------
def group_config_path(group: str) -> str:
    """A group's config node (its name sanitized as a user's: "/" never splits the path)."""
    return f"{CONFIG_GROUPS}/{sanitize_user(group)}"


def encode_group_config(configs: Mapping[str, str]) -> bytes:
    return encode_topic_config(configs)


def decode_group_config(path: str, data: bytes | None) -> dict[str, str]:
    """A group config node's configs ({} for an empty node); LayoutError when malformed."""
    if not data:
        return {}
    obj = _load(data, path)
    config = obj.get("config") or {}
    if not isinstance(config, dict):
        raise LayoutError(f"{path}: config must be an object")
    return {str(k): str(v) for k, v in config.items()}


# -- /admin/preferred_replica_election ----------------------------------------------------------
def encode_preferred_election(partitions: Sequence[tuple[str, int]]) -> bytes:
    return _dump(
        {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def decode_preferred_election(
    data: bytes | None, path: str = PREFERRED_REPLICA_ELECTION
) -> list[tuple[str, int]]:
    """The partitions of an election request (preferred, or unclean at `path`)."""
    obj = _load(data, path)
    out = []
    for entry in obj.get("partitions") or []:
        if isinstance(entry, dict):
            topic, partition = entry.get("topic"), entry.get("partition")
            if isinstance(topic, str) and isinstance(partition, int):
                out.append((topic, partition))
    return out
