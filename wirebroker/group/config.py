"""The group coordinator's settings, read once from the broker configuration.

Kafka key                               field                              Kafka default
group.initial.rebalance.delay.ms        initial_rebalance_delay_ms         3000 (wirebroker: 0)
group.min.session.timeout.ms            min_session_timeout_ms             6000
group.max.session.timeout.ms            max_session_timeout_ms             1800000
group.max.size                          max_group_size                     2147483647
offsets.topic.num.partitions            num_partitions                     50
offsets.retention.minutes               offsets_retention_ms (x 60000)     10080 (7 days)
offsets.retention.check.interval.ms     offsets_retention_check_interval_ms 600000
offset.metadata.max.bytes               offset_metadata_max_bytes          4096
group.consumer.session.timeout.ms       consumer_session_timeout_ms        45000
group.consumer.heartbeat.interval.ms    consumer_heartbeat_interval_ms     5000
group.consumer.assignors                consumer_assignors                 uniform,range
group.consumer.max.size                 consumer_max_size                  2147483647
group.consumer.migration.policy         consumer_migration_policy          bidirectional
group.share.session.timeout.ms          share_session_timeout_ms           45000
group.share.heartbeat.interval.ms       share_heartbeat_interval_ms        5000
group.share.max.size                    share_max_size                     200
group.share.assignment.interval.ms      share_assignment_interval_ms       1000
group.share.initialize.retry.interval.ms share_initialize_retry_interval_ms 30000
(fixed in Kafka)                        new_member_join_timeout_ms         300000

The KIP-848 session timeout and heartbeat interval must lie within their
group.consumer.min/max.* bounds, the interval below the timeout, as Kafka 4.4 requires
(`check_consumer_bounds`: ConfigError, the broker does not start).

Keys that `wirebroker.config.BROKER_CONFIGS` does not declare (yet) are still honoured when
present in the raw properties, so a Kafka server.properties keeps its meaning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields

from wirebroker.config import BROKER_CONFIGS, BrokerConfig, ConfigError

INT_MAX = 2147483647
MIGRATION_POLICIES = ("disabled", "downgrade", "upgrade", "bidirectional")


def _from(key: str, default: int, unit: int = 1) -> int:
    """A field read from the broker config `key` (times `unit`), `default` when unset."""
    return field(default=default, metadata={"key": key, "unit": unit})


@dataclass(frozen=True)
class GroupConfig:
    num_partitions: int = _from("offsets.topic.num.partitions", 50)
    initial_rebalance_delay_ms: int = _from("group.initial.rebalance.delay.ms", 0)
    min_session_timeout_ms: int = _from("group.min.session.timeout.ms", 6000)
    max_session_timeout_ms: int = _from("group.max.session.timeout.ms", 1800000)
    max_group_size: int = _from("group.max.size", INT_MAX)
    offsets_retention_ms: int = _from("offsets.retention.minutes", 10080 * 60_000, unit=60_000)
    offsets_retention_check_interval_ms: int = _from("offsets.retention.check.interval.ms", 600_000)
    offset_metadata_max_bytes: int = _from("offset.metadata.max.bytes", 4096)
    consumer_session_timeout_ms: int = _from("group.consumer.session.timeout.ms", 45_000)
    consumer_heartbeat_interval_ms: int = _from("group.consumer.heartbeat.interval.ms", 5_000)
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_max_size: int = _from("group.consumer.max.size", INT_MAX)
    #: disabled, downgrade, upgrade or bidirectional (wirebroker.group.consumer.migration)
    consumer_migration_policy: str = "bidirectional"
    share_session_timeout_ms: int = _from("group.share.session.timeout.ms", 45_000)
    share_heartbeat_interval_ms: int = _from("group.share.heartbeat.interval.ms", 5_000)
    share_max_size: int = _from("group.share.max.size", 200)
    share_assignment_interval_ms: int = _from("group.share.assignment.interval.ms", 1_000)
    share_initialize_retry_interval_ms: int = _from(
        "group.share.initialize.retry.interval.ms", 30_000
    )
    new_member_join_timeout_ms: int = 300_000  # fixed in Kafka

    @classmethod
    def from_broker_config(cls, cfg: BrokerConfig) -> GroupConfig:
        def get(name: str, default: int) -> int:
            if name in BROKER_CONFIGS:
                value = cfg.get(name)
                return default if value is None else int(str(value))
            raw = cfg.values.get(name)
            return default if raw is None else int(raw.strip())

        values: dict[str, object] = {}
        for f in fields(cls):
            if "key" in f.metadata:
                unit = f.metadata["unit"]
                values[f.name] = get(f.metadata["key"], f.default // unit) * unit
        raw = cfg.values.get("group.consumer.assignors")
        if raw is not None and raw.strip():
            values["consumer_assignors"] = tuple(
                n.strip().rsplit(".", 1)[-1].removesuffix("Assignor").lower()
                for n in raw.split(",")
                if n.strip()
            )
        policy = cfg.values.get("group.consumer.migration.policy")
        if policy is not None and policy.strip():
            value = policy.strip().lower()
            if value not in MIGRATION_POLICIES:
                raise ConfigError(
                    f"group.consumer.migration.policy: {policy!r} not in {MIGRATION_POLICIES}"
                )
            values["consumer_migration_policy"] = value
        check_consumer_bounds(lambda name: get(name, _DEFAULTS[name]))
        return cls(**values)  # type: ignore[arg-type]


_DEFAULTS = {
    "group.consumer.session.timeout.ms": 45_000,
    "group.consumer.min.session.timeout.ms": 45_000,
    "group.consumer.max.session.timeout.ms": 60_000,
    "group.consumer.heartbeat.interval.ms": 5_000,
    "group.consumer.min.heartbeat.interval.ms": 5_000,
    "group.consumer.max.heartbeat.interval.ms": 15_000,
}


def check_consumer_bounds(get: Callable[[str], int]) -> None:
    """Kafka 4.4's GroupCoordinatorConfig checks of the KIP-848 session timeout and heartbeat
    interval against their min/max bounds (ConfigError with Kafka's text, so the broker does
    not start)."""
    for what in ("heartbeat.interval.ms", "session.timeout.ms"):
        value, low, high = (
            f"group.consumer.{what}",
            f"group.consumer.min.{what}",
            f"group.consumer.max.{what}",
        )
        if get(high) < get(low):
            raise ConfigError(f"{high} must be greater than or equal to {low}")
        if get(value) < get(low):
            raise ConfigError(f"{value} must be greater than or equal to {low}")
        if get(value) > get(high):
            raise ConfigError(f"{value} must be less than or equal to {high}")
    heartbeat, session = "group.consumer.heartbeat.interval.ms", "group.consumer.session.timeout.ms"
    if get(heartbeat) >= get(session):
        raise ConfigError(f"{heartbeat} must be less than {session}")
