"""Requests for versions or APIs a side does not serve: how each broker reacts.

- A version neither side advertises (ApiVersions v127, Metadata v14, Fetch v3, Produce v14):
  our codecs encode the body of the nearest version they know and the header names the
  unsupported one; an answer is decoded as that nearest version (ApiVersions: as v0, which
  is what Kafka answers an unknown ApiVersions version with).
- An API our codecs do not know: one frame with the request header and an empty body, so
  that the side that does not serve the API shows how it reacts to an unknown API key; what
  the side that serves it answers cannot be decoded and is not compared (CONFORMANCE.md lists
  these APIs as "not decodable"). Since the codecs come from Kafka 4.4's own definitions
  (tools/gen_protocol.py) they know every API a broker listens for, so with Kafka 4.4 this
  probe is not played; it stays for an API a newer Kafka adds, or a controller-only one a
  broker would advertise by mistake.
"""

from __future__ import annotations

import struct
from typing import Any

from compat.conformance.corpus.base import API, NIL
from compat.conformance.script import Ctx, Scenario, Step
from compat.conformance.transport import CLIENT_ID, Connection, Request
from protocol.api import SCHEMAS
from protocol.codec import decode_response, encode_request

# Names of the API keys our codecs do not know (Kafka's controller-only and removed ones), as
# Kafka's ApiKeys spells them.
KAFKA_API_NAMES = {
    4: "LeaderAndIsr",
    5: "StopReplica",
    6: "UpdateMetadata",
    7: "ControlledShutdown",
    52: "Vote",
    53: "BeginQuorumEpoch",
    54: "EndQuorumEpoch",
    56: "AlterPartition",
    58: "Envelope",
    59: "FetchSnapshot",
    62: "BrokerRegistration",
    63: "BrokerHeartbeat",
    67: "AllocateProducerIds",
    70: "ControllerRegistration",
    73: "AssignReplicasToDirs",
    82: "UpdateRaftVoter",
}


def api_name(key: int) -> str:
    module = SCHEMAS.get(key)
    if module is not None:
        return str(module.NAME)
    return KAFKA_API_NAMES.get(key, f"ApiKey{key}")


def codec_versions(key: int) -> range:
    """The versions our codecs can encode and decode (Produce v0-2: corpus/legacy.py)."""
    module = SCHEMAS.get(key)
    if module is None:
        return range(0)
    low, high = module.VALID_VERSIONS
    if key == int(API.PRODUCE):
        low = 0
    return range(low, high + 1)


def patched(
    api: int, codec_version: int, sent_version: int, body: dict[str, Any], decode_as: int
) -> Any:
    """A `Step.raw`: the body encoded at `codec_version`, the header saying `sent_version`."""

    def make(ctx: Ctx, conn: Connection) -> Request:
        correlation = conn.next_correlation()
        frame = bytearray(encode_request(api, codec_version, correlation, CLIENT_ID, body))
        struct.pack_into(">h", frame, 6, sent_version)
        return Request(
            api,
            sent_version,
            bytes(frame),
            correlation,
            lambda f: decode_response(api, decode_as, f),
        )

    return make


def header_only(api: int, version: int) -> Any:
    """A `Step.raw`: a request header (v2) and no body."""

    def make(ctx: Ctx, conn: Connection) -> Request:
        correlation = conn.next_correlation()
        client = CLIENT_ID.encode()
        frame = struct.pack(">hhih", api, version, correlation, len(client)) + client + b"\x00"
        return Request(
            api, version, struct.pack(">i", len(frame)) + frame, correlation, _undecodable
        )

    return make


def _undecodable(frame: bytes) -> tuple[int, Any]:
    raise ValueError(f"no codec for this API ({len(frame)} bytes answered)")


def _patched_step(
    api: int,
    sent: int,
    codec: int,
    body: dict[str, Any],
    note: str,
    decode_as: int | None = None,
) -> Step:
    """`unsupported.<API>.v<sent>`: `body` encoded at version `codec`, the header saying
    `sent`; the answer decoded at `decode_as` (by default `codec`)."""
    return Step(
        f"unsupported.{api_name(int(api))}.v{sent}",
        int(api),
        sent,
        note=note,
        raw=patched(int(api), codec, sent, body, codec if decode_as is None else decode_as),
    )


def unsupported_versions() -> Scenario:
    av = {"client_software_name": "conformance", "client_software_version": "1.0"}
    meta = {"topics": [], "allow_auto_topic_creation": False}
    fetch = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1024,
        "isolation_level": 0,
        "topics": [],
    }
    produce = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 1000,
        "topic_data": [{"name": "x", "topic_id": NIL, "partition_data": []}],
    }
    steps = (
        _patched_step(API.API_VERSIONS, 127, 3, av, "ApiVersions of a version from the future", 0),
        _patched_step(API.METADATA, 14, 13, meta, "Metadata v14 (v13's body)"),
        _patched_step(API.FETCH, 3, 4, fetch, "Fetch v3 (removed in Kafka 4.0; v4's body)"),
        _patched_step(API.PRODUCE, 14, 13, produce, "Produce v14 (v13's body)"),
        Step(
            "unsupported.ApiKey200",
            200,
            0,
            note="an API key no broker has (header only)",
            raw=header_only(200, 0),
        ),
    )
    return Scenario("unsupported versions", steps)


def no_codec(apis: dict[int, tuple[int, int]]) -> Scenario:
    """One header-only probe per API (at its newest advertised version) our codecs lack."""
    steps = tuple(
        Step(
            f"no_codec.{api_name(key)}.v{high}",
            key,
            high,
            note="header only: our codecs cannot encode this API",
            raw=header_only(key, high),
        )
        for key, (_, high) in sorted(apis.items())
    )
    return Scenario("APIs our codecs do not know", steps)
