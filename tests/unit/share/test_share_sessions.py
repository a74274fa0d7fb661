"""Share sessions (wirebroker.share.sessions): the epoch rules of ShareFetch and
ShareAcknowledge, the cache limit and eviction, sessions closed with their connection."""

from __future__ import annotations

import uuid

import pytest

from protocol.errors import ErrorCode
from wirebroker.share.sessions import ShareSessionError, ShareSessions, next_epoch

T = uuid.UUID(int=3)


def open_session(cache: ShareSessions, member: str = "m", now: int = 0):
    return cache.for_fetch("g", member, 0, [(T, 0)], [], acknowledges=False, now_ms=now)


def test_epochs_move_on_and_wrap() -> None:
    cache = ShareSessions()
    session = open_session(cache)
    assert session.epoch == 1
    cache.for_fetch("g", "m", 1, [(T, 1)], [(T, 0)], acknowledges=True, now_ms=1)
    assert (session.epoch, list(session.partitions)) == (2, [(T, 1)])
    cache.for_acknowledge("g", "m", 2, now_ms=2)
    assert session.epoch == 3
    assert next_epoch(2**31 - 1) == 1


@pytest.mark.parametrize(
    ("epoch", "code"),
    [(5, ErrorCode.INVALID_SHARE_SESSION_EPOCH), (0, ErrorCode.INVALID_SHARE_SESSION_EPOCH)],
)
def test_acknowledge_epochs(epoch: int, code: ErrorCode) -> None:
    cache = ShareSessions()
    open_session(cache)
    with pytest.raises(ShareSessionError) as err:
        cache.for_acknowledge("g", "m", epoch, now_ms=0)
    assert err.value.code is code


def test_errors_leave_the_session_as_it_was() -> None:
    cache = ShareSessions()
    session = open_session(cache)
    with pytest.raises(ShareSessionError):
        cache.for_fetch("g", "m", 7, [(T, 2)], [], acknowledges=False, now_ms=0)
    assert (session.epoch, list(session.partitions)) == (1, [(T, 0)])
    with pytest.raises(ShareSessionError) as err:
        cache.for_fetch("g", "x", 1, [], [], acknowledges=False, now_ms=0)
    assert err.value.code is ErrorCode.SHARE_SESSION_NOT_FOUND
    with pytest.raises(ShareSessionError) as err:
        cache.for_fetch("g", "m", 0, [], [], acknowledges=True, now_ms=0)
    assert err.value.code is ErrorCode.INVALID_REQUEST


def test_final_epoch_needs_a_session_and_keeps_it_until_closed() -> None:
    cache = ShareSessions()
    with pytest.raises(ShareSessionError) as err:
        cache.for_acknowledge("g", "m", -1, now_ms=0)
    assert err.value.code is ErrorCode.SHARE_SESSION_NOT_FOUND
    session = open_session(cache)
    assert cache.for_fetch("g", "m", -1, [], [], acknowledges=True, now_ms=0) is session
    assert cache.close("g", "m") is session and len(cache) == 0


def test_limit_and_eviction_of_idle_sessions() -> None:
    cache = ShareSessions(max_sessions=2, eviction_ms=1_000)
    open_session(cache, "a", now=0)
    open_session(cache, "b", now=500)
    with pytest.raises(ShareSessionError) as err:
        open_session(cache, "c", now=1_000)
    assert err.value.code is ErrorCode.SHARE_SESSION_LIMIT_REACHED
    open_session(cache, "c", now=1_001)  # "a" idle for more than 1 s: evicted
    assert cache.get("g", "a") is None and len(cache) == 2
    open_session(cache, "b", now=1_002)  # the member's own session is replaced


def test_close_if_only_the_connection_that_opened_it() -> None:
    cache = ShareSessions()
    first, second = object(), object()
    open_session(cache).connection = first
    assert cache.close_if("g", "m", second) is None
    reopened = open_session(cache)
    reopened.connection = second
    assert cache.close_if("g", "m", first) is None
    assert cache.close_if("g", "m", second) is reopened
