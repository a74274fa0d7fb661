"""DescribeClientQuotas v1 and AlterClientQuotas v1: the same exchanges and the same
assertions against Apache Kafka 4.4 (the oracle), a wirebroker (over the wire) and
wirebroker's quota store driven directly (wirebroker/security/client_quotas.py): entity
checks, keys, values, duplicates, filters and their refusals, Kafka's codes and texts."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Protocol

import pytest

from compat.scenarios.wire import Wire
from protocol.api import ApiKey
from wirebroker.security.client_quotas import AlterEntry, FilterComponent, QuotaStore

Entity = tuple[tuple[str, str | None], ...]
Op = tuple[str, float, bool]
Answer = dict[Entity, tuple[int, str | None]]
Found = tuple[int, str | None, dict[Entity, dict[str, float]] | None]


def key(entity: Sequence[tuple[str, str | None]]) -> Entity:
    return tuple(sorted(entity, key=lambda p: (p[0], p[1] or "")))


class QuotaApi(Protocol):
    def alter(self, entries: Sequence[tuple[Entity, Sequence[Op]]]) -> Answer: ...

    def describe(
        self, components: Sequence[tuple[str, int, str | None]], strict: bool
    ) -> Found: ...


class WireQuotas:
    def __init__(self, wire: Wire) -> None:
        self.wire = wire

    def alter(self, entries: Sequence[tuple[Entity, Sequence[Op]]]) -> Answer:
        body = {
            "entries": [
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                    "ops": [{"key": k, "value": v, "remove": r} for k, v, r in ops],
                }
                for entity, ops in entries
            ],
            "validate_only": False,
        }
        answer = self.wire.call(ApiKey.ALTER_CLIENT_QUOTAS, 1, body)
        out = {
            key([(e.entity_type, e.entity_name) for e in r.entity]): (r.error_code, r.error_message)
            for r in answer.entries
        }
        self._settle([e for e, (code, _m) in out.items() if code == 0], entries)
        return out

    def _settle(
        self, changed: list[Entity], entries: Sequence[tuple[Entity, Sequence[Op]]]
    ) -> None:
        """Kafka's controller answers and its broker's image learns the change a moment later:
        wait (up to 5 s) until every changed entity shows its last op's value."""
        deadline = time.monotonic() + 5
        wanted = {key(e): ops[-1] for e, ops in entries if key(e) in changed and ops}
        while wanted and time.monotonic() < deadline:
            found = self.describe([], False)[2] or {}
            wanted = {
                e: (k, v, r)
                for e, (k, v, r) in wanted.items()
                if (found.get(e, {}).get(k) != v) != r
            }

    def describe(self, components: Sequence[tuple[str, int, str | None]], strict: bool) -> Found:
        body = {
            "components": [
                {"entity_type": t, "match_type": m, "match": n} for t, m, n in components
            ],
            "strict": strict,
        }
        answer = self.wire.call(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, body)
        if answer.entries is None:
            return answer.error_code, answer.error_message, None
        return (
            answer.error_code,
            answer.error_message,
            {
                key([(e.entity_type, e.entity_name) for e in entry.entity]): {
                    v.key: v.value for v in entry["values"]
                }
                for entry in answer.entries
            },
        )


class CoreQuotas:
    def __init__(self) -> None:
        self.store = QuotaStore()

    def alter(self, entries: Sequence[tuple[Entity, Sequence[Op]]]) -> Answer:
        results = self.store.alter([AlterEntry(e, tuple(ops)) for e, ops in entries])
        return {key(r.entity): (int(r.error_code), r.error_message) for r in results}

    def describe(self, components: Sequence[tuple[str, int, str | None]], strict: bool) -> Found:
        code, message, found = self.store.describe(
            [FilterComponent(*c) for c in components], strict
        )
        if found is None:
            return int(code), message, None
        return int(code), "" if message is None else message, {key(e): v for e, v in found}


@pytest.fixture(params=["apache-kafka", "wirebroker", "core"])
def quota_api(request: pytest.FixtureRequest) -> Iterator[QuotaApi]:
    if request.param == "core":
        yield CoreQuotas()
        return
    fixture = "apache_kafka" if request.param == "apache-kafka" else "wirebroker_module"
    with Wire(str(request.getfixturevalue(fixture))) as wire:
        yield WireQuotas(wire)


@pytest.fixture
def name() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


def set_(k: str, v: float) -> Op:
    return (k, v, False)


def test_alter_and_describe(quota_api: QuotaApi, name: str) -> None:
    user, both, client = (
        (("user", name),),
        (("client-id", name), ("user", name)),
        (("client-id", name),),
    )
    assert quota_api.alter(
        [
            (user, [set_("producer_byte_rate", 1024)]),
            (both, [set_("consumer_byte_rate", 2048), set_("request_percentage", 0.5)]),
            (client, [set_("controller_mutation_rate", 1.5)]),
        ]
    ) == {user: (0, None), both: (0, None), client: (0, None)}
    assert quota_api.describe([("user", 0, name)], False) == (
        0,
        "",
        {
            user: {"producer_byte_rate": 1024.0},
            both: {"consumer_byte_rate": 2048.0, "request_percentage": 0.5},
        },
    )
    assert quota_api.describe([("user", 0, name)], True) == (
        0,
        "",
        {user: {"producer_byte_rate": 1024.0}},
    )
    assert quota_api.describe([("user", 0, name), ("client-id", 2, None)], True) == (
        0,
        "",
        {both: {"consumer_byte_rate": 2048.0, "request_percentage": 0.5}},
    )
    assert quota_api.describe([("client-id", 0, name), ("user", 1, None)], False) == (0, "", {})
    # SPECIFIED matches the default too (what kafka-configs --describe --entity-type clients
    # without a name asks)
    defaulted = (("client-id", None), ("user", name))
    assert quota_api.alter([(defaulted, [set_("producer_byte_rate", 7)])]) == {defaulted: (0, None)}
    assert quota_api.describe([("user", 0, name), ("client-id", 2, None)], False) == (
        0,
        "",
        {
            both: {"consumer_byte_rate": 2048.0, "request_percentage": 0.5},
            defaulted: {"producer_byte_rate": 7.0},
        },
    )
    assert quota_api.alter(
        [(both, [("request_percentage", 0.0, True), ("producer_byte_rate", 0.0, True)])]
    ) == {both: (0, None)}
    assert quota_api.describe([("client-id", 0, name)], True) == (
        0,
        "",
        {client: {"controller_mutation_rate": 1.5}},
    )
    assert quota_api.describe([("client-id", 0, name), ("user", 0, name)], True) == (
        0,
        "",
        {both: {"consumer_byte_rate": 2048.0}},
    )


def test_alteration_refusals(quota_api: QuotaApi, name: str) -> None:
    u = [(("user", f"{name}-{i}"),) for i in range(10)]
    answer = quota_api.alter(
        [
            (u[0], [set_("producer_byte_rate", 1.5)]),
            (u[1], [set_("producer_byte_rate", -1.5)]),
            (u[2], [set_("producer_byte_rate", math.nan)]),
            (u[3], [set_("producer_byte_rate", 1e30)]),
            (u[4], [set_("foo", 1)]),
            (u[5], [set_("connection_creation_rate", 1)]),
            (u[6], [set_("producer_byte_rate", 1), set_("producer_byte_rate", 2)]),
            (u[7], [set_("producer_byte_rate", 1)]),
            (u[7], [set_("consumer_byte_rate", 1)]),
            ((("user", ""),), [set_("producer_byte_rate", 1)]),
            ((("client-id", ""), ("user", name)), [set_("foo", 1)]),
            ((("group", name),), [set_("producer_byte_rate", 1)]),
            ((("ip", "1.2.3.4"), ("user", name)), [set_("connection_creation_rate", 1)]),
            ((("ip", name),), [set_("connection_creation_rate", 1)]),
            ((), [set_("producer_byte_rate", 1)]),
        ]
    )
    invalid = 42
    assert answer == {
        u[0]: (invalid, "producer_byte_rate cannot be a fractional value."),
        u[1]: (invalid, "Quota producer_byte_rate must be greater than 0"),
        u[2]: (invalid, "Quota producer_byte_rate must be a finite number"),
        u[3]: (invalid, "Proposed value for producer_byte_rate is too large for a LONG."),
        u[4]: (invalid, "Invalid configuration key foo"),
        u[5]: (invalid, "Invalid configuration key connection_creation_rate"),
        u[6]: (invalid, f"Ignoring duplicate entity ClientQuotaEntity(entries={{user={name}-6}})"),
        u[7]: (invalid, f"Ignoring duplicate entity ClientQuotaEntity(entries={{user={name}-7}})"),
        (("user", ""),): (invalid, "Empty user not supported"),
        (("client-id", ""), ("user", name)): (invalid, "Empty client-id not supported"),
        (("group", name),): (invalid, "Unhandled client quota entity type: group"),
        (("ip", "1.2.3.4"), ("user", name)): (
            invalid,
            "Invalid quota entity combination, IP entity shouldnot be combined with User or "
            "ClientId",
        ),
        (("ip", name),): (invalid, f"{name} is not a valid IP or resolvable host."),
        (): (invalid, "Invalid empty client quota entity"),
    }
    # the first alteration of a repeated entity applied, nothing else did
    found = quota_api.describe([("user", 2, None)], True)[2] or {}
    assert {e: v for e, v in found.items() if e in u} == {u[7]: {"producer_byte_rate": 1.0}}


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([("foo", 0, "x")], 35, "Unsupported entity type foo"),
        (
            [("user", 0, "a"), ("user", 0, "b")],
            42,
            "Entity type user cannot appear more than once in the filter.",
        ),
        ([("user", 3, None)], 42, "Unknown match type 3"),
        (
            [("user", 0, None)],
            42,
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
        ),
        (
            [("user", 1, "x")],
            42,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
        ),
        (
            [("user", 2, "x")],
            42,
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
        ),
        (
            [("ip", 2, None), ("client-id", 2, None)],
            42,
            "Invalid entity filter component combination. IP filter component should not be used "
            "with user or clientId filter component.",
        ),
    ],
)
def test_describe_refusals(
    quota_api: QuotaApi, components: list[tuple[str, int, str | None]], code: int, message: str
) -> None:
    assert quota_api.describe(components, False) == (code, message, None)
