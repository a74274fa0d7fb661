"""Which `__transaction_state` partition holds a transactional id: Kafka's `partitionFor`,
`Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`, the same
function as for groups (`wirebroker.group.partitioning`)."""

from __future__ import annotations

from wirebroker.group.partitioning import partition_for

__all__ = ["partition_for"]
