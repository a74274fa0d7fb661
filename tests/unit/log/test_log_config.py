"""LogConfig from Kafka topic config strings."""

from __future__ import annotations

import pytest

from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.log import LogConfig


def test_defaults_match_kafka() -> None:
    cfg = LogConfig.from_topic_configs(BrokerConfig().topic_defaults())
    assert cfg == LogConfig()
    assert cfg.segment_bytes == 1 << 30 and cfg.retention_ms == 7 * 24 * 3600 * 1000
    assert cfg.delete and not cfg.compact and not cfg.log_append_time


def test_overrides_and_broker_synonyms() -> None:
    broker = BrokerConfig({"log.retention.hours": "1", "log.segment.bytes": "2000000"})
    values = broker.topic_defaults()
    values.update(
        {
            "cleanup.policy": "compact,delete",
            "message.timestamp.type": "LogAppendTime",
            "retention.bytes": "5000",
            "max.message.bytes": None,
        }
    )
    cfg = LogConfig.from_topic_configs(values)
    assert cfg.retention_ms == 3_600_000 and cfg.segment_bytes == 2_000_000
    assert cfg.cleanup_policy == ("compact", "delete") and cfg.compact and cfg.delete
    assert cfg.log_append_time and cfg.retention_bytes == 5000
    assert cfg.max_message_bytes == LogConfig().max_message_bytes


def test_segment_bytes_is_at_least_1_mib_and_internal_segment_bytes_replaces_it() -> None:
    """Kafka 4: segment.bytes / log.segment.bytes >= 1 MiB; the internal topic config
    internal.segment.bytes (for tests, not validated) is the segment size when set."""
    with pytest.raises(ConfigError):
        BrokerConfig({"log.segment.bytes": "1048575"})
    with pytest.raises(ConfigError):
        LogConfig.from_topic_configs({"segment.bytes": "1048575"})
    assert LogConfig.from_topic_configs({"segment.bytes": "1048576"}).segment_bytes == 1 << 20
    small = {"segment.bytes": "1048576", "internal.segment.bytes": "1000"}
    assert LogConfig.from_topic_configs(small).segment_bytes == 1000
    assert LogConfig.from_topic_configs({"internal.segment.bytes": "-5"}).segment_bytes == -5
    assert LogConfig.from_topic_configs({"internal.segment.bytes": None}) == LogConfig()
    with pytest.raises(ConfigError):
        LogConfig.from_topic_configs({"internal.segment.bytes": "ten"})


def test_bad_values_raise() -> None:
    with pytest.raises(ConfigError):
        LogConfig.from_topic_configs({"segment.bytes": "ten"})
    with pytest.raises(ConfigError):
        LogConfig.from_topic_configs({"message.timestamp.type": "Sometimes"})
