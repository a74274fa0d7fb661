"""Hand-written `struct` codecs for the hottest messages, equal to the construct schemas.

    decode_produce_request(frame, offset, version, budget=None) -> Container
    decode_fetch_response(frame, offset, version) -> Container | None
    encode_fetch_response(version, correlation_id, body) -> bytes | GatherFrame | None
    encode_metadata_response(version, correlation_id, body) -> bytes | None

`protocol.codec.decode_request` / `decode_response` / `encode_response` use them for Produce
requests, Fetch responses (both ways: a follower decodes what its leader encoded) and Metadata
responses; everything else goes through the generated construct schemas. The property
tests in `tests/unit/protocol/test_fastcodec.py` check that they give what the construct schemas
give: the same Containers for every valid request (and MalformedRequest whenever construct
raises), the same bytes for every response body.

Why: construct parses a Produce request by reading its records into a new `bytes` (a 1 MB
copy per request) and builds a Fetch response through a BytesIO (two copies of every record
batch). Here the records of a Produce request are a `memoryview` of the frame (no copy; the
log copies them once, into the buffer it stamps and writes), and a Fetch response is one
`b"".join` of small header pieces and the record slices (one copy).

Produce request, versions 3-13 (flexible from 9: compact strings/bytes/arrays and tagged
field sections, which are skipped: ProduceRequest declares no tagged field)::

    transactional_id   nullable string
    acks               int16
    timeout_ms         int32
    topic_data         array of
        name           string        (v3-12)
        topic_id       uuid          (v13+)
        partition_data array of
            index      int32
            records    nullable records (a memoryview of the frame here, bytes in construct)

Checks, as `protocol.primitives` does: every length against the bytes left, array counts
against the bytes left (each element needs at least its minimum size), null for a
non-nullable string or array, compact strings above 32767 bytes, varints above 5 bytes.
Invalid UTF-8 is replaced with U+FFFD. Trailing bytes are ignored.

Decode budget (`budget`, a `protocol.primitives.DecodeBudget`, None = unlimited): charged
exactly what the construct schema charges, at the same points and in the same order -- each
topic and partition array count (after its bytes-left check) the schema's per-element
estimate (`KArray.element_charge` of the ProduceRequest construct of that version), each
tagged-field section `TAG_COST` per tag -- so both raise `RequestTooComplex` for the same
bodies and budgets.

Fetch response, versions 4-18: the fast path covers bodies whose keys are the fields below
(any may be missing: the schema's default is used). Any other key (diverging_epoch,
current_leader, snapshot_id, node_endpoints: tagged fields) or a value the fast path cannot
pack returns None, and the caller builds the body with construct (which also produces the
proper EncodeError for a bad value)::

    throttle_time_ms, error_code, session_id (v7+)
    responses: topic (v4-12) | topic_id (v13+), partitions:
        partition_index, error_code, high_watermark, last_stable_offset, log_start_offset (v5+),
        aborted_transactions (nullable: producer_id, first_offset), preferred_read_replica
        (v11+), records (nullable)

Tagged-field sections are written empty (one 0 byte) in flexible versions (v12+), which is what
construct writes when no tagged field differs from its default.

A partition's records may also be a *region* (`protocol.framing.GatherFrame`): an object
that is not bytes-like but has `len()` and `bytes()` -- a leader's slice of its log file for
a follower, which the broker sends with sendfile so the bytes never enter the process. The
frame is then a `GatherFrame` (the pieces around each region joined) instead of `bytes`.
construct knows no regions: `protocol.codec.encode_response` reads them into bytes before
falling back to it.

Fetch response decoding, versions 12-18 (what a follower asks for: 12 by name, 16 by topic
id): the layout above; `records` are memoryviews of the frame (construct reads each into a new
`bytes`: for a follower's 1 MB answers, that copy and construct's own walk were a visible
share of its CPU; docs/replication.md, "Frames received in place").
The tagged fields (diverging_epoch, current_leader, snapshot_id of a partition, node_endpoints
of the response, v16+) are given their defaults, as construct gives them; an answer carrying
any tagged field at all, or anything the fast path does not expect -- truncated, an
impossible count or length -- returns None, and the caller decodes it with construct (which
raises the proper MalformedRequest). So the fast path only ever answers what construct
answers, for the plain answers of a follower at work.

Metadata response, versions 0-13 (flexible from 9; it declares no tagged field): every field
of the schema; each partition entry is packed with one precompiled Struct (fixed fields, the
three int32 arrays with their counts, the tag byte), which is what makes a 1,000-partition
answer cheap. Falls back (None) on unknown keys, a null where the version does not allow one,
non-int array elements, compact arrays of 127 or more nodes.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from construct import Container

from protocol.exceptions import MalformedRequest
from protocol.framing import GatherFrame, is_region
from protocol.primitives import TAG_COST, DecodeBudget, uvarint_bytes
from protocol.varint import read_uvarint as _uvarint

__all__ = [
    "decode_fetch_response",
    "decode_produce_request",
    "encode_fetch_response",
    "encode_metadata_response",
]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I16_PACK = _I16.pack
_I32_PACK = _I32.pack
_ACKS_TIMEOUT = struct.Struct(">hi")
_NIL_UUID = uuid.UUID(int=0)
_MAX_COMPACT_STRING = 0x7FFF

PRODUCE_FLEXIBLE_MIN = 9
PRODUCE_TOPIC_ID_MIN = 13
FETCH_FLEXIBLE_MIN = 12
FETCH_MIN_VERSION = 4  # the oldest served (and in the schema)


# --------------------------------------------------------------------------------------------
# Produce request
# --------------------------------------------------------------------------------------------


def _need(pos: int, n: int, end: int) -> None:
    if n > end - pos:
        raise MalformedRequest(f"needed {n} bytes, {max(end - pos, 0)} left")


def _length(buf: Any, pos: int, end: int, flexible: bool) -> tuple[int, int]:
    """An array count or bytes length: int32, or compact (unsigned varint N + 1) when
    flexible -> (N, position after it); N < 0 is null."""
    if flexible:
        n, pos = _uvarint(buf, pos, end)
        return n - 1, pos
    _need(pos, 4, end)
    return _I32.unpack_from(buf, pos)[0], pos + 4


def _count(
    buf: Any,
    pos: int,
    end: int,
    flexible: bool,
    unit: int,
    budget: DecodeBudget | None,
    cost: int,
) -> tuple[int, int]:
    """A non-nullable array count whose elements need >= `unit` bytes each; charges
    `n * cost` to `budget`."""
    n, pos = _length(buf, pos, end, flexible)
    if n < 0:
        raise MalformedRequest("null for a non-nullable array")
    if n > 0 and n * unit > end - pos:
        raise MalformedRequest(
            f"array of {n} elements of >= {unit} bytes with only {end - pos} bytes left"
        )
    if n > 0 and budget is not None:
        budget.charge(n * cost)
    return n, pos


def _string(buf: Any, pos: int, end: int, flexible: bool, nullable: bool) -> tuple[Any, int]:
    if flexible:
        n, pos = _uvarint(buf, pos, end)
        n -= 1
        if n < 0:
            if not nullable:
                raise MalformedRequest("null for a non-nullable string")
            return None, pos
        if n > _MAX_COMPACT_STRING:
            raise MalformedRequest(f"string length {n} above 32767")
    else:
        _need(pos, 2, end)
        n = _I16.unpack_from(buf, pos)[0]
        pos += 2
        if n < 0:
            if not nullable:
                raise MalformedRequest("null for a non-nullable string")
            if n != -1:
                raise MalformedRequest(f"negative string length {n}")
            return None, pos
    _need(pos, n, end)
    return bytes(buf[pos : pos + n]).decode("utf-8", "replace"), pos + n


def _topic_key(
    buf: Any, pos: int, end: int, flexible: bool, by_id: bool, name_key: str
) -> tuple[Container, int]:
    """A topic entry's Container started with its id (uuid) or its name (under `name_key`)."""
    if by_id:
        _need(pos, 16, end)
        return Container(topic_id=uuid.UUID(bytes=bytes(buf[pos : pos + 16]))), pos + 16
    name, pos = _string(buf, pos, end, flexible, False)
    return Container({name_key: name}), pos


def _skip_tags(buf: Any, pos: int, end: int, budget: DecodeBudget | None) -> int:
    """Skip a tagged-field section (no tagged field is known in a Produce request)."""
    n, pos = _uvarint(buf, pos, end)
    if n:
        if n > end - pos:
            raise MalformedRequest(f"{n} tagged fields with only {end - pos} bytes left")
        if budget is not None:
            budget.charge(n * TAG_COST)
    for _ in range(n):
        _tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        _need(pos, size, end)
        pos += size
    return pos


_charges: dict[int, tuple[int, int]] = {}


def _element_charges(version: int) -> tuple[int, int]:
    """(per topic, per partition) charges of the ProduceRequest construct of `version`."""
    charges = _charges.get(version)
    if charges is None:
        from protocol.messages import produce  # the schema module imports this one's peers

        top = produce.REQUEST.interpreted(version)
        topics = dict((i.name, c) for i, c in top.regular)["topic_data"]
        parts = dict((i.name, c) for i, c in topics.element.regular)["partition_data"]
        charges = _charges[version] = (topics.element_charge, parts.element_charge)
    return charges


def decode_produce_request(
    frame: bytes | bytearray, offset: int, version: int, budget: DecodeBudget | None = None
) -> Container:
    """The body of a Produce request (versions 3-13) starting at `offset` of `frame`.

    Raises MalformedRequest for bytes construct would reject, RequestTooComplex when the
    construct schema would exceed `budget` too. `records` are memoryviews of `frame` (None
    when null).
    """
    try:
        return _decode_produce(frame, offset, version, budget)
    except MalformedRequest:
        raise
    except (struct.error, ValueError, IndexError, TypeError, OverflowError) as exc:
        raise MalformedRequest(f"undecodable body: {exc!r}") from exc


def _decode_produce(
    frame: bytes | bytearray, pos: int, version: int, budget: DecodeBudget | None
) -> Container:
    flexible = version >= PRODUCE_FLEXIBLE_MIN
    topic_cost, part_cost = _element_charges(version) if budget is not None else (0, 0)
    by_id = version >= PRODUCE_TOPIC_ID_MIN
    view = memoryview(frame)
    end = len(frame)
    buf = frame
    transactional_id, pos = _string(buf, pos, end, flexible, True)
    _need(pos, 6, end)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(buf, pos)
    pos += 6
    # minimum element sizes (what construct's array-count check uses)
    if flexible:
        topic_unit = (16 if by_id else 1) + 1 + 1
        part_unit = 4 + 1 + 1
    else:
        topic_unit = 2 + 4
        part_unit = 4 + 4
    n_topics, pos = _count(buf, pos, end, flexible, topic_unit, budget, topic_cost)
    topic_data = []
    for _ in range(n_topics):
        topic, pos = _topic_key(buf, pos, end, flexible, by_id, "name")
        n_parts, pos = _count(buf, pos, end, flexible, part_unit, budget, part_cost)
        partition_data = []
        for _ in range(n_parts):
            _need(pos, 4, end)
            index = _I32.unpack_from(buf, pos)[0]
            pos += 4
            # records: nullable bytes, a view of the frame (`_length` inlined: the hot loop)
            if flexible:
                size, pos = _uvarint(buf, pos, end)
                size -= 1
            else:
                _need(pos, 4, end)
                size = _I32.unpack_from(buf, pos)[0]
                pos += 4
                if size < -1:
                    raise MalformedRequest(f"negative bytes length {size}")
            records: memoryview | None = None
            if size >= 0:
                _need(pos, size, end)
                records = view[pos : pos + size]
                pos += size
            if flexible:
                pos = _skip_tags(buf, pos, end, budget)
            partition_data.append(Container(index=index, records=records))
        topic["partition_data"] = partition_data
        if flexible:
            pos = _skip_tags(buf, pos, end, budget)
        topic_data.append(topic)
    if flexible:
        pos = _skip_tags(buf, pos, end, budget)
    return Container(
        transactional_id=transactional_id,
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=topic_data,
    )


# --------------------------------------------------------------------------------------------
# Fetch response
# --------------------------------------------------------------------------------------------

_FETCH_DECODE_MIN = 12
_FETCH_DECODE_MAX = 18
_FETCH_TOPIC_ID_MIN = 13
_FETCH_NODE_ENDPOINTS_MIN = 16
_TOP7_DECODE = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_PART_HEAD = struct.Struct(">ihqqq")  # partition_index, error_code, hw, lso, log start
_I64_PAIR = struct.Struct(">qq")


def decode_fetch_response(frame: bytes | bytearray, offset: int, version: int) -> Container | None:
    """The body of a Fetch response (versions 12-18) starting at `offset` of `frame`, equal to
    what the construct schema gives with `records` as memoryviews of `frame`; None when the
    fast path does not apply (see the module doc): decode with construct then."""
    if not _FETCH_DECODE_MIN <= version <= _FETCH_DECODE_MAX:
        return None
    try:
        return _decode_fetch(frame, offset, version)
    except (_NotFast, MalformedRequest, struct.error, ValueError, IndexError):
        return None


def _no_tags(buf: Any, pos: int, end: int) -> int:
    """An empty tagged-field section; anything else is not for the fast path."""
    if pos >= end or buf[pos] != 0:
        raise _NotFast
    return pos + 1


def _decode_fetch(frame: bytes | bytearray, pos: int, version: int) -> Container:
    view = memoryview(frame)
    buf = frame
    end = len(frame)
    by_id = version >= _FETCH_TOPIC_ID_MIN
    _need(pos, 10, end)
    throttle_time_ms, error_code, session_id = _TOP7_DECODE.unpack_from(buf, pos)
    pos += 10
    n_topics, pos = _count(buf, pos, end, True, 3, None, 0)
    responses = []
    for _ in range(n_topics):
        topic, pos = _topic_key(buf, pos, end, True, by_id, "topic")
        n_parts, pos = _count(buf, pos, end, True, 37, None, 0)
        partitions = []
        for _ in range(n_parts):
            _need(pos, 30, end)
            index, perr, hw, lso, log_start = _PART_HEAD.unpack_from(buf, pos)
            pos += 30
            n_aborted, pos = _length(buf, pos, end, True)
            aborted: list[Container] | None = None
            if n_aborted >= 0:
                if n_aborted * 17 > end - pos:
                    raise _NotFast
                aborted = []
                for _ in range(n_aborted):
                    _need(pos, 16, end)
                    producer_id, first_offset = _I64_PAIR.unpack_from(buf, pos)
                    pos = _no_tags(buf, pos + 16, end)
                    aborted.append(Container(producer_id=producer_id, first_offset=first_offset))
            _need(pos, 4, end)
            preferred = _I32.unpack_from(buf, pos)[0]
            pos += 4
            size, pos = _length(buf, pos, end, True)
            records: memoryview | None = None
            if size >= 0:
                _need(pos, size, end)
                records = view[pos : pos + size]
                pos += size
            pos = _no_tags(buf, pos, end)
            partitions.append(
                Container(
                    partition_index=index,
                    error_code=perr,
                    high_watermark=hw,
                    last_stable_offset=lso,
                    log_start_offset=log_start,
                    aborted_transactions=aborted,
                    preferred_read_replica=preferred,
                    records=records,
                    diverging_epoch=Container(epoch=-1, end_offset=-1),
                    current_leader=Container(leader_id=-1, leader_epoch=-1),
                    snapshot_id=Container(end_offset=-1, epoch=-1),
                )
            )
        topic["partitions"] = partitions
        pos = _no_tags(buf, pos, end)
        responses.append(topic)
    _no_tags(buf, pos, end)
    body = Container(
        throttle_time_ms=throttle_time_ms,
        error_code=error_code,
        session_id=session_id,
        responses=responses,
    )
    if version >= _FETCH_NODE_ENDPOINTS_MIN:
        body["node_endpoints"] = []
    return body


_TOP_KEYS = frozenset({"throttle_time_ms", "error_code", "session_id", "responses"})
_TOPIC_KEYS = frozenset({"topic", "topic_id", "partitions"})
_PART_KEYS = frozenset(
    {
        "partition_index",
        "error_code",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "aborted_transactions",
        "preferred_read_replica",
        "records",
    }
)
_ABORTED_KEYS = frozenset({"producer_id", "first_offset"})
_PART_FIXED = struct.Struct(">ihqqq")  # index, error, hw, lso, log start (v5+)
_PART_FIXED_V4 = struct.Struct(">ihqq")
_TOP7 = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id (v7+)
_AT = struct.Struct(">qq")


class _NotFast(Exception):
    """The body is outside the fast path: build it with construct."""


def _keys_ok(obj: Any, allowed: frozenset[str]) -> Any:
    if not isinstance(obj, dict) or not allowed.issuperset(obj.keys()):
        raise _NotFast
    return obj


def encode_fetch_response(
    version: int, correlation_id: int, body: Any
) -> bytes | GatherFrame | None:
    """The whole Fetch response frame (length prefix, header, body), or None when `body` is
    outside the fast path (see the module docstring) and construct must build it. A
    `GatherFrame` when some partition's records are a region (see the module docstring)."""
    try:
        return _encode_fetch(version, correlation_id, body)
    except (_NotFast, struct.error, TypeError, ValueError, OverflowError, AttributeError):
        return None


def _array(obj: dict[str, Any], key: str) -> Any:
    """The array `key` of a body dict (default empty); a null one is outside the fast path."""
    items = obj.get(key, [])
    if items is None:
        raise _NotFast
    return items


def _compact_count(n: int) -> bytes:
    """The count of a compact array (unsigned varint N + 1)."""
    return uvarint_bytes(n + 1)


def _topic_id(topic: dict[str, Any]) -> bytes:
    """A topic's `topic_id` (default the nil UUID) as its 16 bytes."""
    tid = topic.get("topic_id", _NIL_UUID)
    if not isinstance(tid, uuid.UUID):
        raise _NotFast
    return tid.bytes


def _str(value: Any, flexible: bool, nullable: bool) -> bytes:
    """A response string: compact when flexible. A non-str, a null where not `nullable`, or
    more than 32767 bytes is outside the fast path."""
    if value is None:
        if not nullable:
            raise _NotFast
        return b"\x00" if flexible else b"\xff\xff"
    if not isinstance(value, str):
        raise _NotFast
    raw = value.encode("utf-8")
    if len(raw) > _MAX_COMPACT_STRING:
        raise _NotFast
    return (uvarint_bytes(len(raw) + 1) if flexible else _I16_PACK(len(raw))) + raw


def _encode_fetch(version: int, correlation_id: int, body: Any) -> bytes | GatherFrame:
    if version < FETCH_MIN_VERSION:
        raise _NotFast
    flexible = version >= FETCH_FLEXIBLE_MIN
    _keys_ok(body, _TOP_KEYS)
    cid = _I32.pack(correlation_id)
    throttle = body.get("throttle_time_ms", 0)
    if version >= 7:
        top = _TOP7.pack(throttle, body.get("error_code", 0), body.get("session_id", 0))
    else:
        top = _I32.pack(throttle)
    # [length prefix (filled in last), response header (v1 when flexible: + empty tags), ...]
    parts: list[Any] = [b"", cid + b"\x00" + top if flexible else cid + top]
    append = parts.append
    count = _compact_count if flexible else _I32.pack
    regions = False  # some records are a region: the frame is a GatherFrame
    responses = _array(body, "responses")
    append(count(len(responses)))
    for topic in responses:
        _keys_ok(topic, _TOPIC_KEYS)
        if version >= 13:
            append(_topic_id(topic))
        else:
            append(_str(topic.get("topic", ""), flexible, False))
        partitions = _array(topic, "partitions")
        append(count(len(partitions)))
        regions = _append_fetch_partitions(version, partitions, append) or regions
        if flexible:
            append(b"\x00")
    if flexible:
        append(b"\x00")
    parts[0] = _I32.pack(sum(map(len, parts)))
    if regions:
        return GatherFrame(parts)
    return b"".join(parts)


def _append_fetch_partitions(version: int, partitions: Any, append: Any) -> bool:
    """The partitions of a Fetch response topic (Kafka's PartitionData): for each the fixed
    fields, aborted transactions, preferred read replica (v11+), records, tagged fields (v12+).
    One loop, no call per partition (a response may carry thousands). True when some records
    were a region (appended as they are)."""
    flexible = version >= FETCH_FLEXIBLE_MIN
    null = b"\x00" if flexible else b"\xff\xff\xff\xff"  # a null array or bytes
    keys = _PART_KEYS
    regions = False
    for p in partitions:
        if not isinstance(p, dict) or not keys.issuperset(p.keys()):
            raise _NotFast
        index, error = p.get("partition_index", 0), p.get("error_code", 0)
        hw, lso = p.get("high_watermark", 0), p.get("last_stable_offset", -1)
        if version >= 5:
            append(_PART_FIXED.pack(index, error, hw, lso, p.get("log_start_offset", -1)))
        else:
            append(_PART_FIXED_V4.pack(index, error, hw, lso))
        aborted = p.get("aborted_transactions")
        if aborted is None:
            append(null)
        else:
            _append_aborted(aborted, flexible, append)
        if version >= 11:
            append(_I32.pack(p.get("preferred_read_replica", -1)))
        records = p.get("records")
        if records is None:
            append(null)
        else:
            if not isinstance(records, bytes | bytearray | memoryview):
                if not is_region(records):
                    raise _NotFast
                regions = True
            n = len(records)
            if n > 0x7FFFFFFF:
                raise _NotFast
            append(uvarint_bytes(n + 1) if flexible else _I32.pack(n))
            append(records)
        if flexible:
            append(b"\x00")
    return regions


def _append_aborted(aborted: Any, flexible: bool, append: Any) -> None:
    """The aborted transactions of a partition (not null): (producer_id, first_offset)*."""
    append(uvarint_bytes(len(aborted) + 1) if flexible else _I32.pack(len(aborted)))
    for at in aborted:
        _keys_ok(at, _ABORTED_KEYS)
        append(_AT.pack(at.get("producer_id", 0), at.get("first_offset", 0)))
        if flexible:
            append(b"\x00")


# --------------------------------------------------------------------------------------------
# Metadata response
# --------------------------------------------------------------------------------------------

_META_TOP_KEYS = frozenset(
    {
        "throttle_time_ms",
        "brokers",
        "cluster_id",
        "controller_id",
        "topics",
        "cluster_authorized_operations",
        "error_code",
    }
)
_META_BROKER_KEYS = frozenset({"node_id", "host", "port", "rack"})
_META_TOPIC_KEYS = frozenset(
    {"error_code", "name", "topic_id", "is_internal", "partitions", "topic_authorized_operations"}
)
_META_PART_KEYS = frozenset(
    {
        "error_code",
        "partition_index",
        "leader_id",
        "leader_epoch",
        "replica_nodes",
        "isr_nodes",
        "offline_replicas",
    }
)
METADATA_FLEXIBLE_MIN = 9
_OPS_OMITTED = -2147483648
_BOOL = struct.Struct(">?")
_part_structs: dict[tuple[bool, bool, bool, int, int, int], Any] = {}
_PART_STRUCTS_MAX = 256


def _part_struct(version: int, n_rep: int, n_isr: int, n_off: int) -> Any:
    """One Struct for a whole partition entry: fixed fields, the three int32 arrays with
    their counts (compact: one byte, so only counts below 127), the tag byte (flexible)."""
    flexible = version >= METADATA_FLEXIBLE_MIN
    key = (version >= 5, version >= 7, flexible, n_rep, n_isr, n_off)
    st = _part_structs.get(key)
    if st is None:
        if len(_part_structs) >= _PART_STRUCTS_MAX:
            _part_structs.clear()
        count = "B" if flexible else "i"
        fmt = ">hii" + ("i" if version >= 7 else "")
        fmt += f"{count}{n_rep}i{count}{n_isr}i"
        if version >= 5:
            fmt += f"{count}{n_off}i"
        if flexible:
            fmt += "B"
        st = _part_structs[key] = struct.Struct(fmt)
    return st


def _append_partitions(version: int, partitions: Any, append: Any) -> None:
    """Pack each partition entry (Kafka's MetadataResponsePartition) with one Struct:
    error_code, partition_index, leader_id, leader_epoch (v7+), replica_nodes, isr_nodes,
    offline_replicas (v5+), tagged fields (v9+). Values are not type-checked here: struct
    rejects what construct's int packing rejects (the caller then falls back). One loop, no
    call per partition (an answer may carry thousands)."""
    flexible = version >= METADATA_FLEXIBLE_MIN
    with_epoch = version >= 7
    with_offline = version >= 5
    keys = _META_PART_KEYS
    structs = _part_structs
    # The common entry of a single-broker cluster (flexible versions, every key present, one
    # replica, one ISR member, no offline replica): one pack, no lookups of optional keys.
    one = _part_struct(version, 1, 1, 0) if flexible else None
    for p in partitions:
        if one is not None:
            try:
                if len(p) == 7:  # with the 7 lookups below: exactly the schema's keys
                    rep = p["replica_nodes"]
                    isr = p["isr_nodes"]
                    if len(rep) == 1 and len(isr) == 1 and len(p["offline_replicas"]) == 0:
                        append(
                            one.pack(
                                p["error_code"],
                                p["partition_index"],
                                p["leader_id"],
                                p["leader_epoch"],
                                2,
                                rep[0],
                                2,
                                isr[0],
                                1,
                                0,
                            )
                        )
                        continue
            except (KeyError, TypeError, IndexError):
                pass  # the general path below decides
        if not isinstance(p, dict) or not p.keys() <= keys:
            raise _NotFast
        get = p.get
        rep = get("replica_nodes", ())
        isr = get("isr_nodes", ())
        off = get("offline_replicas", ()) if with_offline else ()
        if rep is None or isr is None or off is None:
            raise _NotFast
        n_rep, n_isr, n_off = len(rep), len(isr), len(off)
        key = (with_offline, with_epoch, flexible, n_rep, n_isr, n_off)
        st = structs.get(key) or _part_struct(version, n_rep, n_isr, n_off)
        err, idx, ldr = get("error_code", 0), get("partition_index", 0), get("leader_id", 0)
        # one pack a version range; compact counts (N + 1) are one byte, the tag section one 0
        if flexible:
            if n_rep >= 0x7F or n_isr >= 0x7F or n_off >= 0x7F:
                raise _NotFast
            ep = get("leader_epoch", -1)
            append(st.pack(err, idx, ldr, ep, n_rep + 1, *rep, n_isr + 1, *isr, n_off + 1, *off, 0))
        elif with_epoch:
            ep = get("leader_epoch", -1)
            append(st.pack(err, idx, ldr, ep, n_rep, *rep, n_isr, *isr, n_off, *off))
        elif with_offline:
            append(st.pack(err, idx, ldr, n_rep, *rep, n_isr, *isr, n_off, *off))
        else:
            append(st.pack(err, idx, ldr, n_rep, *rep, n_isr, *isr))


def encode_metadata_response(version: int, correlation_id: int, body: Any) -> bytes | None:
    """The whole Metadata response frame, or None when `body` is outside the fast path (any
    key the schema does not have, a value of an unexpected type: construct builds it)."""
    try:
        return _encode_metadata(version, correlation_id, body)
    except (_NotFast, struct.error, TypeError, ValueError, OverflowError, AttributeError):
        return None


def _encode_metadata(version: int, correlation_id: int, body: Any) -> bytes:
    flexible = version >= METADATA_FLEXIBLE_MIN
    _keys_ok(body, _META_TOP_KEYS)
    count = _compact_count if flexible else _I32_PACK
    tag = b"\x00" if flexible else b""
    parts: list[bytes] = [b"", _I32_PACK(correlation_id) + tag]
    append = parts.append
    if version >= 3:
        append(_I32_PACK(body.get("throttle_time_ms", 0)))
    brokers = _array(body, "brokers")
    append(count(len(brokers)))
    for b in brokers:
        _keys_ok(b, _META_BROKER_KEYS)
        append(_I32_PACK(b.get("node_id", 0)))
        append(_str(b.get("host", ""), flexible, False))
        append(_I32_PACK(b.get("port", 0)))
        if version >= 1:
            append(_str(b.get("rack"), flexible, True))
        append(tag)
    if version >= 2:
        append(_str(body.get("cluster_id"), flexible, True))
    if version >= 1:
        append(_I32_PACK(body.get("controller_id", -1)))
    topics = _array(body, "topics")
    append(count(len(topics)))
    for t in topics:
        _keys_ok(t, _META_TOPIC_KEYS)
        append(_I16_PACK(t.get("error_code", 0)))
        append(_str(t.get("name", None if version >= 12 else ""), flexible, version >= 12))
        if version >= 10:
            append(_topic_id(t))
        if version >= 1:
            append(_BOOL.pack(t.get("is_internal", False)))
        partitions = _array(t, "partitions")
        append(count(len(partitions)))
        _append_partitions(version, partitions, append)
        if version >= 8:
            append(_I32_PACK(t.get("topic_authorized_operations", _OPS_OMITTED)))
        append(tag)
    if 8 <= version <= 10:
        append(_I32_PACK(body.get("cluster_authorized_operations", _OPS_OMITTED)))
    if version >= 13:
        append(_I16_PACK(body.get("error_code", 0)))
    append(tag)
    parts[0] = _I32_PACK(sum(map(len, parts)))
    return b"".join(parts)
