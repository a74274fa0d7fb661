"""BrokerConfig's typed accessors: get_int / get_bool / get_str."""

from __future__ import annotations

import pytest

from wirebroker.config import BrokerConfig, ConfigError


def test_get_int_default_and_explicit() -> None:
    assert BrokerConfig().get_int("num.partitions") == 1
    assert BrokerConfig({"num.partitions": " 7 "}).get_int("num.partitions") == 7


def test_get_bool() -> None:
    assert BrokerConfig().get_bool("delete.topic.enable") is True
    assert BrokerConfig({"delete.topic.enable": "FALSE"}).get_bool("delete.topic.enable") is False


def test_get_str() -> None:
    assert BrokerConfig({"listeners": "PLAINTEXT://:1"}).get_str("listeners") == "PLAINTEXT://:1"
    assert BrokerConfig().get_str("no.such.key") == ""


def test_wrong_type_is_refused() -> None:
    with pytest.raises(ConfigError):
        BrokerConfig().get_int("delete.topic.enable")
    with pytest.raises(ConfigError):
        BrokerConfig().get_bool("num.partitions")
