"""`LogConfig`: the topic configs the storage layer obeys, as typed values.

Built from Kafka topic config names (`retention.ms`, ...) and their effective string values
(topic override, else broker synonym, else default: `BrokerConfig.topic_defaults()` merged
with the topic's overrides) by `LogConfig.from_topic_configs`. Parsing and range checks are
`wirebroker.config.TOPIC_CONFIGS`'s.

Fields and the Kafka config each one comes from (its name with dots for underscores):

=================================  ==================================  =====================
field                              topic config                        default
=================================  ==================================  =====================
segment_bytes                      internal.segment.bytes when set,    1 GiB
                                   else segment.bytes
segment_ms                         segment.ms                          7 days
segment_jitter_ms                  segment.jitter.ms                   0
segment_index_bytes                segment.index.bytes                 10 MiB
index_interval_bytes               index.interval.bytes                4096
retention_ms                       retention.ms (-1: forever)          7 days
retention_bytes                    retention.bytes (-1: unbounded)     -1
flush_messages                     flush.messages                      LONG_MAX
flush_ms                           flush.ms                            LONG_MAX
max_message_bytes                  max.message.bytes                   1048588
message_timestamp_type             message.timestamp.type              CreateTime
message_timestamp_before_max_ms    message.timestamp.before.max.ms     LONG_MAX
message_timestamp_after_max_ms     message.timestamp.after.max.ms      1 hour
cleanup_policy                     cleanup.policy                      ("delete",)
min_cleanable_dirty_ratio          min.cleanable.dirty.ratio           0.5
min_compaction_lag_ms              min.compaction.lag.ms               0
max_compaction_lag_ms              max.compaction.lag.ms               LONG_MAX
delete_retention_ms                delete.retention.ms                 1 day
producer_id_expiration_ms          (broker) producer.id.expiration.ms  1 day
=================================  ==================================  =====================

`segment.bytes` is at least 1 MiB, as in Kafka 4; tests that roll small segments set Kafka's
internal topic config `internal.segment.bytes` (any int, not validated), which takes its place
(Kafka's LogConfig.segmentSize).

`producer_id_expiration_ms` is a broker-level Kafka setting, not a topic config; it is here
so a partition log can expire idle idempotent producers without another argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from wirebroker.config import LONG_MAX, TOPIC_CONFIGS

__all__ = ["DECODE_CAP", "LONG_MAX", "LogConfig"]

#: decompressed bytes one stored or produced batch may decode to (reads, checks, cleaning)
DECODE_CAP = 64 * 1024 * 1024


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000
    retention_bytes: int = -1
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 3600000
    cleanup_policy: tuple[str, ...] = ("delete",)
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    delete_retention_ms: int = 86400000
    producer_id_expiration_ms: int = 86400000

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @classmethod
    def from_topic_configs(cls, values: Mapping[str, str | None]) -> LogConfig:
        """Typed config from Kafka topic config names -> effective string values.

        Missing keys and None values keep the defaults above. Raises
        `wirebroker.config.ConfigError` on a value that does not parse or is out of range.
        """
        kwargs: dict[str, Any] = {}
        for field in fields(cls):
            key = field.name.replace("_", ".")  # segment_bytes: segment.bytes
            if key not in TOPIC_CONFIGS:
                continue
            raw = values.get(key)
            if raw is None:
                continue
            parsed = TOPIC_CONFIGS[key].parse(raw)
            if field.name == "cleanup_policy":
                assert isinstance(parsed, list)
                kwargs[field.name] = tuple(parsed)
            else:
                kwargs[field.name] = parsed
        internal = values.get("internal.segment.bytes")
        if internal is not None:
            kwargs["segment_bytes"] = TOPIC_CONFIGS["internal.segment.bytes"].parse(internal)
        return cls(**kwargs)
