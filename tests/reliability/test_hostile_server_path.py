"""Hostile bytes through the full server path (framing, header and body decoding, the handler,
the response encoding) of a real in-process broker, for every API and version the protocol
package knows (served or not).

Property: the broker answers with a response that decodes as the request's API/version (an
error code inside is fine) and/or closes the connection -- never an unhandled exception (an
ERROR log record), never stray bytes, never a hang on an API that does not wait.

Inputs: random bodies behind valid headers, random *valid* requests (random field values,
record batches valid or mutated), and the same requests mutated at the byte level. One broker
serves every example of the module, so state built by earlier examples (topics, producers,
groups) is in place for later ones.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from _nettools import hostile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PER_VERSION = int(os.environ.get("WIREBROKER_HOSTILE_EXAMPLES", "6"))
_SETTINGS = settings(
    max_examples=PER_VERSION,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
_IDS = [f"{hostile.API_MODULES[k].NAME}-v{v}" for k, v in hostile.REQUEST_VERSIONS]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hostile.InProcessBroker]:
    data = Path(tmp_path_factory.mktemp("hostile-server-path")) / "data"
    with hostile.InProcessBroker(data) as running:
        yield running


def _serve(broker: hostile.InProcessBroker, data: bytes) -> None:
    out = broker.exchange(data, timeout=3.0)
    problems = hostile.check_exchange(data, out)
    assert not problems, f"{problems} for input {data[:200]!r}"


@pytest.mark.parametrize("target", hostile.REQUEST_VERSIONS, ids=_IDS)
@_SETTINGS
@given(body=st.binary(max_size=96))
def test_random_bodies_behind_valid_headers(
    broker: hostile.InProcessBroker, target: tuple[int, int], body: bytes
) -> None:
    _serve(broker, hostile.reframe(hostile.request_header(*target) + body))


@pytest.mark.parametrize("target", hostile.REQUEST_VERSIONS, ids=_IDS)
@_SETTINGS
@given(rng=st.randoms(use_true_random=False), mutations=st.integers(0, 4))
def test_random_and_mutated_valid_requests(
    broker: hostile.InProcessBroker,
    target: tuple[int, int],
    rng: random.Random,
    mutations: int,
) -> None:
    frame = hostile.random_request(rng, *target)
    if mutations:
        frame = hostile.reframe(hostile.mutate(rng, frame[4:], rounds=mutations))
    _serve(broker, frame)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(rng=st.randoms(use_true_random=False), kind=st.sampled_from(hostile.CASE_KINDS[:-2]))
def test_hostile_cases(broker: hostile.InProcessBroker, rng: random.Random, kind: str) -> None:
    """The live fuzzer's case generator (bombs and pipelines have their own tests)."""
    _serve(broker, hostile.hostile_case(rng, kind).data)


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(frames=st.lists(st.tuples(st.randoms(use_true_random=False), st.booleans()), max_size=4))
def test_pipelined_valid_and_hostile_frames(
    broker: hostile.InProcessBroker, frames: list[tuple[random.Random, bool]]
) -> None:
    """Several frames in one receive: each valid one answered in order until a bad one."""
    data = b""
    for rng, valid in frames:
        key, version = rng.choice(hostile.REQUEST_VERSIONS)
        frame = hostile.random_request(rng, key, version, correlation_id=len(data) % 1000)
        data += frame if valid else hostile.reframe(hostile.mutate(rng, frame[4:]))
    out = broker.exchange(data, timeout=3.0)
    assert not out.errors, out.errors
    assert not out.trailing
    if out.timed_out:
        keys = {int.from_bytes(f[0:2]) for f in _frames(data)}
        assert keys & hostile.WAITING_APIS, "hang on APIs that never wait"


def _frames(data: bytes) -> list[bytes]:
    frames, _ = hostile.split_frames(data)
    return [f for f in frames if len(f) >= 2]
