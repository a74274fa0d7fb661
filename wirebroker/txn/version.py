"""The `transaction.version` feature (KIP-890 part 2, Kafka's TransactionVersion).

Kafka finalizes the feature level with `kafka-features`; here the broker config
`transaction.version` (default 2) is the finalized level, the same on every broker of a
cluster. What each level means, as in Kafka 4:
    0, 1   KIP-890 part 1 only: clients add partitions with AddPartitionsToTxn, leaders verify
           them (verify_only); ApiVersions caps Produce at v11, EndTxn and TxnOffsetCommit at
           v4, so no client speaks TV2.
    2      part 2: Produce v12+ / TxnOffsetCommit v5 of a transactional producer make the
           partition leader add the partition itself (AddPartitionsToTxn v5, verify_only
           false, sent to the coordinator); EndTxn v5 bumps the epoch on every commit/abort.
ApiVersions v3+ lists the supported feature (0..2) and, when the level is above 0, the
finalized feature with `FINALIZED_FEATURES_EPOCH` (Kafka's epoch is a metadata offset; a
constant is enough for a broker whose features only change by restart). Clients (the Java
client, librdkafka with KIP-890 support) use TV2 when the finalized level is >= 2 and the
broker serves the TV2 request versions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wirebroker.config import BrokerConfig

__all__ = [
    "FEATURE",
    "FINALIZED_FEATURES_EPOCH",
    "MAX_LEVEL",
    "TV1_MAX_VERSIONS",
    "TV2_END_TXN_VERSION",
    "TV2_PRODUCE_VERSION",
    "TV2_TXN_OFFSET_COMMIT_VERSION",
    "level",
]

FEATURE = "transaction.version"
MAX_LEVEL = 2
FINALIZED_FEATURES_EPOCH = 0
TV2_PRODUCE_VERSION = 12
TV2_END_TXN_VERSION = 5
TV2_TXN_OFFSET_COMMIT_VERSION = 5
#: api key -> highest version advertised below level 2 (Produce 0, EndTxn 26, TxnOffsetCommit 28)
TV1_MAX_VERSIONS = {
    0: TV2_PRODUCE_VERSION - 1,
    26: TV2_END_TXN_VERSION - 1,
    28: TV2_TXN_OFFSET_COMMIT_VERSION - 1,
}


def level(config: BrokerConfig) -> int:
    """The finalized transaction.version of this broker (0..2)."""
    return max(0, min(MAX_LEVEL, config.get_int("transaction.version")))
