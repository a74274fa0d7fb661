"""The dispatcher: one request frame in, a `Reply` out (send / nothing / close), with every
close logged once on the "wirebroker.net" logger. No sockets: frames are built with the codec
and the dispatcher is awaited directly."""

from __future__ import annotations

import logging
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from protocol.api import ApiKey
from protocol.codec import decode_response, encode_request
from protocol.errors import ErrorCode
from tests.unit.net.netwire import stub_services
from wirebroker.handlers.api_versions import handle as api_versions_handle
from wirebroker.handlers.context import RequestContext
from wirebroker.handlers.dispatcher import (
    CLOSE,
    DECODE_BUDGET_FLOOR,
    NOTHING,
    Dispatcher,
    decode_budget,
)
from wirebroker.handlers.produce import ProduceWithoutAckFailed
from wirebroker.handlers.registry import HandlerSpec

PEER = "198.51.100.7:40000"
HOST = "198.51.100.7"

Handler = Callable[[RequestContext, Any], Awaitable[dict[str, Any] | None]]


def _spec(api_key: ApiKey, func: Handler, lo: int, hi: int) -> HandlerSpec:
    return HandlerSpec(int(api_key), api_key.name, func, lo, hi, lo)


def _dispatcher(*specs: HandlerSpec) -> Dispatcher:
    api_versions = _spec(ApiKey.API_VERSIONS, api_versions_handle, 0, 4)
    handlers = {spec.api_key: spec for spec in (api_versions, *specs)}
    return Dispatcher(stub_services(), handlers, max_frame_bytes=4096)


def _request(api_key: ApiKey, version: int, correlation_id: int, body: Any) -> bytes:
    """A request frame without its size prefix (what the connection hands the dispatcher)."""
    return encode_request(api_key, version, correlation_id, "disp", body)[4:]


def _header_v1(api_key: int, version: int, correlation_id: int) -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, 4) + b"disp"


METADATA_V1 = _request(ApiKey.METADATA, 1, 61, {"topics": []})


def _closing(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "wirebroker.net" and "closing connection" in r.getMessage()
    ]


async def test_a_request_is_answered_with_its_encoded_response() -> None:
    body = {"client_software_name": "disp", "client_software_version": "1"}
    reply = await _dispatcher().dispatch(_request(ApiKey.API_VERSIONS, 3, 7, body), HOST, PEER)
    assert not reply.close and reply.response is not None
    correlation_id, answer = decode_response(ApiKey.API_VERSIONS, 3, reply.response[4:])
    assert correlation_id == 7 and answer.error_code == ErrorCode.NONE


async def test_the_handler_sees_the_header_and_the_client_host() -> None:
    seen: list[tuple[int, int, str]] = []

    async def record(ctx: RequestContext, req: Any) -> None:
        seen.append((ctx.api_version, int(ctx.header.correlation_id), ctx.client_host))

    dispatcher = _dispatcher(_spec(ApiKey.METADATA, record, 0, 13))
    assert await dispatcher.dispatch(METADATA_V1, HOST, PEER) is NOTHING
    assert seen == [(1, 61, HOST)]


@pytest.mark.parametrize(
    ("name", "frame"),
    [
        ("unknown api key", _header_v1(9999, 0, 1)),
        ("malformed", b"\x00\x12\x00"),
        ("version outside the schema", _header_v1(ApiKey.METADATA, 99, 1)),
        ("api not served", METADATA_V1),
    ],
)
async def test_refused_requests_close_with_one_warning(
    caplog: pytest.LogCaptureFixture, name: str, frame: bytes
) -> None:
    with caplog.at_level(logging.INFO, logger="wirebroker.net"):
        assert await _dispatcher().dispatch(frame, HOST, PEER) is CLOSE
    (record,) = _closing(caplog)
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert PEER in record.getMessage()


async def never(ctx: RequestContext, req: Any) -> None:
    raise AssertionError("not called")


async def _closed_by(
    caplog: pytest.LogCaptureFixture,
    func: Handler,
    lo: int = 0,
    frame: bytes = METADATA_V1,
    budget: int | None = None,
) -> logging.LogRecord:
    """Dispatch `frame` to a Metadata handler `func` serving `lo`-13 (with a decode `budget`);
    assert the dispatcher closes, and return its one log line."""
    dispatcher = _dispatcher(_spec(ApiKey.METADATA, func, lo, 13))
    if budget is not None:
        dispatcher.max_decoded_bytes = budget
    with caplog.at_level(logging.INFO, logger="wirebroker.net"):
        assert await dispatcher.dispatch(frame, HOST, PEER) is CLOSE
    (record,) = _closing(caplog)
    return record


async def test_a_version_the_handler_does_not_serve_closes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    message = (await _closed_by(caplog, never, lo=4)).getMessage()
    assert "served 4-13" in message and "correlation id 61" in message and "v1" in message


@pytest.mark.parametrize("version", [6, 2])
async def test_api_versions_newer_than_served_gets_a_v0_answer(
    caplog: pytest.LogCaptureFixture, version: int
) -> None:
    """v6: beyond the schema; v2: beyond a handler serving 0-1. Both answered with v0."""
    dispatcher = _dispatcher(_spec(ApiKey.API_VERSIONS, api_versions_handle, 0, 1))
    frame = _header_v1(ApiKey.API_VERSIONS, version, 9) + b"\x00"
    with caplog.at_level(logging.INFO, logger="wirebroker.net"):
        reply = await dispatcher.dispatch(frame, HOST, PEER)
    assert not reply.close and reply.response is not None
    correlation_id, body = decode_response(ApiKey.API_VERSIONS, 0, reply.response[4:])
    assert correlation_id == 9 and body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert any("newer than served" in r.getMessage() for r in caplog.records)
    assert not _closing(caplog)


def _legacy_produce(acks: int, version: int = 1) -> bytes:
    body = struct.pack(">hii", acks, 1000, 1) + struct.pack(">h", 2) + b"t1"
    body += struct.pack(">i", 1) + struct.pack(">ii", 0, 0)
    return _header_v1(ApiKey.PRODUCE, version, 77) + body


async def test_legacy_produce_is_answered_unsupported_version() -> None:
    reply = await _dispatcher().dispatch(_legacy_produce(acks=1), HOST, PEER)
    assert not reply.close and reply.response is not None
    correlation_id, ntopics = struct.unpack_from(">ii", reply.response, 4)
    assert (correlation_id, ntopics) == (77, 1)
    (error,) = struct.unpack_from(">h", reply.response, 4 + 8 + 4 + 4 + 4)
    assert error == ErrorCode.UNSUPPORTED_VERSION


@pytest.mark.parametrize("frame", [_legacy_produce(acks=0), _header_v1(ApiKey.PRODUCE, 2, 1)])
async def test_legacy_produce_with_acks_0_or_malformed_closes(
    caplog: pytest.LogCaptureFixture, frame: bytes
) -> None:
    with caplog.at_level(logging.INFO, logger="wirebroker.net"):
        assert await _dispatcher().dispatch(frame, HOST, PEER) is CLOSE
    (record,) = _closing(caplog)
    assert record.levelno == logging.WARNING


async def test_a_failed_acks_0_produce_closes_at_info(caplog: pytest.LogCaptureFixture) -> None:
    async def failed(ctx: RequestContext, req: Any) -> None:
        raise ProduceWithoutAckFailed("partition t-0 failed")

    record = await _closed_by(caplog, failed)
    assert record.levelno == logging.INFO and record.exc_info is None
    assert "partition t-0 failed" in record.getMessage()


async def test_a_handler_bug_closes_with_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    async def buggy(ctx: RequestContext, req: Any) -> None:
        raise RuntimeError("boom in handler")

    record = await _closed_by(caplog, buggy)
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "boom in handler" in str(record.exc_info[1])
    assert "correlation id 61" in record.getMessage()


async def test_a_body_that_cannot_be_encoded_closes(caplog: pytest.LogCaptureFixture) -> None:
    async def bad_body(ctx: RequestContext, req: Any) -> dict[str, Any]:
        return {"brokers": [{"node_id": "not a number"}]}

    assert (await _closed_by(caplog, bad_body)).levelno == logging.ERROR


def test_the_decode_budget_has_a_floor() -> None:
    assert decode_budget(4096) == DECODE_BUDGET_FLOOR == 16 << 20
    assert decode_budget(100 << 20) == 100 << 20
    assert Dispatcher(stub_services(), {}, max_frame_bytes=4096).max_decoded_bytes == 16 << 20


async def test_a_body_over_the_decode_budget_closes(caplog: pytest.LogCaptureFixture) -> None:
    frame = _request(ApiKey.METADATA, 1, 3, {"topics": [{"name": "t"}] * 200})
    record = await _closed_by(caplog, never, frame=frame, budget=1000)  # a tiny budget
    assert record.levelno == logging.WARNING and "budget" in record.getMessage()


def test_replies() -> None:
    assert NOTHING.response is None and not NOTHING.close
    assert CLOSE.close and CLOSE.response is None
