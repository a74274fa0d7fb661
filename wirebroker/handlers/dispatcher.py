"""The one dispatcher: a request frame in, what its connection does next out.

`Dispatcher.dispatch(frame, client_host, peer)` decodes the frame, finds the registered handler
(`wirebroker.handlers.registry`), checks the version, awaits the handler, encodes its answer and
returns a `Reply`: send `response` / send nothing (`NOTHING`) / close (`CLOSE`). `wirebroker.net`
only moves bytes and calls this through its own `RequestDispatcher` protocol. Every reason to
close is logged here, once, before `CLOSE` is returned (one line with peer, API, version and
correlation id when known), on the "wirebroker.net" logger: these are connection events::

    unknown API key, API without a handler, version not served, malformed body    warning
    a body decoding into more objects than the decode budget (RequestTooComplex)   warning
    acks=0 Produce that failed (`ProduceWithoutAckFailed`), as Kafka does         info
    a request a handler finds invalid where Kafka refuses to parse it
        (`MalformedRequest` from the handler: an ACL filter with an UNKNOWN code)  warning
    any other exception in a handler or while encoding                 error, with traceback

Not closed although the version is not served:
    ApiVersions newer than served   answered with v0 UNSUPPORTED_VERSION and the API list
                                    (`api_versions.unsupported_version_body`, KIP-511)
    Produce v0-2                    advertised (KAFKA-18659) but not served: UNSUPPORTED_VERSION
                                    for each partition (`protocol.legacy_produce`; Kafka closes,
                                    leaving the client retrying blind until its message timeout),
                                    except acks=0, which closes
A handler returning None (acks=0 Produce) sends nothing.

Injected faults (`wirebroker.faults`): while `faults.active` (one attribute check on the hot
path), a decoded request is matched against the active faults before its handler runs: an
"error" fault answers `wirebroker.faults.responses.error_response` (acks=0 Produce: closed), a
"delay" fault sleeps first, a "close" fault closes; each hit is logged at WARNING. An "error"
fault for one topic/partition of a request naming others: the handler serves the others and
the error entries are appended to its answer (`responses.split_request` / `merge_responses`).

Decode budget: `decode_request` gets `max_decoded_bytes = max(max_frame_bytes, 16 MiB)`
(`decode_budget`). A frame of tiny structs decodes into ~100x its size in Python objects; the
budget makes the frame cap (socket.request.max.bytes) the bound of a request's memory again,
and the 16 MiB floor keeps honest requests made of many small structs (a large Metadata or
OffsetCommit request costs ~15-30x its frame) working when the cap is lowered.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from time import perf_counter
from typing import Any, NamedTuple

import trio

from protocol.api import ApiKey
from protocol.codec import decode_request, encode_response
from protocol.errors import ErrorCode
from protocol.exceptions import MalformedRequest, ProtocolError, UnknownApiKey, UnsupportedVersion
from protocol.framing import GatherFrame
from protocol.legacy_produce import (
    LEGACY_VERSIONS,
    encode_legacy_produce_error,
    parse_legacy_produce,
)
from wirebroker.faults.core import FaultRules
from wirebroker.faults.responses import error_response, merge_responses, split_request
from wirebroker.handlers.api_versions import unsupported_version_body
from wirebroker.handlers.context import RequestContext, Services
from wirebroker.handlers.produce import ProduceWithoutAckFailed
from wirebroker.handlers.registry import HandlerSpec, Later, api_name
from wirebroker.handlers.stats import RequestStats
from wirebroker.handlers.throttle import client_throttles_itself, throttle
from wirebroker.handlers.throttle import prepare as prepare_quota
from wirebroker.security.session import ConnectionSession

#: Connection events keep the network layer's logger: operators (and tests) filter on it.
log = logging.getLogger("wirebroker.net")

#: The least decode budget (see the module docstring).
DECODE_BUDGET_FLOOR = 16 << 20

#: The session of a connection the caller did not describe: PLAINTEXT, anonymous.
_PLAINTEXT = ConnectionSession()

#: Kafka's default socket.request.max.bytes.
DEFAULT_MAX_FRAME_BYTES = 104857600


def decode_budget(max_frame_bytes: int) -> int:
    """Bytes of Python objects one request body may decode into."""
    return max(max_frame_bytes, DECODE_BUDGET_FLOOR)


class Reply(NamedTuple):
    """What the connection does after one request: send `response` (None: nothing), or close
    (`close`; never with a response, the reason is already logged)."""

    response: bytes | GatherFrame | None
    close: bool = False
    #: the handler answered `Later`: await this for the reply (see net/dispatch.py)
    later: Callable[[], Awaitable[Reply]] | None = None
    #: client quotas: mute the connection this long (handlers/throttle.py)
    throttle_ms: int = 0
    #: ... before sending the response (a client older than KIP-219), not after
    delay_response: bool = False


#: Send nothing and go on reading (acks=0 Produce).
NOTHING = Reply(None)
#: Close the connection (the reason is already logged).
CLOSE = Reply(None, True)


def describe(header: Any) -> str:
    """The request, for a log line: API name and key, version, correlation id, client id."""
    return (
        f"api {api_name(int(header.api_key))} (key {int(header.api_key)}) "
        f"v{int(header.api_version)}, correlation id {int(header.correlation_id)}, "
        f"client id {header.client_id!r}"
    )


class Dispatcher:
    """Serves request frames with the registered handlers (see the module docstring)."""

    def __init__(
        self,
        services: Services,
        handlers: Mapping[int, HandlerSpec],
        *,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        faults: FaultRules | None = None,
    ) -> None:
        self.services = services
        self.handlers = handlers
        self.max_decoded_bytes = decode_budget(max_frame_bytes)
        #: injected faults (`wirebroker.faults`); checked per request only while active
        self.faults = faults if faults is not None else FaultRules()
        self.stats = services.stats

    async def dispatch(
        self,
        frame: bytes | bytearray,
        client_host: str,
        peer: str,
        session: ConnectionSession | None = None,
    ) -> Reply:
        """Serve one request frame (without its size prefix) from `peer` (for log lines) on a
        connection of `session` (its listener and principal; None: PLAINTEXT, anonymous)."""
        try:
            header, request = decode_request(frame, max_decoded_bytes=self.max_decoded_bytes)
        except UnsupportedVersion as exc:
            return _unsupported_version(frame, exc.header, peer)
        except UnknownApiKey as exc:
            log.warning("closing connection from %s: unknown api key: %s", peer, exc)
            return CLOSE
        except (MalformedRequest, ProtocolError) as exc:
            log.warning("closing connection from %s: malformed request: %s", peer, exc)
            return CLOSE
        spec = self.handlers.get(int(header.api_key))
        if spec is None:
            log.warning("closing connection from %s: api not served: %s", peer, describe(header))
            return CLOSE
        if not spec.serves(int(header.api_version)):
            return _not_served(spec, header, peer)
        start = perf_counter()  # an injected delay counts in the request's latency
        errors: Mapping[str, Any] | None = None  # an error fault's part of the answer
        if self.faults.active:
            injected = await self._inject(header, request, peer)
            if isinstance(injected, Reply):
                return injected
            if injected is not None:
                request, errors = injected
        ctx = RequestContext(
            header=header,
            services=self.services,
            client_host=client_host,
            session=session if session is not None else _PLAINTEXT,
        )
        try:
            prepare_quota(ctx, request)
            body = await spec.func(ctx, request)
            if isinstance(body, Later):
                # handling time: until the handler returned (not the replication wait)
                quota = partial(
                    throttle, ctx, request, len(frame), elapsed_s=perf_counter() - start
                )
                finish = partial(_finish, body, header, peer, self.stats, start, errors, quota)
                return Reply(None, later=finish)
            if errors is not None and body is not None:
                body = merge_responses(body, errors)
            elapsed = perf_counter() - start
            throttle_ms = throttle(ctx, request, len(frame), body, elapsed)
            reply = _encoded(header, body, throttle_ms)
            self.stats.record(header.api_key, header.api_version, elapsed, body)
            return reply
        except ProduceWithoutAckFailed as exc:
            # Kafka logs this at INFO: closing is how an acks=0 producer learns of the error.
            log.info("closing connection from %s: %s: %s", peer, exc, describe(header))
            self.stats.record_failure(header.api_key, header.api_version, perf_counter() - start)
            return CLOSE
        except MalformedRequest as exc:
            # the peer's fault (Kafka fails to parse such a request and closes): no traceback
            log.warning(
                "closing connection from %s: invalid request: %s: %s", peer, exc, describe(header)
            )
            self.stats.record_failure(header.api_key, header.api_version, perf_counter() - start)
            return CLOSE
        except Exception:
            log.exception("handler failed; closing connection from %s: %s", peer, describe(header))
            self.stats.record_failure(header.api_key, header.api_version, perf_counter() - start)
            return CLOSE

    async def _inject(
        self, header: Any, request: Any, peer: str
    ) -> Reply | tuple[Any, Mapping[str, Any]] | None:
        """The reply of the fault this request hits; None: none, or a delay that is over;
        (rest of the request, error part of the answer): a fault for one topic or partition
        of a request naming others too (`wirebroker.faults.responses.split_request`)."""
        view = self.services.cluster

        def resolve(tid: Any) -> str | None:
            info = view.topic_by_id(tid)
            return None if info is None else info.name

        fault = self.faults.match(
            int(header.api_key),
            header.client_id,
            request,
            now_ms=self.services.clock(),
            resolve_topic_id=resolve,
        )
        if fault is None:
            return None
        log.warning(
            "injecting %s into a request from %s: %s", fault.describe(), peer, describe(header)
        )
        if fault.kind == "delay":
            await trio.sleep(fault.delay_ms / 1000)
            return None
        if fault.kind == "close":
            return CLOSE
        key, version = int(header.api_key), int(header.api_version)
        message = f"injected by wirebroker fault {fault.id}"
        split = None
        if fault.topic is not None:
            split = split_request(request, fault.topic, fault.partition, resolve)
        body = error_response(
            key, version, split[0] if split else request, fault.error_code, message
        )
        if body is None:  # acks=0 Produce: no answer to carry the error
            return CLOSE
        if split is not None:
            return split[1], body
        self.stats.record(key, version, 0.0, body)
        return _encoded(header, body)


def _encoded(header: Any, body: Mapping[str, Any] | None, throttle_ms: int = 0) -> Reply:
    if body is None:
        return NOTHING if throttle_ms <= 0 else Reply(None, throttle_ms=throttle_ms)
    response = encode_response(
        int(header.api_key), int(header.api_version), int(header.correlation_id), body
    )
    if throttle_ms <= 0:
        return Reply(response)
    delay = not client_throttles_itself(int(header.api_key), int(header.api_version))
    return Reply(response, throttle_ms=throttle_ms, delay_response=delay)


async def _finish(
    later: Later,
    header: Any,
    peer: str,
    stats: RequestStats,
    start: float,
    errors: Mapping[str, Any] | None = None,
    quota: Callable[[Mapping[str, Any] | None], int] | None = None,
) -> Reply:
    """The reply of a handler that answered `Later`, once its body is there (with an
    injected fault's error entries, `errors`, appended; `quota` records it against the client
    quotas and gives the throttle time, handlers/throttle.py)."""
    try:
        body = await later.wait()
        if errors is not None and body is not None:
            body = merge_responses(body, errors)
        elapsed = perf_counter() - start
        throttle_ms = quota(body) if quota is not None else 0
        reply = _encoded(header, body, throttle_ms)
        stats.record(header.api_key, header.api_version, elapsed, body)
        return reply
    except Exception:
        log.exception("handler failed; closing connection from %s: %s", peer, describe(header))
        stats.record_failure(header.api_key, header.api_version, perf_counter() - start)
        return CLOSE


def _unsupported_version(frame: bytes | bytearray, header: Any, peer: str) -> Reply:
    """A version the schemas do not know: ApiVersions and Produce v0-2 are answered."""
    if int(header.api_key) == ApiKey.API_VERSIONS:
        return _api_versions_unsupported(header, peer)
    if int(header.api_key) == ApiKey.PRODUCE and header.api_version in LEGACY_VERSIONS:
        return _legacy_produce_unsupported(frame, peer)
    log.warning("closing connection from %s: unsupported version: %s", peer, describe(header))
    return CLOSE


def _not_served(spec: HandlerSpec, header: Any, peer: str) -> Reply:
    """A version the schema knows but the handler does not serve."""
    version = int(header.api_version)
    if int(header.api_key) == ApiKey.API_VERSIONS and version > spec.max_version:
        return _api_versions_unsupported(header, peer)
    log.warning(
        "closing connection from %s: unsupported version (served %d-%d): %s",
        peer,
        spec.min_version,
        spec.max_version,
        describe(header),
    )
    return CLOSE


def _api_versions_unsupported(header: Any, peer: str) -> Reply:
    """ApiVersions newer than served: a v0 UNSUPPORTED_VERSION answer listing the APIs."""
    log.info(
        "ApiVersions v%d from %s is newer than served; answering with v0",
        int(header.api_version),
        peer,
    )
    body = unsupported_version_body()
    return Reply(encode_response(int(ApiKey.API_VERSIONS), 0, int(header.correlation_id), body))


def _legacy_produce_unsupported(frame: bytes | bytearray, peer: str) -> Reply:
    """Produce v0-2 (advertised, KAFKA-18659, but not served): UNSUPPORTED_VERSION for every
    partition instead of a closed connection, so the client fails fast and says why
    (`protocol.legacy_produce`). acks=0 expects no answer: closed, as for any failed acks=0
    produce."""
    try:
        request = parse_legacy_produce(bytes(frame))
    except ProtocolError as exc:
        log.warning("closing connection from %s: malformed request: %s", peer, exc)
        return CLOSE
    header = request.header
    if request.acks == 0:
        log.warning(
            "closing connection from %s: acks=0 Produce v%d (message format v0/v1, "
            "removed in Kafka 4.0) is not supported: %s",
            peer,
            header.api_version,
            describe(header),
        )
        return CLOSE
    log.warning(
        "answering UNSUPPORTED_VERSION to %s: Produce v%d (message format v0/v1, removed in "
        "Kafka 4.0; the client skipped or ignored ApiVersions): %s",
        peer,
        header.api_version,
        describe(header),
    )
    return Reply(encode_legacy_produce_error(request, int(ErrorCode.UNSUPPORTED_VERSION)))
