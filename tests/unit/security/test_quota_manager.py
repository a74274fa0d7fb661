"""Client quota enforcement (wirebroker.security.quota_manager) on an injected clock: Kafka's
Rate windows, the throttle time, the precedence of entities, shared rates."""

from __future__ import annotations

from wirebroker.security.client_quotas import AlterEntry, QuotaStore
from wirebroker.security.quota_manager import ClientQuotas, Rate, resolve


def store_with(*entries: tuple[tuple[tuple[str, str | None], ...], str, float]) -> QuotaStore:
    store = QuotaStore()
    results = store.alter(
        [AlterEntry(entity, ((key, value, False),)) for entity, key, value in entries]
    )
    assert all(r.error_code == 0 for r in results)
    return store


def test_rate_counts_at_least_samples_minus_one_windows() -> None:
    rate = Rate(11, 1000)
    rate.record(10_000, 0)
    assert rate.window_size_ms(0) == 10_000  # a first burst is spread over ten windows
    assert rate.rate(0) == 1000.0
    assert rate.window_size_ms(15_000) == 10_000  # obsolete samples were reset at 15 s
    assert rate.rate(15_000) == 0.0


def test_rate_over_full_windows_uses_the_elapsed_time() -> None:
    rate = Rate(3, 1000)
    for t in range(0, 2500, 100):
        rate.record(100, t)
    # samples start at 0, 1000, 2000: 2.5 s elapsed, more than samples - 1 windows
    assert rate.window_size_ms(2500) == 2500
    assert rate.rate(2500) == 2500 * 1000 / 2500


def test_throttle_time_is_kafkas_and_bounded() -> None:
    quotas = ClientQuotas(store_with(((("client-id", "app"),), "producer_byte_rate", 1000)))
    assert quotas.produce.record("ANONYMOUS", "app", 5_000, 0) == 0  # 500 B/s over 10 s
    # 20 000 B over 10 s = 2000 B/s: (2000 - 1000) / 1000 * 10 s
    assert quotas.produce.record("ANONYMOUS", "app", 15_000, 0) == 10_000
    # far above: never more than samples * window
    assert quotas.produce.record("ANONYMOUS", "app", 10**9, 0) == 11_000
    (view,) = quotas.snapshot(0)
    assert (view.kind, view.user, view.client_id, view.throttled) == ("produce", "", "app", 2)
    assert view.throttle_ms_total == 21_000


def test_no_quota_no_measure() -> None:
    quotas = ClientQuotas(store_with(((("client-id", "app"),), "consumer_byte_rate", 1)))
    assert quotas.produce.record("alice", "app", 10**9, 0) == 0
    assert quotas.fetch.record("alice", "other", 10**9, 0) == 0
    assert quotas.snapshot(0) == []


def test_precedence_most_specific_first() -> None:
    store = store_with(
        ((("client-id", None),), "producer_byte_rate", 8),
        ((("client-id", "c"),), "producer_byte_rate", 7),
        ((("user", None),), "producer_byte_rate", 6),
        ((("client-id", None), ("user", None)), "producer_byte_rate", 5),
        ((("client-id", "c"), ("user", None)), "producer_byte_rate", 4),
        ((("user", "u"),), "producer_byte_rate", 3),
        ((("client-id", None), ("user", "u")), "producer_byte_rate", 2),
        ((("client-id", "c"), ("user", "u")), "producer_byte_rate", 1),
    )
    key = "producer_byte_rate"
    assert resolve(store, key, "u", "c") == (("u", "c"), 1)
    assert resolve(store, key, "u", "d") == (("u", "d"), 2)
    assert resolve(store, key, "v", "c") == (("v", "c"), 4)
    assert resolve(store, key, "v", "d") == (("v", "d"), 5)
    only_clients = store_with(((("client-id", None),), key, 8), ((("client-id", "c"),), key, 7))
    assert resolve(only_clients, key, "u", "c") == (("", "c"), 7)
    assert resolve(only_clients, key, "u", "d") == (("", "d"), 8)
    only_user = store_with(((("user", "u"),), key, 3))
    assert resolve(only_user, key, "u", "c") == (("u", ""), 3)
    assert resolve(only_user, key, "v", "c") is None


def test_a_user_quota_is_shared_by_its_clients_and_follows_changes() -> None:
    store = store_with(((("user", "alice"),), "producer_byte_rate", 1000))
    quotas = ClientQuotas(store)
    assert quotas.produce.record("alice", "one", 6_000, 0) == 0
    assert quotas.produce.record("alice", "two", 6_000, 0) == 2_000  # 12 000 over 10 s
    store.alter([AlterEntry((("user", "alice"),), (("producer_byte_rate", 100_000.0, False),))])
    assert quotas.produce.record("alice", "two", 1, 0) == 0  # the new bound applies at once


def test_unrecord_takes_a_throttled_fetch_back() -> None:
    quotas = ClientQuotas(store_with(((("client-id", "c"),), "consumer_byte_rate", 1000)))
    assert quotas.fetch.record("u", "c", 20_000, 0) > 0
    quotas.fetch.unrecord("u", "c", 20_000, 0)
    assert quotas.fetch.record("u", "c", 1_000, 0) == 0


def test_request_percentage_on_handling_time() -> None:
    quotas = ClientQuotas(store_with(((("user", None),), "request_percentage", 10)))
    # 10 % of a thread over 10 s is one second of handling time
    assert quotas.request.record("u", "c", quotas.percent_seconds(0.5), 0) == 0
    assert quotas.request.record("u", "c", quotas.percent_seconds(1.5), 0) == 10_000


def test_idle_sensors_expire_after_an_hour() -> None:
    quotas = ClientQuotas(store_with(((("client-id", None),), "producer_byte_rate", 10**6)))
    quotas.produce.record("u", "a", 1, 0)
    quotas.produce.record("u", "b", 1, 3_600_000)
    assert [v.client_id for v in quotas.snapshot(3_600_000)] == ["b"]


def test_a_fetch_asks_at_most_what_the_quota_allows_in_its_windows() -> None:
    quotas = ClientQuotas(store_with(((("client-id", "c"),), "consumer_byte_rate", 1000)))
    assert quotas.fetch.max_in_window("u", "c") == 10_000  # quota x (11 - 1) x 1 s
    assert quotas.fetch.max_in_window("u", "other") is None
