"""What the admin plane shows: one JSON-ready snapshot of the broker's state, read on demand.

`snapshot(sources)` reads the services at the moment it is called (a scrape of /metrics, a
GET of /api/state): nothing is copied or kept between calls, and no request path pays for it.
Both renderings come from it: the Prometheus collector (metrics.py) and the web view (web.py).

    broker       node id, cluster id, version, advertised address, controller id, open
                 connections, ZooKeeper session state ("connected" / "suspended" / "lost";
                 a single broker's in-process ZooKeeper is always connected)
    brokers      the live brokers as Metadata shows them
    topics       every topic with its partitions: leader, leader epoch, replicas, ISR, offline
                 replicas (the cluster's view), and where this broker hosts a replica its role,
                 log start / log end offset, high watermark and size in bytes; bytes in / out
                 counted by this broker's handlers
    groups       the groups this broker coordinates: state, generation, protocol, leader,
                 members (id, client id, host) and committed offsets with their lag
                 (high watermark - committed offset, from this broker's replica: on a
                 follower, the high watermark the leader last sent, one fetch behind; null
                 when this broker hosts no replica of the partition)
    authentications  per SASL listener and mechanism: successful and failed authentications
                 (wirebroker.security.auth_stats; a mechanism no listener enables is
                 "unsupported")
    throttled_connections  per listener and reason (ip, listener, broker): connections
                 throttled by a connection creation rate (KIP-612;
                 wirebroker.security.connection_rates)

Under-replicated (`under_replicated`): the partition's ISR is smaller than its replica set, as
this broker's view of the cluster shows it (the web view flags those); the metrics count, as
Kafka's UnderReplicatedPartitions does, only the ones this broker leads. Offline: no live
leader (Kafka's controller reports OfflinePartitionsCount; every broker reports its view).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wirebroker.handlers.context import Services
from wirebroker.metadata.names import is_internal

__all__ = ["AdminSources", "snapshot"]


def _no_connections() -> int:
    return 0


def _connected() -> str:
    return "connected"


def _no_authentications() -> list[dict[str, Any]]:
    return []


@dataclass
class AdminSources:
    """Where the snapshot reads from (built by the composition root, wirebroker/broker.py)."""

    services: Services
    connections: Callable[[], int] = field(default=_no_connections)
    zookeeper_state: Callable[[], str] = field(default=_connected)
    #: `AuthenticationStats.rows` of the Kafka listeners
    authentications: Callable[[], list[dict[str, Any]]] = field(default=_no_authentications)
    #: `ConnectionRates.rows` of the Kafka listeners
    throttled_connections: Callable[[], list[dict[str, Any]]] = field(default=_no_authentications)
    version: str = ""


def snapshot(sources: AdminSources) -> dict[str, Any]:
    services = sources.services
    cluster = services.cluster
    stats = services.stats
    node_id = services.node_id
    brokers = [
        {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in sorted(cluster.live_brokers(), key=lambda b: b.node_id)
    ]
    topics = []
    high_watermarks: dict[tuple[str, int], int] = {}
    for info in sorted(services.cluster.all_topics(), key=lambda t: t.name):
        partitions = []
        views = {v.index: v for v in cluster.partitions(info.name)}
        for index in range(info.partitions):
            view = views.get(index)
            entry: dict[str, Any] = {
                "partition": index,
                "leader": view.leader if view is not None else -1,
                "leader_epoch": view.leader_epoch if view is not None else -1,
                "replicas": list(view.replicas) if view is not None else [],
                "isr": list(view.isr) if view is not None else [],
                "offline_replicas": list(view.offline) if view is not None else [],
                "role": None,
                "log_start_offset": None,
                "log_end_offset": None,
                "high_watermark": None,
                "size_bytes": None,
            }
            part = services.replicas.partition(info.name, index)
            if part is not None:
                entry["role"] = part.role.value
                entry["log_start_offset"] = part.log_start_offset
                entry["log_end_offset"] = part.log_end_offset
                entry["high_watermark"] = part.high_watermark
                entry["size_bytes"] = part.size
                high_watermarks[(info.name, index)] = part.high_watermark
            entry["offline"] = entry["leader"] < 0
            entry["under_replicated"] = len(entry["isr"]) < len(entry["replicas"])
            partitions.append(entry)
        topics.append(
            {
                "name": info.name,
                "topic_id": str(info.topic_id),
                "internal": info.is_internal or is_internal(info.name),
                "replication_factor": info.replication_factor,
                "partitions": partitions,
                "bytes_in": stats.bytes_in.get(info.name, 0),
                "bytes_out": stats.bytes_out.get(info.name, 0),
            }
        )
    return {
        "broker": {
            "node_id": node_id,
            "cluster_id": services.cluster_id,
            "version": sources.version,
            "advertised": f"{services.advertised_host}:{services.advertised_port}",
            "controller_id": cluster.controller_id(),
            "connections": sources.connections(),
            "zookeeper_session": sources.zookeeper_state(),
        },
        "brokers": brokers,
        "topics": topics,
        "groups": _groups(services, high_watermarks),
        "authentications": sources.authentications(),
        "throttled_connections": sources.throttled_connections(),
        "quotas": _quotas(services),
    }


def _quotas(services: Services) -> list[dict[str, Any]]:
    """Client quota sensors (security/quota_manager.py): per quota kind and the user / client
    id it measures, the bound, the current rate, what was recorded and the throttling."""
    quotas = services.client_quotas
    if quotas is None:
        return []
    return [
        {
            "kind": v.kind,
            "user": v.user,
            "client_id": v.client_id,
            "quota": v.bound,
            "rate": round(v.rate, 3),
            "recorded": v.total,
            "throttled": v.throttled,
            "throttle_time_ms": v.throttle_ms_total,
            "last_throttle_ms": v.last_throttle_ms,
        }
        for v in quotas.snapshot(services.clock())
    ]


def _groups(services: Services, high_watermarks: dict[tuple[str, int], int]) -> list[Any]:
    runtime = services.group_coordinator
    if runtime is None:
        return []
    state = runtime.core.state
    out = []
    groups = set(state.groups) | set(state.consumer_groups) | set(state.offsets.groups())
    for group_id in sorted(groups):
        group = state.groups.get(group_id)
        offsets = []
        for topic, partition, committed in sorted(
            state.offsets.entries(group_id), key=lambda e: (e[0], e[1])
        ):
            hw = high_watermarks.get((topic, partition))
            offset = committed.committed_offset
            offsets.append(
                {
                    "topic": topic,
                    "partition": partition,
                    "committed_offset": offset,
                    "high_watermark": hw,
                    "lag": None if hw is None else max(0, hw - offset),
                }
            )
        consumer_group = state.consumer_groups.get(group_id)
        if consumer_group is not None:  # KIP-848: the group epoch stands for the generation
            out.append(_consumer_group(consumer_group, offsets))
            continue
        out.append(
            {
                "group_id": group_id,
                "state": str(group.state) if group is not None else "Empty",
                "generation": group.generation_id if group is not None else 0,
                "protocol_type": group.protocol_type if group is not None else None,
                "protocol": group.protocol_name if group is not None else None,
                "leader": group.leader_id if group is not None else None,
                "members": [
                    {
                        "member_id": m.member_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "group_instance_id": m.group_instance_id,
                    }
                    for m in (group.members.values() if group is not None else ())
                ],
                "offsets": offsets,
            }
        )
    return out


def _consumer_group(group: Any, offsets: list[dict[str, Any]]) -> dict[str, Any]:
    """A KIP-848 consumer group in the shape of the classic ones (generation: its epoch)."""
    return {
        "group_id": group.group_id,
        "state": str(group.group_state()),
        "generation": group.group_epoch,
        "protocol_type": "consumer",
        "protocol": None,
        "leader": None,
        "members": [
            {
                "member_id": m.member_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "group_instance_id": m.instance_id,
            }
            for m in group.members.values()
        ],
        "offsets": offsets,
    }
