"""Client quota configs: DescribeClientQuotas and AlterClientQuotas as Apache Kafka 4.4 answers
them (asked of the oracle: tests/oracle/test_client_quota_answers.py). Pure: no trio, no I/O.

    store = QuotaStore()
    results, changes = store.plan_alter(entries)   # per entity: (entity, code, message)
    store.apply(changes)                           # a replicated store writes, then applies
    store.describe(components, strict)             # (code, message, [(entity, values)])

An entity is a tuple of (type, name) pairs, type one of `user`, `client-id` (alone or both)
or `ip` (alone); a name of None is the default entity (`<default>` in ZooKeeper). Canonical
order: client-id, user, ip (the order Kafka answers them in). Values are floats, keyed by
`producer_byte_rate`, `consumer_byte_rate`, `request_percentage`, `controller_mutation_rate`
(user / client-id entities) or `connection_creation_rate` (ip entities).

Kafka's rules for an alteration, per entry in request order (its result replaces an earlier
result for the same entity, so the answer has one result per entity):
- the entity: no components INVALID_REQUEST "Invalid empty client quota entity"; an unknown
  type "Unhandled client quota entity type: <t>"; an empty user / client-id name "Empty user
  not supported" / "Empty client-id not supported"; an ip that is not an address "<ip> is not
  a valid IP or resolvable host." (Kafka also resolves host names: not here); ip with user or
  client-id "Invalid quota entity combination, IP entity shouldnot be combined with User or
  ClientId" (Kafka's text, typo included); a type named twice: the last name wins;
- an entity already altered in this request, or a key named twice in one entry: "Ignoring
  duplicate entity ClientQuotaEntity(entries={client-id=c, user=u})" (nothing of it applied);
- per op in order: a key the entity type does not take "Invalid configuration key <k>"; a
  value that is NaN or infinite "Quota <k> must be a finite number"; every value must be > 0:
  "Quota <k> must be greater than 0"; byte rates and connection_creation_rate must be whole:
  "<k> cannot be a fractional value.", and fit a long: "Proposed value for <k> is too large
  for a LONG."; removals are not checked (removing what is not set succeeds).
- validate_only: the same answers, nothing changed.

Describe: each filter component names a type (user, client-id, ip; else UNSUPPORTED_VERSION
"Unsupported entity type <t>"), at most once ("Entity type <t> cannot appear more than once in
the filter."), and a match type: 0 EXACT (name required: "Request specified MATCH_TYPE_EXACT,
but set match string to null."), 1 DEFAULT and 2 SPECIFIED (no name: "Request specified
MATCH_TYPE_DEFAULT, but also specified a match string."), else "Unknown match type <n>"; ip
with user or client-id: "Invalid entity filter component combination. IP filter component
should not be used with user or clientId filter component.". An entity matches when it has
every component's type with a matching name (EXACT: that name; DEFAULT: the default;
SPECIFIED: any name, the default included, as Kafka 4.4 answers) and, when `strict`, no other
type. Entities without
values are not listed. Errors are INVALID_REQUEST unless said.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    import trio

__all__ = [
    "BYTE_RATE_KEYS",
    "CLIENT_ID",
    "CONSUMER_BYTE_RATE",
    "IP",
    "IP_KEYS",
    "PRODUCER_BYTE_RATE",
    "QUOTA_KEYS",
    "REQUEST_PERCENTAGE",
    "USER",
    "AlterEntry",
    "Entity",
    "EntityResult",
    "FilterComponent",
    "LocalQuotaConfigs",
    "QuotaChange",
    "QuotaConfigs",
    "QuotaStore",
    "QuotaStoreError",
    "entity_name",
    "make_entity",
]

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
_ORDER = {CLIENT_ID: 0, USER: 1, IP: 2}

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

#: The keys a user / client-id entity takes, and an ip entity's.
QUOTA_KEYS = frozenset(
    {PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE}
)
IP_KEYS = frozenset({CONNECTION_CREATION_RATE})
#: Keys whose values are whole numbers (longs in Kafka).
BYTE_RATE_KEYS = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, CONNECTION_CREATION_RATE})
_LONG_MAX = 2**63 - 1

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2

#: ((type, name or None for the default), ...) in canonical order
Entity = tuple[tuple[str, str | None], ...]


def make_entity(pairs: Iterable[tuple[str, str | None]]) -> Entity:
    """The entity of (type, name) pairs: a type named twice keeps its last name (Kafka reads
    them into a map); canonical order."""
    by_type = dict(pairs)
    return tuple(sorted(by_type.items(), key=lambda p: (_ORDER.get(p[0], 3), p[0])))


def entity_name(entity: Entity, kind: str) -> str | None:
    """The name of `kind` in `entity` (None: the default, or absent)."""
    return dict(entity).get(kind)


def _describe_entity(entity: Entity) -> str:
    inner = ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


@dataclass(frozen=True)
class AlterEntry:
    """One entry of AlterClientQuotas: the entity's components as sent and its ops
    ((key, value, remove), ...)."""

    components: tuple[tuple[str, str | None], ...]
    ops: tuple[tuple[str, float, bool], ...]


@dataclass(frozen=True)
class EntityResult:
    entity: Entity
    error_code: ErrorCode
    error_message: str | None


@dataclass(frozen=True)
class QuotaChange:
    """An entity's values after an alteration (empty: the entity has no quota left)."""

    entity: Entity
    values: dict[str, float]


@dataclass(frozen=True)
class FilterComponent:
    entity_type: str
    match_type: int
    match: str | None


class _Refused(Exception):
    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_entity(components: Sequence[tuple[str, str | None]]) -> Entity:
    if not components:
        raise _Refused("Invalid empty client quota entity")
    entity = make_entity(components)
    for kind, name in entity:
        if kind == USER:
            if name == "":
                raise _Refused("Empty user not supported")
        elif kind == CLIENT_ID:
            if name == "":
                raise _Refused("Empty client-id not supported")
        elif kind == IP:
            if name is not None and not _is_ip(name):
                raise _Refused(f"{name} is not a valid IP or resolvable host.")
        else:
            raise _Refused(f"Unhandled client quota entity type: {kind}")
    kinds = {kind for kind, _ in entity}
    if IP in kinds and len(kinds) > 1:
        raise _Refused(
            "Invalid quota entity combination, IP entity shouldnot be combined with User or "
            "ClientId"
        )
    return entity


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _check_op(entity: Entity, key: str, value: float, remove: bool) -> None:
    allowed = IP_KEYS if IP in dict(entity) else QUOTA_KEYS
    if key not in allowed:
        raise _Refused(f"Invalid configuration key {key}")
    if remove:
        return
    if not math.isfinite(value):
        raise _Refused(f"Quota {key} must be a finite number")
    if value <= 0:
        raise _Refused(f"Quota {key} must be greater than 0")
    if key in BYTE_RATE_KEYS:
        if value != math.floor(value):
            raise _Refused(f"{key} cannot be a fractional value.")
        if value > _LONG_MAX:
            raise _Refused(f"Proposed value for {key} is too large for a LONG.")


class QuotaStore:
    """Every entity's quota values (see the module docstring)."""

    def __init__(self, quotas: Mapping[Entity, Mapping[str, float]] | None = None) -> None:
        self._quotas: dict[Entity, dict[str, float]] = {
            entity: dict(values) for entity, values in (quotas or {}).items() if values
        }
        #: bumped on every applied change (enforcement caches its lookups by it)
        self.generation = 0

    def get(self, entity: Entity) -> dict[str, float]:
        return dict(self._quotas.get(entity, {}))

    def value(self, entity: Entity, key: str) -> float | None:
        values = self._quotas.get(entity)
        return None if values is None else values.get(key)

    def entities(self) -> dict[Entity, dict[str, float]]:
        return {entity: dict(values) for entity, values in self._quotas.items()}

    def __bool__(self) -> bool:
        return bool(self._quotas)

    # -- AlterClientQuotas ---------------------------------------------------------------------
    def plan_alter(
        self, entries: Sequence[AlterEntry]
    ) -> tuple[list[EntityResult], list[QuotaChange]]:
        """The answer (one result per entity, first-seen order) and the changes, unapplied."""
        results: dict[Entity, EntityResult] = {}
        changes: dict[Entity, QuotaChange] = {}
        for entry in entries:
            entity = make_entity(entry.components)
            try:
                entity = _check_entity(entry.components)
                keys = [key for key, _value, _remove in entry.ops]
                if entity in changes or len(set(keys)) != len(keys):
                    raise _Refused(f"Ignoring duplicate entity {_describe_entity(entity)}")
                for key, value, remove in entry.ops:
                    _check_op(entity, key, value, remove)
            except _Refused as exc:
                results[entity] = EntityResult(entity, exc.code, exc.message)
                continue
            values = self.get(entity)
            for key, value, remove in entry.ops:
                if remove:
                    values.pop(key, None)
                else:
                    values[key] = float(value)
            changes[entity] = QuotaChange(entity, values)
            results[entity] = EntityResult(entity, ErrorCode.NONE, None)
        return list(results.values()), list(changes.values())

    def apply(self, changes: Iterable[QuotaChange]) -> None:
        for change in changes:
            if change.values:
                self._quotas[change.entity] = dict(change.values)
            else:
                self._quotas.pop(change.entity, None)
        self.generation += 1

    def alter(
        self, entries: Sequence[AlterEntry], *, validate_only: bool = False
    ) -> list[EntityResult]:
        results, changes = self.plan_alter(entries)
        if not validate_only:
            self.apply(changes)
        return results

    # -- DescribeClientQuotas ------------------------------------------------------------------
    def describe(
        self, components: Sequence[FilterComponent], strict: bool
    ) -> tuple[ErrorCode, str | None, list[tuple[Entity, dict[str, float]]] | None]:
        """(error code, message, matching entities with their values or None on error)."""
        try:
            _check_filter(components)
        except _Refused as exc:
            return exc.code, exc.message, None
        kinds = {c.entity_type for c in components}
        out = []
        for entity, values in sorted(self._quotas.items(), key=_sort_key):
            names = dict(entity)
            if strict and set(names) != kinds:
                continue
            if all(_matches(c, names) for c in components):
                out.append((entity, dict(values)))
        return ErrorCode.NONE, None, out


def _sort_key(item: tuple[Entity, dict[str, float]]) -> list[tuple[int, str, int, str]]:
    return [(_ORDER.get(t, 3), t, int(n is not None), n or "") for t, n in item[0]]


def _matches(component: FilterComponent, names: Mapping[str, str | None]) -> bool:
    if component.entity_type not in names:
        return False
    name = names[component.entity_type]
    if component.match_type == MATCH_EXACT:
        return name == component.match
    if component.match_type == MATCH_DEFAULT:
        return name is None
    return True  # SPECIFIED: any name of that type, the default included (Kafka 4.4)


def _check_filter(components: Sequence[FilterComponent]) -> None:
    seen: set[str] = set()
    for c in components:
        if c.entity_type not in _ORDER:
            raise _Refused(
                f"Unsupported entity type {c.entity_type}", ErrorCode.UNSUPPORTED_VERSION
            )
        if c.entity_type in seen:
            raise _Refused(
                f"Entity type {c.entity_type} cannot appear more than once in the filter."
            )
        seen.add(c.entity_type)
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise _Refused("Request specified MATCH_TYPE_EXACT, but set match string to null.")
        elif c.match_type == MATCH_DEFAULT:
            if c.match is not None:
                raise _Refused(
                    "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                )
        elif c.match_type == MATCH_SPECIFIED:
            if c.match is not None:
                raise _Refused(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                )
        else:
            raise _Refused(f"Unknown match type {c.match_type}")
    if IP in seen and (USER in seen or CLIENT_ID in seen):
        raise _Refused(
            "Invalid entity filter component combination. IP filter component should not be "
            "used with user or clientId filter component."
        )


class QuotaStoreError(Exception):
    """An alteration could not be stored: `code` for every entity of the request."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class QuotaConfigs(Protocol):
    """What the handlers and the broker need of a quota config store."""

    @property
    def quotas(self) -> QuotaStore: ...

    async def alter(
        self, entries: Sequence[AlterEntry], *, validate_only: bool = False
    ) -> list[EntityResult]: ...

    async def run(self, *, task_status: trio.TaskStatus[Any]) -> None: ...

    def close(self) -> None: ...


class LocalQuotaConfigs:
    """Quota configs in memory (a broker without coordination; tests). The broker's are
    `wirebroker.cluster.zk_client_quotas.ZkClientQuotas`, with the same methods."""

    def __init__(self, quotas: QuotaStore | None = None) -> None:
        self.quotas = quotas if quotas is not None else QuotaStore()

    async def alter(
        self, entries: Sequence[AlterEntry], *, validate_only: bool = False
    ) -> list[EntityResult]:
        return self.quotas.alter(entries, validate_only=validate_only)

    async def run(self, *, task_status: trio.TaskStatus[Any]) -> None:
        task_status.started()

    def close(self) -> None:
        """Nothing to end in memory."""
