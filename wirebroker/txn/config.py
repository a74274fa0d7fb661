"""The transaction coordinator's settings, read once from the broker configuration.

Kafka key                                               field                         default
transaction.state.log.num.partitions                    num_partitions                50
transaction.max.timeout.ms                              max_timeout_ms                900000
transactional.id.expiration.ms                          id_expiration_ms              604800000
transaction.abort.timed.out.transaction.cleanup.interval.ms  abort_check_interval_ms  10000
transaction.remove.expired.transaction.cleanup.interval.ms   expire_check_interval_ms 3600000
offsets.topic.num.partitions                            offsets_num_partitions        50
transaction.version                                     transaction_version           2

The two intervals are for the runtime (how often it calls `abort_timed_out` and
`expire_transactional_ids`); the core only compares timestamps.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from wirebroker.config import BROKER_CONFIGS, BrokerConfig


def _from(key: str, default: int) -> int:
    return field(default=default, metadata={"key": key})


@dataclass(frozen=True)
class TxnConfig:
    num_partitions: int = _from("transaction.state.log.num.partitions", 50)
    max_timeout_ms: int = _from("transaction.max.timeout.ms", 900_000)
    id_expiration_ms: int = _from("transactional.id.expiration.ms", 604_800_000)
    abort_check_interval_ms: int = _from(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms", 10_000
    )
    expire_check_interval_ms: int = _from(
        "transaction.remove.expired.transaction.cleanup.interval.ms", 3_600_000
    )
    offsets_num_partitions: int = _from("offsets.topic.num.partitions", 50)
    transaction_version: int = _from("transaction.version", 2)
    """The finalized transaction.version: at 2 every `__transaction_state` value is written
    as version 1 (flexible, tagged fields), as Kafka does; below, version 0."""

    @classmethod
    def from_broker_config(cls, cfg: BrokerConfig) -> TxnConfig:
        """Declared keys through the typed config, others from the raw properties."""

        def get(name: str, default: int) -> int:
            if name in BROKER_CONFIGS:
                value = cfg.get(name)
                return default if value is None else int(str(value))
            raw = cfg.values.get(name)
            return default if raw is None else int(raw.strip())

        return cls(**{f.name: get(f.metadata["key"], int(str(f.default))) for f in fields(cls)})
