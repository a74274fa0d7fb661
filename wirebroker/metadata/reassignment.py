"""The checks of one AlterPartitionReassignments entry, as Kafka's controller makes them.

Shared by the single broker's handler and a cluster's `ZkTopicAdmin`. Pure: the caller says
what the partition has (its current replicas, whether a reassignment is ongoing) and which
brokers are registered. Each problem is (error code, message) with Kafka 4.4's texts (asked of
it: tests/oracle/test_kafka_answers.py):

    unknown topic                 UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named t."
    unknown partition index       UNKNOWN_TOPIC_OR_PARTITION "Unable to find partition t:9."
    null target, none ongoing     NO_REASSIGNMENT_IN_PROGRESS, no message (null)
    empty target                  INVALID_REPLICA_ASSIGNMENT "The manual partition assignment
                                  includes an empty replica list."
    a broker twice                "... includes the broker 1 more than once."
    a broker not registered       "... includes broker 7, but no such broker is registered."
                                  (the first one)
    another replica count without allow_replication_factor_change
                                  INVALID_REPLICATION_FACTOR
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

__all__ = ["check_target", "unknown_partition"]

UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
NO_REASSIGNMENT_IN_PROGRESS = 85

Problem = tuple[int, "str | None"]


def unknown_partition(topic: str, index: int, *, topic_exists: bool) -> Problem:
    """The answer for a partition the cluster does not have."""
    if not topic_exists:
        return UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    return UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}."


def check_target(
    current: Sequence[int],
    target: Sequence[int] | None,
    *,
    ongoing: bool,
    registered: Collection[int],
    allow_rf_change: bool,
) -> Problem | None:
    """Why `target` (None: cancel) cannot be applied to a partition with replicas `current`;
    None when it can."""
    if target is None:
        return None if ongoing else (NO_REASSIGNMENT_IN_PROGRESS, None)
    prefix = "The manual partition assignment includes"
    if not target:
        return INVALID_REPLICA_ASSIGNMENT, f"{prefix} an empty replica list."
    seen: set[int] = set()
    for broker in target:
        if broker in seen:
            return INVALID_REPLICA_ASSIGNMENT, f"{prefix} the broker {broker} more than once."
        seen.add(broker)
    for broker in target:
        if broker not in registered:
            return (
                INVALID_REPLICA_ASSIGNMENT,
                f"{prefix} broker {broker}, but no such broker is registered.",
            )
    if not allow_rf_change and len(target) != len(current):
        return (
            INVALID_REPLICATION_FACTOR,
            f"The replication factor is changed from {len(current)} to {len(target)}",
        )
    return None
