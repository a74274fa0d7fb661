"""The client quota configs (wirebroker.security.client_quotas): AlterClientQuotas' checks,
codes and texts and DescribeClientQuotas' filters as Kafka 4.4 answers them (the same
exchanges against the oracle: tests/oracle/test_client_quota_answers.py)."""

from __future__ import annotations

import math

import pytest

from protocol.errors import ErrorCode
from wirebroker.security.client_quotas import (
    AlterEntry,
    FilterComponent,
    QuotaStore,
    make_entity,
)

INVALID = ErrorCode.INVALID_REQUEST


def entry(*components: tuple[str, str | None], **ops: float | None) -> AlterEntry:
    return AlterEntry(
        tuple(components),
        tuple((k, 0.0 if v is None else float(v), v is None) for k, v in ops.items()),
    )


def one(store: QuotaStore, e: AlterEntry) -> tuple[ErrorCode, str | None]:
    (result,) = store.alter([e])
    return result.error_code, result.error_message


def test_entities_are_stored_in_canonical_order_with_defaults() -> None:
    store = QuotaStore()
    results = store.alter(
        [
            entry(("user", "alice"), ("client-id", "c1"), producer_byte_rate=4096),
            entry(("user", None), consumer_byte_rate=10),
            entry(("client-id", None), request_percentage=12.5),
        ]
    )
    assert [(r.entity, r.error_code) for r in results] == [
        ((("client-id", "c1"), ("user", "alice")), ErrorCode.NONE),
        ((("user", None),), ErrorCode.NONE),
        ((("client-id", None),), ErrorCode.NONE),
    ]
    assert store.get(make_entity([("user", "alice"), ("client-id", "c1")])) == {
        "producer_byte_rate": 4096.0
    }


@pytest.mark.parametrize(
    ("e", "message"),
    [
        (entry(producer_byte_rate=1), "Invalid empty client quota entity"),
        (entry(("group", "g"), producer_byte_rate=1), "Unhandled client quota entity type: group"),
        (entry(("user", ""), producer_byte_rate=1), "Empty user not supported"),
        (entry(("client-id", ""), producer_byte_rate=1), "Empty client-id not supported"),
        (
            entry(("ip", "nope"), connection_creation_rate=1),
            "nope is not a valid IP or resolvable host.",
        ),
        (
            entry(("ip", "1.2.3.4"), ("user", "x"), connection_creation_rate=1),
            "Invalid quota entity combination, IP entity shouldnot be combined with User or "
            "ClientId",
        ),
        (entry(("user", "b"), foo=1), "Invalid configuration key foo"),
        (
            entry(("user", "b"), connection_creation_rate=1),
            "Invalid configuration key connection_creation_rate",
        ),
        (
            entry(("ip", "1.2.3.4"), producer_byte_rate=1),
            "Invalid configuration key producer_byte_rate",
        ),
        (
            entry(("user", "b"), producer_byte_rate=1.5),
            "producer_byte_rate cannot be a fractional value.",
        ),
        (
            entry(("user", "b"), producer_byte_rate=-1.5),
            "Quota producer_byte_rate must be greater than 0",
        ),
        (
            entry(("user", "b"), producer_byte_rate=0),
            "Quota producer_byte_rate must be greater than 0",
        ),
        (
            entry(("user", "b"), request_percentage=-0.5),
            "Quota request_percentage must be greater than 0",
        ),
        (
            entry(("user", "b"), producer_byte_rate=math.nan),
            "Quota producer_byte_rate must be a finite number",
        ),
        (
            entry(("user", "b"), producer_byte_rate=1e30),
            "Proposed value for producer_byte_rate is too large for a LONG.",
        ),
        (
            AlterEntry((("user", "c"),), (("producer_byte_rate", 1.0, False),) * 2),
            "Ignoring duplicate entity ClientQuotaEntity(entries={user=c})",
        ),
    ],
)
def test_refusals_carry_kafkas_texts(e: AlterEntry, message: str) -> None:
    store = QuotaStore()
    assert one(store, e) == (INVALID, message)
    assert not store


def test_fractions_are_fine_where_kafka_takes_doubles_and_removals_are_not_checked() -> None:
    store = QuotaStore()
    assert (
        one(store, entry(("user", "b"), request_percentage=0.5, controller_mutation_rate=0.5))[0]
        == 0
    )
    assert one(store, entry(("user", "nobody"), producer_byte_rate=None)) == (ErrorCode.NONE, None)
    assert one(store, entry(("user", "b"), request_percentage=None)) == (ErrorCode.NONE, None)
    assert store.get(make_entity([("user", "b")])) == {"controller_mutation_rate": 0.5}
    assert one(store, entry(("user", "b"), controller_mutation_rate=None))[0] == 0
    assert not store  # an entity without values is gone


def test_a_repeated_entity_is_refused_after_the_first_applies_and_answered_once() -> None:
    store = QuotaStore()
    results = store.alter(
        [
            entry(("user", "fa"), ("client-id", "cc"), producer_byte_rate=1),
            entry(("user", "fa"), producer_byte_rate=2),
            entry(("client-id", "cc"), ("user", "fa"), consumer_byte_rate=1),
        ]
    )
    assert [(r.entity, r.error_code, r.error_message) for r in results] == [
        (
            (("client-id", "cc"), ("user", "fa")),
            INVALID,
            "Ignoring duplicate entity ClientQuotaEntity(entries={client-id=cc, user=fa})",
        ),
        ((("user", "fa"),), ErrorCode.NONE, None),
    ]
    assert store.get(make_entity([("user", "fa"), ("client-id", "cc")])) == {
        "producer_byte_rate": 1.0
    }


def test_a_type_named_twice_keeps_its_last_name_and_validate_only_changes_nothing() -> None:
    store = QuotaStore()
    assert store.alter([entry(("user", "a"), ("user", "b"), producer_byte_rate=1)])[0].entity == (
        ("user", "b"),
    )
    store.alter([entry(("user", "vo"), producer_byte_rate=2)], validate_only=True)
    assert store.get(make_entity([("user", "vo")])) == {}


def _store() -> QuotaStore:
    store = QuotaStore()
    store.alter(
        [
            entry(("user", "alice"), producer_byte_rate=1024),
            entry(("user", "alice"), ("client-id", "c1"), producer_byte_rate=4096),
            entry(("client-id", "c1"), consumer_byte_rate=2048),
            entry(("user", None), producer_byte_rate=8192),
            entry(("user", None), ("client-id", None), producer_byte_rate=8192),
            entry(("ip", "1.2.3.4"), connection_creation_rate=5),
        ]
    )
    return store


def names(found: list[tuple[object, dict[str, float]]] | None) -> list[object]:
    assert found is not None
    return [entity for entity, _values in found]


def test_describe_filters_as_kafka_does() -> None:
    store = _store()
    exact = [FilterComponent("user", 0, "alice")]
    assert names(store.describe(exact, False)[2]) == [
        (("client-id", "c1"), ("user", "alice")),
        (("user", "alice"),),
    ]
    assert names(store.describe(exact, True)[2]) == [(("user", "alice"),)]
    assert names(store.describe([FilterComponent("user", 1, None)], False)[2]) == [
        (("client-id", None), ("user", None)),
        (("user", None),),
    ]
    specified = [FilterComponent("user", 0, "alice"), FilterComponent("client-id", 2, None)]
    assert names(store.describe(specified, True)[2]) == [(("client-id", "c1"), ("user", "alice"))]
    assert len(names(store.describe([], False)[2])) == 6
    # SPECIFIED: any name of the type, the default included (Kafka 4.4)
    assert names(store.describe([FilterComponent("user", 2, None)], True)[2]) == [
        (("user", None),),
        (("user", "alice"),),
    ]


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([("foo", 0, "x")], ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type foo"),
        (
            [("user", 0, "a"), ("user", 0, "b")],
            INVALID,
            "Entity type user cannot appear more than once in the filter.",
        ),
        ([("user", 3, None)], INVALID, "Unknown match type 3"),
        (
            [("user", 0, None)],
            INVALID,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            [("user", 1, "x")],
            INVALID,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
        ),
        (
            [("user", 2, "x")],
            INVALID,
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
        ),
        (
            [("ip", 2, None), ("user", 2, None)],
            INVALID,
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component.",
        ),
    ],
)
def test_bad_filters(
    components: list[tuple[str, int, str | None]], code: ErrorCode, message: str
) -> None:
    filters = [FilterComponent(*c) for c in components]
    assert _store().describe(filters, False) == (code, message, None)
