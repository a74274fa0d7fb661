"""Controller mutation quotas (KIP-599; wirebroker.security.quota_manager's TokenBucket,
MutationPermit, MutationQuotas) on an injected clock: the bucket's burst and refill, strict
and permissive permits as Kafka 4.4 answers them (the same sequences run against Kafka in
tests/oracle/test_controller_mutation_quota.py), the entity precedence, the views."""

from __future__ import annotations

from wirebroker.security.client_quotas import AlterEntry, QuotaStore
from wirebroker.security.quota_manager import ClientQuotas, TokenBucket

T0 = 1_700_000_000_000  # a wall clock's milliseconds


def quotas_with(*entries: tuple[tuple[tuple[str, str | None], ...], float]) -> ClientQuotas:
    store = QuotaStore()
    results = store.alter(
        [
            AlterEntry(entity, (("controller_mutation_rate", rate, False),))
            for entity, rate in entries
        ]
    )
    assert all(r.error_code == 0 for r in results)
    return ClientQuotas(store)


def test_bucket_starts_full_refills_at_the_quota_and_caps_at_the_burst() -> None:
    bucket = TokenBucket(11, 1000)
    assert bucket.burst(2.0) == 22.0
    assert bucket.level(2.0, T0) == 22.0
    assert bucket.take(2.0, 30, T0) == -8.0  # may go negative
    assert bucket.level(2.0, T0 + 1500) == -5.0  # 1.5 s at 2 a second
    assert bucket.level(2.0, T0 + 60_000) == 22.0  # never above the burst
    assert TokenBucket(5, 2000).burst(1.0) == 10.0


def test_strict_takes_into_the_negative_then_refuses_with_the_time_to_zero() -> None:
    quotas = quotas_with(((("client-id", "app"),), 1.0))
    permit = quotas.mutation.permit("ANONYMOUS", "app", strict=True)
    assert permit.record(12, T0)  # 11 tokens: taken, -1 left
    assert permit.throttle_ms(T0) == 0  # that request is not throttled for it
    assert not permit.record(1, T0 + 90)  # -0.91: refused, nothing taken
    assert permit.throttle_ms(T0 + 90) == 910
    assert permit.throttle_ms(T0 + 500) == 500  # less the time since
    later = quotas.mutation.permit("ANONYMOUS", "app", strict=True)
    assert not later.record(1, T0 + 990)
    assert later.throttle_ms(T0 + 990) == 10
    assert later.record(4, T0 + 1100)  # 0.1 is not below zero: all 4 taken
    assert not later.record(1, T0 + 1100)
    assert later.throttle_ms(T0 + 1100) == 3900


def test_permissive_accepts_and_throttles_by_the_debt() -> None:
    quotas = quotas_with(((("user", "alice"),), 2.0))
    permit = quotas.mutation.permit("alice", "any", strict=False)
    assert permit.record(22, T0) and permit.throttle_ms(T0) == 0  # exactly the burst: 0 left
    assert permit.record(3, T0) and permit.throttle_ms(T0) == 1500
    nxt = quotas.mutation.permit("alice", "other-client", strict=False)  # shared by the user
    assert nxt.record(1, T0 + 1000) and nxt.throttle_ms(T0 + 1000) == 1000  # -3 + 2 - 1


def test_without_a_quota_nothing_is_taken() -> None:
    quotas = quotas_with(((("client-id", "app"),), 1.0))
    permit = quotas.mutation.permit("ANONYMOUS", "other", strict=True)
    assert permit.sensor is None
    assert all(permit.record(1000, T0) for _ in range(3)) and permit.throttle_ms(T0) == 0
    assert ClientQuotas().mutation.permit("u", "c", strict=True).sensor is None


def test_precedence_and_a_changed_quota() -> None:
    quotas = quotas_with(
        ((("client-id", None),), 100.0),
        ((("client-id", "app"), ("user", "alice")), 1.0),
    )
    assert quotas.mutation.permit("alice", "app", strict=True).sensor.bound == 1.0  # type: ignore[union-attr]
    # each client id has its own bucket under the default client-id quota
    a = quotas.mutation.permit("bob", "a", strict=True)
    b = quotas.mutation.permit("bob", "b", strict=True)
    assert a.sensor is not b.sensor and a.sensor is not None and a.sensor.bound == 100.0
    quotas.store.alter(
        [AlterEntry((("client-id", None),), (("controller_mutation_rate", 0.5, False),))]
    )
    permit = quotas.mutation.permit("bob", "a", strict=True)
    assert permit.sensor is a.sensor and permit.sensor.bound == 0.5
    assert permit.record(6, T0) and not permit.record(1, T0)  # burst 5.5 now
    assert permit.throttle_ms(T0) == 1000


def test_views_show_each_bucket() -> None:
    quotas = quotas_with(((("client-id", "app"),), 1.0))
    permit = quotas.mutation.permit("ANONYMOUS", "app", strict=True)
    permit.record(12, T0)
    permit.record(1, T0)
    (view,) = [v for v in quotas.snapshot(T0) if v.kind == "controller_mutation"]
    assert (view.user, view.client_id, view.bound, view.total) == ("", "app", 1.0, 12)
    assert (view.throttled, view.last_throttle_ms) == (1, 1000)
