"""Listener parsing, the security protocol map, advertised addresses per listener and the
inter-broker listener (wirebroker/listeners.py): pure, no sockets."""

from __future__ import annotations

import pytest

from wirebroker.config import BrokerConfig, ConfigError
from wirebroker.listeners import (
    ListenerSpec,
    advertised_endpoints,
    broker_listeners,
    inter_broker_listener,
    protocol_map,
)


def _config(**values: str) -> BrokerConfig:
    return BrokerConfig({k.replace("_", "."): v for k, v in values.items()})


def test_kafka_default_map_names_each_protocol_after_itself() -> None:
    config = _config(
        listeners="PLAINTEXT://:9092,SSL://:9093,SASL_PLAINTEXT://:9094,SASL_SSL://h:9095"
    )
    assert broker_listeners(config) == [
        ListenerSpec("PLAINTEXT", "PLAINTEXT", "", 9092),
        ListenerSpec("SSL", "SSL", "", 9093),
        ListenerSpec("SASL_PLAINTEXT", "SASL_PLAINTEXT", "", 9094),
        ListenerSpec("SASL_SSL", "SASL_SSL", "h", 9095),
    ]


def test_custom_names_take_their_protocol_from_the_map() -> None:
    config = BrokerConfig(
        {
            "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://[::1]:0",
            "listener.security.protocol.map": "INTERNAL:SASL_SSL,EXTERNAL:ssl",
        }
    )
    specs = broker_listeners(config)
    assert [(s.name, s.protocol, s.host) for s in specs] == [
        ("INTERNAL", "SASL_SSL", "127.0.0.1"),
        ("EXTERNAL", "SSL", "::1"),
    ]
    assert specs[0].uses_tls and specs[0].uses_sasl
    assert specs[1].uses_tls and not specs[1].uses_sasl


def test_a_name_without_protocol_is_refused() -> None:
    config = BrokerConfig({"listeners": "CLIENT://:9092"})
    with pytest.raises(ConfigError, match="no security protocol defined for listener CLIENT"):
        broker_listeners(config)


def test_map_refuses_unknown_protocols_and_bad_entries() -> None:
    with pytest.raises(ConfigError, match="unknown security protocol"):
        protocol_map(BrokerConfig({"listener.security.protocol.map": "A:TLS"}))
    with pytest.raises(ConfigError, match="NAME:PROTOCOL"):
        protocol_map(BrokerConfig({"listener.security.protocol.map": "A"}))


def test_duplicate_names_and_ports_are_refused_but_port_zero() -> None:
    with pytest.raises(ConfigError, match="different name"):
        broker_listeners(BrokerConfig({"listeners": "PLAINTEXT://:1,PLAINTEXT://:2"}))
    with pytest.raises(ConfigError, match="different port"):
        broker_listeners(BrokerConfig({"listeners": "PLAINTEXT://:1,SSL://:1"}))
    assert len(broker_listeners(BrokerConfig({"listeners": "PLAINTEXT://:0,SSL://:0"}))) == 2


def test_controller_listeners_are_skipped() -> None:
    config = BrokerConfig(
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "controller.listener.names": "CONTROLLER",
        }
    )
    assert [s.name for s in broker_listeners(config)] == ["PLAINTEXT"]


def test_advertised_per_listener_with_fallbacks() -> None:
    config = BrokerConfig(
        {
            "listeners": "PLAINTEXT://0.0.0.0:0,SSL://127.0.0.1:0",
            "advertised.listeners": "SSL://broker.example:0",
        }
    )
    specs = broker_listeners(config)
    bound = {"PLAINTEXT": ("0.0.0.0", 4000), "SSL": ("127.0.0.1", 4001)}
    assert advertised_endpoints(config, specs, bound) == {
        "PLAINTEXT": ("127.0.0.1", 4000),  # a wildcard: loopback
        "SSL": ("broker.example", 4001),  # port 0: the bound one
    }


def test_advertised_listener_must_be_a_listener() -> None:
    config = BrokerConfig({"listeners": "PLAINTEXT://:0", "advertised.listeners": "SSL://x:1"})
    with pytest.raises(ConfigError, match="SSL is not a listener"):
        advertised_endpoints(config, broker_listeners(config), {"PLAINTEXT": ("", 1)})


def test_inter_broker_listener_rules() -> None:
    two = "PLAINTEXT://:1,SASL_SSL://:2"
    config = BrokerConfig({"listeners": two})
    assert inter_broker_listener(config, broker_listeners(config)).name == "PLAINTEXT"
    config = BrokerConfig({"listeners": two, "inter.broker.listener.name": "SASL_SSL"})
    assert inter_broker_listener(config, broker_listeners(config)).protocol == "SASL_SSL"
    config = BrokerConfig({"listeners": two, "security.inter.broker.protocol": "SASL_SSL"})
    assert inter_broker_listener(config, broker_listeners(config)).name == "SASL_SSL"
    config = BrokerConfig(
        {
            "listeners": two,
            "inter.broker.listener.name": "SASL_SSL",
            "security.inter.broker.protocol": "SASL_SSL",
        }
    )
    with pytest.raises(ConfigError, match="Only one of"):
        inter_broker_listener(config, broker_listeners(config))
    config = BrokerConfig({"listeners": "SSL://:1,SASL_SSL://:2"})
    with pytest.raises(ConfigError, match=r"valid options .* are SSL,SASL_SSL"):
        inter_broker_listener(config, broker_listeners(config))
    one = BrokerConfig({"listeners": "SSL://:1"})  # wirebroker: the only listener
    assert inter_broker_listener(one, broker_listeners(one)).name == "SSL"
