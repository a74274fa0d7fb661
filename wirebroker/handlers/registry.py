"""The handler registry: which Kafka APIs this broker serves, and at which versions.

Each module of `wirebroker.handlers` registers one coroutine per API with the `@handler`
decorator::

    @handler(ApiKey.METADATA)
    async def handle(ctx: RequestContext, req: MetadataRequest) -> MetadataResponse | None: ...

The registry is the single source of truth for ApiVersions: an API is advertised only when a
handler for it is registered, and only for the versions the handler serves (franz-go kfake's
`regKey` idea), so a client never picks a version the broker cannot answer.

Versions
    served range      `min_version..max_version`: by default the generated schema's
                      `VALID_VERSIONS`; a handler may narrow it. A request outside it closes the
                      connection (Kafka does the same), except ApiVersions newer than served and
                      Produce v0-2 (`wirebroker.handlers.dispatcher` applies these rules).
    advertised range  `advertised_min..max_version`. Equal to the served range, except Produce,
                      which advertises min version 0 although v0-2 are not served: Kafka 4.x does
                      this because some librdkafka versions refuse a broker whose Produce minimum
                      is above 0 (KAFKA-18659). A Produce v0-2 request is answered
                      UNSUPPORTED_VERSION for each partition; with acks=0 it closes the
                      connection.

`load_handlers()` imports every module of the package (pkgutil), so their decorators run, and
returns the registry. Registering a second handler for the same API key is a programming error.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from protocol.api import SCHEMAS, ApiKey

if TYPE_CHECKING:
    from wirebroker.handlers.context import RequestContext


@dataclass(frozen=True)
class Later:
    """A handler's answer that is not ready yet (an acks=all Produce waiting for the in-sync
    replicas): `wait()` gives the body (or None: no response). The connection may serve its
    next requests meanwhile; responses keep request order (net/connection.py, QUEUED)."""

    wait: Callable[[], Awaitable[Mapping[str, Any] | None]]


#: `async def handle(ctx, req) -> dict | None | Later`; None means "send no response" (acks=0
#: Produce), a `Later` "the body comes later". Handlers annotate `req` and the result with their
#: API's generated TypedDicts (`protocol.messages.<api>.<Name>Request` / `<Name>Response`).
HandlerFunc = Callable[["RequestContext", Any], Awaitable[Mapping[str, Any] | Later | None]]

#: APIs whose advertised minimum version is 0 whatever they serve (KAFKA-18659).
_ADVERTISE_FROM_ZERO = frozenset({int(ApiKey.PRODUCE)})


@dataclass(frozen=True)
class HandlerSpec:
    """One registered API: its handler and the versions it serves and advertises."""

    api_key: int
    name: str
    func: HandlerFunc
    min_version: int
    max_version: int
    advertised_min: int

    def serves(self, version: int) -> bool:
        """True when a request of this version is handled (see the module docstring)."""
        return self.min_version <= version <= self.max_version


#: api_key -> HandlerSpec, filled by `@handler` as handler modules are imported.
HANDLERS: dict[int, HandlerSpec] = {}


def handler(
    api_key: ApiKey | int, *, min_version: int | None = None, max_version: int | None = None
) -> Callable[[HandlerFunc], HandlerFunc]:
    """Register the decorated coroutine as the handler of `api_key`.

    `min_version`/`max_version` narrow the served range; they default to the generated schema's
    `VALID_VERSIONS` and may not exceed it (the codec cannot parse versions it has no schema for).
    """
    key = int(api_key)
    schema = SCHEMAS.get(key)
    if schema is None:
        raise ValueError(f"no generated schema for api key {key}")
    schema_min, schema_max = schema.VALID_VERSIONS
    lo = schema_min if min_version is None else min_version
    hi = schema_max if max_version is None else max_version
    if not schema_min <= lo <= hi <= schema_max:
        raise ValueError(
            f"api key {key}: versions {lo}-{hi} outside the schema's {schema_min}-{schema_max}"
        )
    advertised_min = 0 if key in _ADVERTISE_FROM_ZERO else lo

    def register(func: HandlerFunc) -> HandlerFunc:
        existing = HANDLERS.get(key)
        if existing is not None and existing.func is not func:
            raise ValueError(f"a handler for api key {key} is already registered")
        HANDLERS[key] = HandlerSpec(
            api_key=key,
            name=_api_name(key, schema),
            func=func,
            min_version=lo,
            max_version=hi,
            advertised_min=advertised_min,
        )
        return func

    return register


def _api_name(key: int, schema: object) -> str:
    name = getattr(schema, "NAME", None)
    if isinstance(name, str):
        return name
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)


def api_name(api_key: int) -> str:
    """A readable name for log lines ("Metadata"), also for keys without a handler."""
    spec = HANDLERS.get(api_key)
    if spec is not None:
        return spec.name
    schema = SCHEMAS.get(api_key)
    if schema is not None:
        return _api_name(api_key, schema)
    return f"unknown({api_key})"


def load_handlers() -> dict[int, HandlerSpec]:
    """Import every module of `wirebroker.handlers` and return the registry (api_key -> spec)."""
    import wirebroker.handlers as package

    for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        importlib.import_module(info.name)
    return HANDLERS
