"""Replica placement: Kafka's `AdminUtils.assignReplicasToBrokers`, as a pure function.

A topic's partitions get their replicas spread evenly: partition p's first replica (its
preferred leader) is broker `(p + start) % n` of the broker list, and its followers follow at a
distance that grows by one every n partitions (`shift`), so leaders and followers both spread.
`start` and `shift` are random unless `fixed_start` is given (tests; adding partitions uses the
index of partition 0's leader so new partitions continue the pattern). With racks (all brokers
must have one, or none), the broker list is first alternated across racks (racks sorted, brokers
within a rack sorted, round robin) and a follower is taken only from a rack without a replica of
that partition yet, until every rack has one. Each broker then leads floor(P/n) or ceil(P/n) of
P partitions. Test vectors: Kafka's AdminRackAwareTest (tests/unit/cluster/test_placement.py).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wirebroker.metadata.errors import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
)

__all__ = ["BrokerMetadata", "assign_added_partitions", "assign_replicas"]


@dataclass(frozen=True)
class BrokerMetadata:
    """A live broker as placement sees it."""

    id: int
    rack: str | None = None


def assign_replicas(
    brokers: Iterable[BrokerMetadata],
    partitions: int,
    replication_factor: int,
    *,
    fixed_start: int = -1,
    start_partition: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Partition id -> replica broker ids (the first is the preferred leader)."""
    ordered = sorted(brokers, key=lambda b: b.id)
    if partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(ordered):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(ordered)}."
        )
    racked = [b for b in ordered if b.rack is not None]
    if racked and len(racked) != len(ordered):
        raise InvalidRequestError("Not all brokers have rack information for replica placement.")
    draw = (rng or random).randrange
    n = len(ordered)
    start = fixed_start if fixed_start >= 0 else draw(n)
    shift = fixed_start if fixed_start >= 0 else draw(n)
    first_id = max(0, start_partition)
    if racked:
        return _rack_aware(ordered, partitions, replication_factor, start, shift, first_id)
    ids = [b.id for b in ordered]
    out: dict[int, list[int]] = {}
    for pid in range(first_id, first_id + partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        followers = [ids[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
        out[pid] = [ids[first], *followers]
    return out


def assign_added_partitions(
    brokers: Iterable[BrokerMetadata],
    partition0_replicas: Sequence[int],
    existing: int,
    added: int,
    replication_factor: int,
) -> dict[int, list[int]]:
    """Replicas of partitions `existing .. existing + added - 1` (CreatePartitions): the
    pattern continues from the broker that leads partition 0 (Kafka's AdminZkClient)."""
    ordered = sorted(brokers, key=lambda b: b.id)
    head = partition0_replicas[0]
    start = next((i for i, b in enumerate(ordered) if b.id >= head), 0)
    return assign_replicas(
        ordered, added, replication_factor, fixed_start=start, start_partition=existing
    )


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def _rack_alternated(brokers: Sequence[BrokerMetadata]) -> list[BrokerMetadata]:
    by_rack: dict[str, list[BrokerMetadata]] = {}
    for b in brokers:  # already sorted by id
        by_rack.setdefault(str(b.rack), []).append(b)
    queues = [by_rack[rack] for rack in sorted(by_rack)]
    out: list[BrokerMetadata] = []
    depth = 0
    while len(out) < len(brokers):
        out.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return out


def _rack_aware(
    brokers: Sequence[BrokerMetadata], partitions: int, rf: int, start: int, shift: int, first: int
) -> dict[int, list[int]]:
    arranged = _rack_alternated(brokers)
    n = len(arranged)
    racks = len({b.rack for b in arranged})
    out: dict[int, list[int]] = {}
    for pid in range(first, first + partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        lead = (pid + start) % n
        replicas = [arranged[lead]]
        k = 0
        while len(replicas) < rf:
            candidate = arranged[_replica_index(lead, shift * racks, k, n)]
            k += 1
            used_racks = {b.rack for b in replicas}
            if (candidate.rack not in used_racks or len(used_racks) == racks) and (
                candidate not in replicas or len(replicas) == n
            ):
                replicas.append(candidate)
        out[pid] = [b.id for b in replicas]
    return out
