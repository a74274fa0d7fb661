"""Connection creation rates (KIP-612; wirebroker.security.connection_rates) on an injected
clock: the ip quota (specific, else default; canonical addresses), Kafka's unrecorded
throttled connection, the broker-wide and listener limits (the inter-broker listener exempt
from the broker-wide one), the counters."""

from __future__ import annotations

from wirebroker.security.client_quotas import AlterEntry, QuotaStore
from wirebroker.security.connection_rates import ConnectionRates, canonical_ip

T0 = 1_700_000_000_000


def store_with(*entries: tuple[str | None, float]) -> QuotaStore:
    store = QuotaStore()
    results = store.alter(
        [
            AlterEntry(((("ip", ip)),), (("connection_creation_rate", v, False),))
            for ip, v in entries
        ]
    )
    assert all(r.error_code == 0 for r in results), results
    return store


def test_canonical_addresses() -> None:
    assert canonical_ip("::ffff:10.0.0.7") == "10.0.0.7"
    assert canonical_ip("0:0::1") == "::1"
    assert canonical_ip("not-an-ip") == "not-an-ip"


def test_the_ip_quota_and_the_default() -> None:
    rates = ConnectionRates(store_with(("10.0.0.7", 2), (None, 100)))
    assert rates.ip_quota("10.0.0.7") == 2 and rates.ip_quota("10.0.0.8") == 100
    assert ConnectionRates(store_with(("10.0.0.7", 2))).ip_quota("10.0.0.8") is None
    assert ConnectionRates().ip_throttle_ms("10.0.0.7", T0) == 0


def test_over_the_ip_rate_a_connection_is_refused_until_the_rate_is_back() -> None:
    rates = ConnectionRates(store_with(("10.0.0.7", 2)))
    for i in range(20):  # 2 a second over ten windows
        assert rates.ip_throttle_ms("10.0.0.7", T0 + i * 50, "PLAINTEXT") == 0
    # 21 over 10.0 s: (2.1 - 2) / 2 x 10 s, and the 21st is not counted
    assert rates.ip_throttle_ms("::ffff:10.0.0.7", T0 + 1000, "PLAINTEXT") == 500
    # later ones meet the same 20: all end when 21 / (9 s + elapsed) = 2, at 1.5 s
    assert rates.ip_throttle_ms("10.0.0.7", T0 + 1250, "PLAINTEXT") == 250
    assert rates.ip_throttle_ms("10.0.0.7", T0 + 1500, "PLAINTEXT") == 0
    assert rates.ip_throttle_ms("10.0.0.8", T0 + 1500, "PLAINTEXT") == 0  # no quota
    assert list(rates.rows()) == [{"listener": "PLAINTEXT", "reason": "ip", "throttled": 2}]


def test_the_broker_and_listener_limits_delay() -> None:
    rates = ConnectionRates(
        broker_rate=2, listener_rates={"INTERNAL": 1}, protected="INTERNAL", samples=2
    )
    assert [rates.accept_delay_ms("PLAINTEXT", T0) for _ in range(2)] == [0, 0]
    assert rates.accept_delay_ms("PLAINTEXT", T0) == 500  # 3 in 1 s: (3 - 2) / 2 x 1 s
    # the inter-broker listener: only its own limit (1 a second)
    assert rates.accept_delay_ms("INTERNAL", T0) == 0
    assert rates.accept_delay_ms("INTERNAL", T0) == 1000
    assert dict(((r["listener"], r["reason"]), r["throttled"]) for r in rates.rows()) == {
        ("PLAINTEXT", "broker"): 1,
        ("INTERNAL", "listener"): 1,
    }


def test_changed_quotas_apply_to_the_next_connection() -> None:
    store = store_with(("10.0.0.7", 1))
    rates = ConnectionRates(store)
    assert rates.ip_quota("10.0.0.7") == 1
    store.alter([AlterEntry((("ip", "10.0.0.7"),), (("connection_creation_rate", 0, True),))])
    assert rates.ip_quota("10.0.0.7") is None


def test_a_limit_of_zero_waits_the_longest_and_never_divides_by_zero() -> None:
    rates = ConnectionRates(broker_rate=0, samples=3)
    assert rates.accept_delay_ms("PLAINTEXT", T0) == 3000
