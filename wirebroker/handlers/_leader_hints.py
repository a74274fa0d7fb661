"""Leader hints in Produce and Fetch answers (KIP-951, Kafka 3.7+): a partition answered
NOT_LEADER_OR_FOLLOWER (Produce v10+, Fetch v16+) or FENCED_LEADER_EPOCH (Fetch v16+) also
carries `current_leader` (leader id and leader epoch as this broker knows them), and the
answer lists the `node_endpoints` (id, host, port, rack) of those leaders that are live. A
client that reads them (librdkafka 2.4+, the Java client 3.7+) moves to the new leader at
once instead of asking for Metadata first -- which matters right after a leader change,
when the broker it asks may not have applied the change yet: a consumer was seen retrying a
stopped broker for up to 2.4 s on such a stale answer after a controlled shutdown.

Where the leader comes from, as in Kafka's `KafkaApis.getCurrentLeader`: the partition's
local replica (a follower knows its leader and epoch) and the cluster view (ZooKeeper's
partition state), the newer of the two that names a leader; (-1, -1) when neither knows the
partition. Only a live broker is listed among the endpoints.

    hints = LeaderHints(services)
    presp["current_leader"] = hints.leader_of(topic, index)   # for each failed partition
    body["node_endpoints"] = hints.node_endpoints()          # once, for the answer
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from wirebroker.handlers.context import Services
    from wirebroker.metadata.view import BrokerNode

__all__ = [
    "FETCH_HINTS_MIN_VERSION",
    "FETCH_HINT_CODES",
    "PRODUCE_HINTS_MIN_VERSION",
    "PRODUCE_HINT_CODES",
    "LeaderHints",
]

PRODUCE_HINTS_MIN_VERSION = 10
FETCH_HINTS_MIN_VERSION = 16
PRODUCE_HINT_CODES = frozenset({int(ErrorCode.NOT_LEADER_OR_FOLLOWER)})
FETCH_HINT_CODES = frozenset(
    {int(ErrorCode.NOT_LEADER_OR_FOLLOWER), int(ErrorCode.FENCED_LEADER_EPOCH)}
)


class LeaderHints:
    """The leader hints of one answer: `leader_of` per failed partition, then the endpoints of
    the leaders named."""

    def __init__(self, services: Services, listener: str = "PLAINTEXT") -> None:
        self._services = services
        self._listener = listener
        self._nodes: dict[int, BrokerNode] = {}

    def leader_of(self, topic: str | None, index: int) -> dict[str, int]:
        """`current_leader` of a partition: {"leader_id", "leader_epoch"}, -1 when unknown.
        The newer of what the local replica and the cluster view know: a replica this broker
        stopped (it left the ISR in a controlled shutdown) no longer tracks the leader, while
        the view has the state that moved it."""
        leader, epoch = -1, -1
        if topic is not None:
            known = []
            part = self._services.replicas.partition(topic, index)
            if part is not None:
                known.append((part.leader_epoch, part.leader_id))
            view = self._services.cluster.partition(topic, index)
            if view is not None:
                known.append((view.leader_epoch, view.leader))
            led = [k for k in known if k[1] >= 0]
            epoch, leader = max(led or known, default=(-1, -1))
            if not led:
                leader = -1
        if leader >= 0 and leader not in self._nodes:
            node = self._services.cluster.broker(leader)
            if node is not None:
                self._nodes[leader] = node
        return {"leader_id": leader, "leader_epoch": epoch}

    def node_endpoints(self) -> list[dict[str, Any]]:
        """The live leaders named so far, by id."""
        out = []
        for _, n in sorted(self._nodes.items()):
            address = n.address(self._listener)
            if address is not None:
                out.append(
                    {"node_id": n.node_id, "host": address[0], "port": address[1], "rack": n.rack}
                )
        return out
