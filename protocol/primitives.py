"""Runtime for the generated message modules: Kafka's wire types as construct `Construct`s.

The generated modules (`protocol/messages/*.py`) only declare data: a `MessageSpec` holding
`Field`s that span version ranges. `MessageSpec.fields(v)` resolves them to `FieldInfo`s for
one version (present fields only, nullability, tag and default at that version) and
`MessageSpec.schema(v)` turns those into a construct tree, built on first use and cached.

Encodings (all big-endian, as in Kafka's `Readable`/`Writable`):

- int8/int16/int32/int64/uint16/float64: fixed width; bool: one byte, non-zero is true.
- uuid: 16 bytes, parsed to `uuid.UUID`.
- string: int16 length then UTF-8 (-1 = null when nullable); compact (flexible versions):
  unsigned varint length+1 (0 = null), at most 32767 bytes. Malformed UTF-8 decodes with
  U+FFFD replacements, as Java's decoder does in Kafka.
- bytes / records: int32 length (-1 = null); compact: unsigned varint length+1. Records are
  kept opaque (`bytes | None`), never parsed here.
- array: int32 count (-1 = null); compact: unsigned varint count+1 (0 = null).
- struct: its fields in order; a nullable struct is preceded by an int8 (-1 = null, 1 =
  present). In flexible versions every struct ends with a tagged-field section:
  unsigned varint count, then per field unsigned varint tag, unsigned varint size, data.
  Known tagged fields are ordinary named fields (absent -> default) written, in ascending
  tag order, only when their encoding differs from their default's; unknown tags skipped.
- unsigned varint: 7 bits per byte, low group first, at most 5 bytes. (No message field
  uses varlongs; they only occur inside record batches, see `protocol.records`.)

Defaults: a field missing from a builder's dict takes its JSON `default`, else the zero of
its type (0, 0.0, False, "", b"", [], a struct of defaults, the nil UUID), except that a
field nullable in that version defaults to null (records always default to null where
nullable). Parsing gives every field of the version; absent tagged fields get the default.

Safety: every length or count read from the wire is checked against the bytes left in the
stream before anything is allocated for it (`read_exact` never asks for more than exists,
array counts are compared with `remaining`), varints longer than 5 bytes are rejected, and
every decode failure raises `MalformedRequest` (the codec turns stray `struct.error` /
`ValueError` of the compiled path into it too).

Decode budget (memory per request): a frame of tiny structs decodes into ~100x its size in
Python objects (a Container per 2-6 wire bytes), so the frame cap alone does not bound memory.
`protocol.codec._parse_body` puts a `DecodeBudget` on the stream (`stream.budget`; absent =
unlimited) and every array count charges an *estimate* of what its elements will create,
before they exist (`_check_count`, after the count-vs-bytes-left check); going over the limit
raises `RequestTooComplex` (a `MalformedRequest`). Estimates (`KafkaConstruct.mem_cost`,
computed once from `sys.getsizeof`, rounded up to pymalloc's 8 bytes):

- array element, charged at the count: a list slot (9: 8 bytes, over-allocated by 1/8) plus
  the element's `mem_cost`. Fixed-width elements are read with one `struct.unpack`, whose
  tuple (8) and input bytes (the width) live until the list is built: charged too.
- int8/int16/uint16 28 -> 32, int32 32, int64 40, float64 24, bool 0 (singletons); uuid: the
  UUID object and its 128-bit int; string: the header of the widest str kind (80; an ASCII
  string of <= 31 bytes fits in it); bytes: the bytes header (40); records: a memoryview (184,
  what the Produce fast path yields). Payloads beyond the header are bounded by the frame.
- struct: its Container (getsizeof for its field count, tagged fields included) plus its
  scalar fields, nested structs, tagged fields' values and a list header (56) per array field
  (whose elements charge at their own count).
- arrays of strings/bytes: the count charges the slots only; each non-empty string/bytes then
  charges its header as it is read (empty ones are shared singletons: a count of empty strings
  costs 9 bytes each, and charging 80 for them would refuse honest requests ~10x too early).
- tagged-field sections: every tag (known or not) charges a tuple, a bytes and an int (128)
  at the section's count. Kafka keeps unknown tags (RawTaggedField); we drop them as soon as
  read, so this over-charges, but only a hostile client sends many tags. Known tags are parsed
  from a sub-stream carrying the same budget (`rt_substream`).

Compilation: each construct implements construct's `_emitparse`/`_emitbuild`, so
`schema.compile()` yields straight-line Python (consecutive fixed-width fields are read
and written with one `struct` call). `MessageSpec.schema` compiles, checks the compiled
schema against the interpreted one on the default message and falls back to the
interpreted schema when compilation fails or differs.
"""

from __future__ import annotations

import io
import struct
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, TypeVar

from construct import Construct, Container

from protocol import varint
from protocol.exceptions import EncodeError, MalformedRequest, RequestTooComplex

__all__ = [
    "MAX_CHARGE_PER_BYTE",
    "MISSING",
    "NIL_UUID",
    "TAG_COST",
    "DecodeBudget",
    "Field",
    "FieldInfo",
    "MessageSpec",
    "read_uvarint",
    "remaining",
    "uvarint_bytes",
]

NIL_UUID = uuid.UUID(int=0)


class _Missing:
    """Marker for "no value given" (distinct from None, which means null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

# Fixed-width kinds -> struct format character.
FIXED_FORMATS: dict[str, str] = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "float64": "d",
    "bool": "?",
}
SCALAR_KINDS = (*FIXED_FORMATS, "uuid", "string", "bytes", "records")
_ZERO: dict[str, Any] = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "float64": 0.0,
    "bool": False,
    "uuid": NIL_UUID,
    "string": "",
    "bytes": b"",
    "records": b"",
}

_T = TypeVar("_T")
_S_INT8 = struct.Struct(">b")
_S_INT16 = struct.Struct(">h")
_S_INT32 = struct.Struct(">i")
_UVARINT_SMALL = [bytes((i,)) for i in range(128)]
_EMPTY_DICT: dict[str, Any] = {}


# --------------------------------------------------------------------------------------
# decode budget: estimated Python memory of parsed values (see the module docstring)
# --------------------------------------------------------------------------------------


def _mem(obj: object) -> int:
    """`sys.getsizeof` rounded up to pymalloc's 8-byte granularity."""
    return (sys.getsizeof(obj) + 7) & ~7


SLOT_COST = 9  # a list slot, over-allocated by 1/8 as a list comprehension grows
TUPLE_SLOT_COST = 8  # struct.unpack's tuple, alive while a fixed-width array is built
LIST_COST = _mem([])
FIXED_COSTS: dict[str, int] = {
    "b": _mem(-(2**7)),
    "h": _mem(-(2**15)),
    "H": _mem(2**16 - 1),
    "i": _mem(-(2**31)),
    "q": _mem(-(2**63)),
    "d": _mem(1.5),
    "?": 0,
}
UUID_COST = _mem(uuid.UUID(int=2**128 - 1)) + _mem(2**128 - 1)
STRING_COST = max(_mem("\U00010000"), _mem("a" * 31))
BYTES_COST = _mem(b"x")
RECORDS_COST = max(BYTES_COST, _mem(memoryview(b"x")))
TAG_COST = _mem((1, b"")) + BYTES_COST + _mem(2**31 - 1)
_CONTAINER_COSTS: dict[int, int] = {}


def container_cost(fields: int) -> int:
    """Memory of a Container holding `fields` keys."""
    cost = _CONTAINER_COSTS.get(fields)
    if cost is None:
        obj = Container()
        for i in range(fields):
            obj[f"f{i}"] = None
        cost = _CONTAINER_COSTS[fields] = _mem(obj)
    return cost


class DecodeBudget:
    """Bytes of Python objects one decode may create (estimated); `charged` so far.

    `charge(n)` raises `RequestTooComplex` once the total exceeds `limit`.
    """

    __slots__ = ("charged", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.charged = 0

    def charge(self, amount: int) -> None:
        self.charged += amount
        if self.charged > self.limit:
            raise RequestTooComplex(self.charged, self.limit)

    def blob(self, value: Any) -> Any:
        """Charge one string/bytes element of an array (after it is read); returns it."""
        if value:
            self.charged += STRING_COST if isinstance(value, str) else BYTES_COST
            if self.charged > self.limit:
                raise RequestTooComplex(self.charged, self.limit)
        return value


# --------------------------------------------------------------------------------------
# version ranges and field declarations
# --------------------------------------------------------------------------------------


def parse_versions(spec: str) -> tuple[int, int]:
    """Kafka version range text ("0+", "3-5", "7", "none") -> inclusive (lo, hi)."""
    if spec == "none":
        return (1, 0)
    if spec.endswith("+"):
        return (int(spec[:-1]), 0x7FFF)
    lo, sep, hi = spec.partition("-")
    return (int(lo), int(hi)) if sep else (int(lo), int(lo))


def _in(spec: str | None, version: int) -> bool:
    if spec is None:
        return False
    lo, hi = parse_versions(spec)
    return lo <= version <= hi


@dataclass(slots=True, eq=False, repr=False)
class Field:
    """A field as declared by a generated module (spanning a range of versions)."""

    name: str
    type: str
    versions: str
    _: KW_ONLY
    nullable: str | None = None
    default: Any = MISSING
    tag: int | None = None
    tagged: str | None = None
    fields: tuple[Field, ...] = ()

    def __repr__(self) -> str:
        return f"Field({self.name!r}, {self.type!r}, {self.versions!r})"


@dataclass(slots=True, eq=False, repr=False)
class FieldInfo:
    """One field of one version of a message (the declarative description).

    kind: one of `SCALAR_KINDS`, "array" or "struct". For arrays, `element` is the element
    kind (a scalar kind or "struct"); `fields` holds the struct's fields for "struct" and
    arrays of structs. `tag` is the tag number when the field is tagged in this version.
    `default` is the value used when a builder's dict lacks the key (and the value a
    tagged field is compared with); use `default_value()` for a fresh (mutable) copy.
    """

    name: str
    kind: str
    nullable: bool
    default: Any
    tag: int | None
    element: str | None
    fields: tuple[FieldInfo, ...]

    def default_value(self) -> Any:
        """A fresh default value (new list/Container for arrays and structs)."""
        if self.default is None:
            return None
        if self.kind == "array":
            return []
        if self.kind == "struct":
            return default_struct(self.fields)
        return self.default

    def __repr__(self) -> str:
        extra = f", element={self.element!r}" if self.element else ""
        tag = f", tag={self.tag}" if self.tag is not None else ""
        return (
            f"FieldInfo({self.name!r}, {self.kind!r}, nullable={self.nullable}, "
            f"default={self.default!r}{tag}{extra})"
        )


def default_struct(fields: Sequence[FieldInfo]) -> Container:
    """A Container with every field at its default (what parsing `{}`'s bytes yields)."""
    return Container({f.name: f.default_value() for f in fields})


def resolve_fields(fields: Sequence[Field], version: int) -> tuple[FieldInfo, ...]:
    """The fields present in `version`, with nullability, tag and default resolved."""
    out = []
    for f in fields:
        if not _in(f.versions, version):
            continue
        nullable = _in(f.nullable, version)
        tag = f.tag if f.tag is not None and _in(f.tagged, version) else None
        if f.type.startswith("[]"):
            kind = "array"
            element: str | None = f.type[2:]
        else:
            kind = f.type
            element = None
        sub: tuple[FieldInfo, ...] = ()
        if kind not in SCALAR_KINDS and kind != "array":
            kind = "struct"
        if element is not None and element not in SCALAR_KINDS:
            element = "struct"
        if kind == "struct" or element == "struct":
            sub = resolve_fields(f.fields, version)
        default = f.default
        if default is MISSING or (default is None and not nullable):
            if kind == "array":
                default = None if nullable else []
            elif kind == "struct":
                default = None if nullable else _EMPTY_DICT
            elif kind == "records":
                default = None if nullable else b""
            else:
                default = None if nullable else _ZERO[kind]
        elif kind == "array" and default is not None:
            default = []
        elif kind == "struct" and default is not None:
            default = _EMPTY_DICT
        out.append(FieldInfo(f.name, kind, nullable, default, tag, element, sub))
    return tuple(out)


# --------------------------------------------------------------------------------------
# runtime helpers (shared by the interpreted and the compiled path)
# --------------------------------------------------------------------------------------


def remaining(stream: Any) -> int:
    """Bytes left between the stream position and its end (no copy)."""
    pos = stream.tell()
    end = stream.seek(0, 2)
    stream.seek(pos)
    return int(end - pos)


def read_exact(stream: Any, n: int) -> bytes:
    """Exactly `n` bytes (BytesIO.read never allocates more than what is left)."""
    data: bytes = stream.read(n)
    if len(data) != n:
        raise MalformedRequest(f"needed {n} bytes, {len(data)} left")
    return data


def read_uvarint(stream: Any) -> int:
    """Kafka unsigned varint (at most 5 bytes) from a stream (`protocol.varint`)."""
    b = stream.read(1)
    if b and b[0] < 0x80:
        return int(b[0])
    data = b + stream.read(4)
    value, used = varint.read_uvarint(data, 0, len(data))
    stream.seek(used - len(data), 1)
    return value


def uvarint_bytes(value: int) -> bytes:
    """Kafka unsigned varint encoding of 0 <= value < 2**32."""
    if 0 <= value < 0x80:
        return _UVARINT_SMALL[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise EncodeError(f"unsigned varint out of range: {value}")
    out = bytearray()
    varint.write_uvarint(out, value)
    return bytes(out)


def _decode_utf8(data: bytes) -> str:
    # Kafka decodes with Java's String(bytes, UTF_8), which replaces malformed sequences
    # with U+FFFD instead of failing; do the same.
    return data.decode("utf-8", "replace")


def rt_string(stream: Any) -> str:
    n = _S_INT16.unpack(read_exact(stream, 2))[0]
    if n < 0:
        raise MalformedRequest("null for a non-nullable string")
    return _decode_utf8(read_exact(stream, n))


def _nullable_length(stream: Any, fixed: struct.Struct, what: str) -> int:
    """A non-compact length or count where -1 means null (any other negative is refused)."""
    n: int = fixed.unpack(read_exact(stream, fixed.size))[0]
    if n < -1:
        raise MalformedRequest(f"negative {what} {n}")
    return n


def rt_nstring(stream: Any) -> str | None:
    n = _nullable_length(stream, _S_INT16, "string length")
    return None if n < 0 else _decode_utf8(read_exact(stream, n))


def rt_cstring(stream: Any) -> str:
    n = read_uvarint(stream) - 1
    if n < 0:
        raise MalformedRequest("null for a non-nullable string")
    if n > 0x7FFF:
        raise MalformedRequest(f"string length {n} above 32767")
    return _decode_utf8(read_exact(stream, n))


def rt_cnstring(stream: Any) -> str | None:
    n = read_uvarint(stream) - 1
    if n < 0:
        return None
    if n > 0x7FFF:
        raise MalformedRequest(f"string length {n} above 32767")
    return _decode_utf8(read_exact(stream, n))


def rt_bytes(stream: Any) -> bytes:
    n = _S_INT32.unpack(read_exact(stream, 4))[0]
    if n < 0:
        raise MalformedRequest("null for non-nullable bytes")
    return read_exact(stream, n)


def rt_nbytes(stream: Any) -> bytes | None:
    n = _nullable_length(stream, _S_INT32, "bytes length")
    return None if n < 0 else read_exact(stream, n)


def rt_cbytes(stream: Any) -> bytes:
    n = read_uvarint(stream) - 1
    if n < 0:
        raise MalformedRequest("null for non-nullable bytes")
    return read_exact(stream, n)


def rt_cnbytes(stream: Any) -> bytes | None:
    n = read_uvarint(stream) - 1
    if n < 0:
        return None
    return read_exact(stream, n)


def _check_count(stream: Any, n: int, unit: int, cost: int) -> int:
    """`n` elements of at least `unit` (>= 1) bytes each must fit in the bytes left; then
    `n * cost` (estimated bytes of objects) is charged to the stream's budget, if any."""
    if n > 0:
        if n * unit > remaining(stream):
            raise MalformedRequest(
                f"array of {n} elements of >= {unit} bytes with only {remaining(stream)} bytes left"
            )
        budget = getattr(stream, "budget", None)
        if budget is not None:
            budget.charge(n * cost)
    return n


def rt_count(stream: Any, unit: int = 1, cost: int = 0) -> int:
    n = _S_INT32.unpack(read_exact(stream, 4))[0]
    if n < 0:
        raise MalformedRequest("null for a non-nullable array")
    return _check_count(stream, n, unit, cost)


def rt_ncount(stream: Any, unit: int = 1, cost: int = 0) -> int | None:
    n = _nullable_length(stream, _S_INT32, "array count")
    return None if n < 0 else _check_count(stream, n, unit, cost)


def rt_ccount(stream: Any, unit: int = 1, cost: int = 0) -> int:
    n = read_uvarint(stream) - 1
    if n < 0:
        raise MalformedRequest("null for a non-nullable array")
    return _check_count(stream, n, unit, cost)


def rt_cncount(stream: Any, unit: int = 1, cost: int = 0) -> int | None:
    n = read_uvarint(stream) - 1
    if n < 0:
        return None
    return _check_count(stream, n, unit, cost)


def rt_uuid(stream: Any) -> uuid.UUID:
    return uuid.UUID(bytes=read_exact(stream, 16))


def rt_struct_present(stream: Any) -> bool:
    """The int8 marker before a nullable struct: negative = null."""
    return bool(_S_INT8.unpack(read_exact(stream, 1))[0] >= 0)


def rt_read_tag(stream: Any) -> tuple[int, bytes]:
    """One tagged field: (tag, data)."""
    tag = read_uvarint(stream)
    size = read_uvarint(stream)
    return tag, read_exact(stream, size)


def rt_tag_count(stream: Any) -> int:
    """The count of a tagged-field section (each tag charges `TAG_COST` to the budget)."""
    n = read_uvarint(stream)
    if n:
        if n > remaining(stream):
            raise MalformedRequest(f"{n} tagged fields with only {remaining(stream)} bytes left")
        budget = getattr(stream, "budget", None)
        if budget is not None:
            budget.charge(n * TAG_COST)
    return n


def rt_substream(stream: Any, data: bytes) -> io.BytesIO:
    """A stream over a known tagged field's `data`, charging the same budget as `stream`."""
    sub = io.BytesIO(data)
    budget = getattr(stream, "budget", None)
    if budget is not None:
        sub.budget = budget  # type: ignore[attr-defined]
    return sub


def rt_w_tags(stream: Any, tags: list[tuple[int, bytes]]) -> None:
    if not tags:
        stream.write(b"\x00")
        return
    parts = [uvarint_bytes(len(tags))]
    for tag, data in tags:
        parts.append(uvarint_bytes(tag))
        parts.append(uvarint_bytes(len(data)))
        parts.append(data)
    stream.write(b"".join(parts))


def _utf8(value: Any) -> bytes:
    if not isinstance(value, str):
        raise EncodeError(f"expected str, got {type(value).__name__}")
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise EncodeError(f"string of {len(data)} bytes is longer than 32767")
    return data


def rt_w_string(stream: Any, value: Any) -> None:
    data = _utf8(value)
    stream.write(_S_INT16.pack(len(data)) + data)


def rt_w_cstring(stream: Any, value: Any) -> None:
    data = _utf8(value)
    stream.write(uvarint_bytes(len(data) + 1) + data)


def _blob(value: Any) -> Any:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise EncodeError(f"expected bytes, got {type(value).__name__}")
    if len(value) > 0x7FFFFFFF:
        raise EncodeError("bytes longer than 2**31-1")
    return value


def rt_w_bytes(stream: Any, value: Any) -> None:
    data = _blob(value)
    stream.write(_S_INT32.pack(len(data)))
    stream.write(data)


def rt_w_cbytes(stream: Any, value: Any) -> None:
    data = _blob(value)
    stream.write(uvarint_bytes(len(data) + 1))
    stream.write(data)


def rt_w_count(stream: Any, value: Any) -> int:
    if value is None:
        raise EncodeError("None for a non-nullable array")
    n = len(value)
    stream.write(_S_INT32.pack(n))
    return n


def rt_w_ccount(stream: Any, value: Any) -> int:
    if value is None:
        raise EncodeError("None for a non-nullable array")
    n = len(value)
    stream.write(uvarint_bytes(n + 1))
    return n


def _or_null(
    write: Callable[[Any, Any], _T], null: bytes, null_result: _T, name: str
) -> Callable[[Any, Any], _T]:
    """The nullable form of `write`: None is written as the `null` marker (and the writer
    returns `null_result`: -1 for a count writer, which returns the count written)."""

    def write_or_null(stream: Any, value: Any) -> _T:
        if value is None:
            stream.write(null)
            return null_result
        return write(stream, value)

    write_or_null.__name__ = write_or_null.__qualname__ = name  # imported by compiled code
    return write_or_null


rt_w_nstring = _or_null(rt_w_string, b"\xff\xff", None, "rt_w_nstring")
rt_w_cnstring = _or_null(rt_w_cstring, b"\x00", None, "rt_w_cnstring")
rt_w_nbytes = _or_null(rt_w_bytes, b"\xff\xff\xff\xff", None, "rt_w_nbytes")
rt_w_cnbytes = _or_null(rt_w_cbytes, b"\x00", None, "rt_w_cnbytes")
rt_w_ncount = _or_null(rt_w_count, b"\xff\xff\xff\xff", -1, "rt_w_ncount")
rt_w_cncount = _or_null(rt_w_ccount, b"\x00", -1, "rt_w_cncount")


def rt_w_uuid(stream: Any, value: Any) -> None:
    if not isinstance(value, uuid.UUID):
        raise EncodeError(f"expected uuid.UUID, got {type(value).__name__}")
    stream.write(value.bytes)


def rt_w_struct_marker(stream: Any, value: Any) -> bool:
    """Writes the nullable-struct marker; True when the struct follows."""
    if value is None:
        stream.write(b"\xff")
        return False
    stream.write(b"\x01")
    return True


def _variants(prefix: str, kind: str) -> dict[tuple[bool, bool], Callable[..., Any]]:
    """The four codecs of `kind` by (compact, nullable), named `{prefix}[c][n]{kind}`
    (`rt_string`, `rt_nstring`, `rt_cstring`, `rt_cnstring`; `rt_w_` for the writers)."""
    here = globals()
    return {
        (compact, nullable): here[f"{prefix}{'c' * compact}{'n' * nullable}{kind}"]
        for compact in (False, True)
        for nullable in (False, True)
    }


# (kind, compact, nullable) -> reader / writer of strings and bytes; (compact, nullable) ->
# reader / writer of array counts
_READERS = {(k, *key): f for k in ("string", "bytes") for key, f in _variants("rt_", k).items()}
_WRITERS = {(k, *key): f for k in ("string", "bytes") for key, f in _variants("rt_w_", k).items()}
_COUNT_READERS = _variants("rt_", "count")
_COUNT_WRITERS = _variants("rt_w_", "count")

# Names the compiled modules import from here (emitted once per compiled schema).
_RT_IMPORT = (
    "from protocol.primitives import ("
    + ", ".join(
        sorted(
            {
                *(f.__name__ for f in _READERS.values()),
                *(f.__name__ for f in _WRITERS.values()),
                *(f.__name__ for f in _COUNT_READERS.values()),
                *(f.__name__ for f in _COUNT_WRITERS.values()),
                "rt_uuid",
                "rt_w_uuid",
                "rt_struct_present",
                "rt_w_struct_marker",
                "rt_read_tag",
                "rt_tag_count",
                "rt_substream",
                "rt_w_tags",
                "read_exact",
            }
        )
    )
    + ")\nfrom protocol.primitives import MISSING as _MISSING, NIL_UUID as _NIL_UUID\n"
    + "from protocol.primitives import _EMPTY_DICT\n"
    + "from uuid import UUID as _UUID\n"
)


def _encode_error(path: str, exc: BaseException) -> EncodeError:
    """An EncodeError for `exc` with `path` prepended to the field path it carries."""
    inner = getattr(exc, "field_path", None)
    reason = getattr(exc, "reason", None) or str(exc) or repr(exc)
    if inner is not None:
        path = path + inner if inner.startswith("[") else f"{path}.{inner}"
    err = EncodeError(f"field {path}: {reason}")
    err.field_path = path  # type: ignore[attr-defined]
    err.reason = reason  # type: ignore[attr-defined]
    return err


# --------------------------------------------------------------------------------------
# constructs
# --------------------------------------------------------------------------------------


def _emit_name(code: Any, obj: object, prefix: str) -> tuple[str, bool]:
    """A stable function name for `obj` in this CodeGen; True when newly allocated."""
    names = code.__dict__.setdefault("_kafka_names", {})
    key = (id(obj), prefix)
    if key in names:
        return names[key], False
    if not names:
        code.append(_RT_IMPORT)
    name = f"_{prefix}{code.allocateId()}"
    names[key] = name
    return name, True


def _emit_struct_fmt(code: Any, fmt: str) -> str:
    """Module-level `struct.Struct` for a format, shared by name."""
    name = "_S_" + fmt.replace("?", "B_").lstrip(">")
    code.append(f"{name} = struct.Struct({fmt!r})")
    return name


class KafkaConstruct(Construct):
    """Base: `read_expr`/`write_stmts` drive compilation, `_parse`/`_build` interpret.

    `min_size` is the fewest bytes one value occupies (used to bound array counts);
    `mem_cost` the estimated bytes of Python objects one parsed value holds, arrays' elements
    excluded (they are charged at their count; see "Decode budget" above).
    """

    min_size = 1
    mem_cost = 0

    def read_expr(self, code: Any) -> str:
        """A Python expression reading one value from `io`."""
        raise NotImplementedError

    def write_stmts(self, code: Any, value: str) -> list[str]:
        """Python statements writing the value of expression `value` to `io`."""
        raise NotImplementedError

    def _emitparse(self, code: Any) -> str:
        return self.read_expr(code)

    def _emitbuild(self, code: Any) -> str:
        name, new = _emit_name(code, self, "kw")
        if new:
            body = "\n".join("    " + s for s in self.write_stmts(code, "obj"))
            code.append(f"def {name}(obj, io):\n{body}\n    return obj\n")
        return f"{name}(obj, io)"

    def _sizeof(self, context: Any, path: str) -> int:
        from construct import SizeofError

        raise SizeofError(path=path)


class KFixed(KafkaConstruct):
    """Fixed-width number or bool (struct format character `fmt`)."""

    def __init__(self, fmt: str) -> None:
        super().__init__()
        self.fmt = fmt
        self.packer = struct.Struct(">" + fmt)
        self.min_size = self.packer.size
        self.mem_cost = FIXED_COSTS[fmt]

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        return self.packer.unpack(read_exact(stream, self.packer.size))[0]

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        try:
            stream.write(self.packer.pack(obj))
        except struct.error as exc:
            raise EncodeError(f"{obj!r} does not fit {self.fmt!r}: {exc}") from exc
        return obj

    def read_expr(self, code: Any) -> str:
        s = _emit_struct_fmt(code, ">" + self.fmt)
        return f"{s}.unpack(io.read({self.packer.size}))[0]"

    def write_stmts(self, code: Any, value: str) -> list[str]:
        s = _emit_struct_fmt(code, ">" + self.fmt)
        return [f"io.write({s}.pack({value}))"]


class KUuid(KafkaConstruct):
    """16-byte UUID <-> `uuid.UUID`."""

    min_size = 16
    mem_cost = UUID_COST

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        return rt_uuid(stream)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        rt_w_uuid(stream, obj)
        return obj

    def read_expr(self, code: Any) -> str:
        _emit_name(code, self, "ku")
        return "rt_uuid(io)"

    def write_stmts(self, code: Any, value: str) -> list[str]:
        _emit_name(code, self, "ku")
        return [f"rt_w_uuid(io, {value})"]


class KBlob(KafkaConstruct):
    """String (`kind="string"`) or bytes/records (`kind="bytes"`), compact or not."""

    def __init__(self, kind: str, compact: bool, nullable: bool, records: bool = False) -> None:
        super().__init__()
        key = (kind, compact, nullable)
        self.min_size = 1 if compact else (2 if kind == "string" else 4)
        if records:
            self.mem_cost = RECORDS_COST
        else:
            self.mem_cost = STRING_COST if kind == "string" else BYTES_COST
        self.reader = _READERS[key]
        self.writer = _WRITERS[key]

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        return self.reader(stream)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        self.writer(stream, obj)
        return obj

    def read_expr(self, code: Any) -> str:
        _emit_name(code, self, "kb")
        return f"{self.reader.__name__}(io)"

    def write_stmts(self, code: Any, value: str) -> list[str]:
        _emit_name(code, self, "kb")
        return [f"{self.writer.__name__}(io, {value})"]


class KArray(KafkaConstruct):
    """Array of `element` (int32 count or compact varint count+1; null when nullable)."""

    def __init__(self, element: KafkaConstruct, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.element = element
        self.nullable = nullable
        self.min_size = 1 if compact else 4
        self.mem_cost = LIST_COST
        self.count_reader = _COUNT_READERS[(compact, nullable)]
        self.count_writer = _COUNT_WRITERS[(compact, nullable)]

    @property
    def element_charge(self) -> int:
        """Bytes charged per element at the count (strings/bytes add theirs when read)."""
        element = self.element
        if isinstance(element, KFixed):
            return SLOT_COST + TUPLE_SLOT_COST + element.packer.size + element.mem_cost
        if isinstance(element, KBlob):
            return SLOT_COST
        return SLOT_COST + element.mem_cost

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        n = self.count_reader(stream, max(self.element.min_size, 1), self.element_charge)
        if n is None:
            return None
        parse = self.element._parse
        budget = getattr(stream, "budget", None)
        if budget is not None and isinstance(self.element, KBlob):
            return [budget.blob(parse(stream, context, path)) for _ in range(n)]
        return [parse(stream, context, path) for _ in range(n)]

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        n = self.count_writer(stream, obj)
        if n > 0:
            build = self.element._build
            for i, item in enumerate(obj):
                try:
                    build(item, stream, context, path)
                except Exception as exc:
                    raise _encode_error(f"[{i}]", exc) from exc
        return obj

    def read_expr(self, code: Any) -> str:
        name, new = _emit_name(code, self, "ka")
        if new:
            unit = max(self.element.min_size, 1)
            reader = self.count_reader.__name__
            lines = [f"def {name}(io):", f"    n = {reader}(io, {unit}, {self.element_charge})"]
            if self.nullable:
                lines.append("    if n is None:\n        return None")
            if isinstance(self.element, KFixed):
                size = self.element.packer.size
                fmt = self.element.fmt
                lines.append(
                    f"    return list(struct.unpack('>%d{fmt}' % n, read_exact(io, n * {size})))"
                )
            elif isinstance(self.element, KBlob):
                elem = self.element.read_expr(code)
                lines.append("    budget = getattr(io, 'budget', None)")
                lines.append("    if budget is not None:")
                lines.append(f"        return [budget.blob({elem}) for _ in range(n)]")
                lines.append(f"    return [{elem} for _ in range(n)]")
            else:
                lines.append(f"    return [{self.element.read_expr(code)} for _ in range(n)]")
            code.append("\n".join(lines) + "\n")
        return f"{name}(io)"

    def write_stmts(self, code: Any, value: str) -> list[str]:
        name, new = _emit_name(code, self, "kaw")
        if new:
            lines = [f"def {name}(io, value):", f"    n = {self.count_writer.__name__}(io, value)"]
            if isinstance(self.element, KFixed):
                fmt = self.element.fmt
                lines.append("    if n > 0:")
                lines.append(f"        io.write(struct.pack('>%d{fmt}' % n, *value))")
            else:
                lines.append("    if n > 0:")
                lines.append("        for item in value:")
                lines += ["            " + s for s in self.element.write_stmts(code, "item")]
            code.append("\n".join(lines) + "\n")
        return [f"{name}(io, {value})"]


class KNullableStruct(KafkaConstruct):
    """A nullable struct: int8 marker (-1 null, 1 present) then the struct."""

    def __init__(self, struct_: KStruct) -> None:
        super().__init__()
        self.struct = struct_
        self.mem_cost = struct_.mem_cost

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        if not rt_struct_present(stream):
            return None
        return self.struct._parse(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if rt_w_struct_marker(stream, obj):
            self.struct._build(obj, stream, context, path)
        return obj

    def read_expr(self, code: Any) -> str:
        inner = self.struct.read_expr(code)
        return f"({inner} if rt_struct_present(io) else None)"

    def write_stmts(self, code: Any, value: str) -> list[str]:
        inner = self.struct.write_stmts(code, value)
        return [f"if rt_w_struct_marker(io, {value}):"] + ["    " + s for s in inner]


def _default_expr(info: FieldInfo) -> str:
    """Source of the value used when a builder's dict lacks the key (never mutated)."""
    d = info.default
    if d is None:
        return "None"
    if info.kind == "array":
        return "()"
    if info.kind == "struct":
        return "_EMPTY_DICT"
    if info.kind == "uuid":
        return "_NIL_UUID" if d == NIL_UUID else f"_UUID({str(d)!r})"
    if info.kind == "float64":
        return f"float({float(d)!r})"
    return repr(d)


def _fresh_default_expr(info: FieldInfo) -> str:
    """Source creating a fresh default value (new list / Container), as parsing yields."""
    if info.default is None:
        return "None"
    if info.kind == "array":
        return "[]"
    if info.kind == "struct":
        items = ", ".join(f"{f.name!r}: {_fresh_default_expr(f)}" for f in info.fields)
        return f"Container({{{items}}})"
    return _default_expr(info)


def _build_default(info: FieldInfo) -> Any:
    """Interpreted counterpart of `_default_expr`."""
    if info.default is None:
        return None
    if info.kind == "array":
        return ()
    if info.kind == "struct":
        return _EMPTY_DICT
    return info.default


class KStruct(KafkaConstruct):
    """A Kafka struct for one version: ordered fields, then tagged fields if flexible.

    Parses into a `Container` with every field of the version (tagged fields absent from
    the bytes take their default); builds from any mapping (missing keys -> default, keys
    the version lacks ignored).
    """

    def __init__(
        self,
        infos: Sequence[FieldInfo],
        subcons: Sequence[KafkaConstruct],
        flexible: bool,
    ) -> None:
        super().__init__()
        self.flexible = flexible
        self.infos = tuple(infos)
        self.regular = [(i, c) for i, c in zip(infos, subcons, strict=True) if i.tag is None]
        self.min_size = sum(c.min_size for _, c in self.regular) + (1 if flexible else 0)
        tagged = [(i, c) for i, c in zip(infos, subcons, strict=True) if i.tag is not None]
        tagged.sort(key=lambda ic: ic[0].tag)  # type: ignore[arg-type, return-value]
        self.tagged = tagged
        self.tag_map = {i.tag: (i, c) for i, c in tagged}
        self.all_subcons = tuple(subcons)
        self.mem_cost = container_cost(len(self.infos)) + sum(c.mem_cost for c in subcons)
        # bytes of each tagged field's default: a value encoding the same is not written
        self.tag_default_bytes = {i.tag: c.build(_build_default(i)) for i, c in tagged}

    # interpreted ---------------------------------------------------------------------

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        obj = Container()
        for info, sub in self.regular:
            obj[info.name] = sub._parse(stream, context, path)
        if self.flexible:
            for info, _ in self.tagged:
                obj[info.name] = info.default_value()
            for _ in range(rt_tag_count(stream)):
                tag, data = rt_read_tag(stream)
                known = self.tag_map.get(tag)
                if known is not None:
                    info, sub = known
                    obj[info.name] = sub._parse(rt_substream(stream, data), context, path)
        return obj

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        get = obj.get
        for info, sub in self.regular:
            try:
                sub._build(get(info.name, _build_default(info)), stream, context, path)
            except Exception as exc:
                raise _encode_error(info.name, exc) from exc
        if self.flexible:
            tags = []
            for info, sub in self.tagged:
                value = get(info.name, MISSING)
                if value is MISSING:
                    continue
                try:
                    data = sub.build(value)
                except Exception as exc:
                    raise _encode_error(info.name, exc) from exc
                if data != self.tag_default_bytes[info.tag]:
                    tags.append((info.tag, data))
            rt_w_tags(stream, tags)  # type: ignore[arg-type]
        return obj

    # compiled ------------------------------------------------------------------------

    def read_expr(self, code: Any) -> str:
        name, new = _emit_name(code, self, "ks")
        if new:
            code.append(self._emit_parse_fn(code, name))
        return f"{name}(io)"

    def _emit_parse_fn(self, code: Any, name: str) -> str:
        lines = [f"def {name}(io):"]
        values: list[str] = []
        i = 0
        regular = self.regular
        while i < len(regular):
            info, sub = regular[i]
            if isinstance(sub, KFixed):
                j = i
                fmt = ""
                while j < len(regular) and isinstance(regular[j][1], KFixed):
                    fmt += regular[j][1].fmt
                    j += 1
                targets = [f"v{k}" for k in range(i, j)]
                s = _emit_struct_fmt(code, ">" + fmt)
                size = struct.calcsize(">" + fmt)
                lines.append(f"    {', '.join(targets)}, = {s}.unpack(io.read({size}))")
                values += targets
                i = j
            else:
                lines.append(f"    v{i} = {sub.read_expr(code)}")
                values.append(f"v{i}")
                i += 1
        items = [f"{info.name!r}: {v}" for (info, _), v in zip(regular, values, strict=True)]
        if self.flexible:
            tag_fns = {}
            for info, sub in self.tagged:
                tname, tnew = _emit_name(code, sub, "kt")
                if tnew:
                    code.append(f"def {tname}(io):\n    return {sub.read_expr(code)}\n")
                tag_fns[info.tag] = tname
                d = _default_expr(info)
                if info.kind in ("array", "struct") and info.default is not None:
                    lines.append(f"    t{info.tag} = _MISSING")
                else:
                    lines.append(f"    t{info.tag} = {d}")
            lines.append("    for _ in range(rt_tag_count(io)):")
            lines.append("        tag, data = rt_read_tag(io)")
            for k, (tag, tname) in enumerate(tag_fns.items()):
                kw = "if" if k == 0 else "elif"
                lines.append(f"        {kw} tag == {tag}:")
                lines.append(f"            t{tag} = {tname}(rt_substream(io, data))")
            for info, _ in self.tagged:
                if info.kind in ("array", "struct") and info.default is not None:
                    fresh = _fresh_default_expr(info)
                    lines.append(f"    if t{info.tag} is _MISSING:")
                    lines.append(f"        t{info.tag} = {fresh}")
                items.append(f"{info.name!r}: t{info.tag}")
        lines.append(f"    return Container({{{', '.join(items)}}})")
        return "\n".join(lines) + "\n"

    def write_stmts(self, code: Any, value: str) -> list[str]:
        name, new = _emit_name(code, self, "ksw")
        if new:
            code.append(self._emit_build_fn(code, name))
        return [f"{name}(io, {value})"]

    def _emit_build_fn(self, code: Any, name: str) -> str:
        lines = [f"def {name}(io, obj):", "    get = obj.get"]
        regular = self.regular
        i = 0
        while i < len(regular):
            info, sub = regular[i]
            if isinstance(sub, KFixed):
                j = i
                fmt = ""
                args = []
                while j < len(regular) and isinstance(regular[j][1], KFixed):
                    ij = regular[j][0]
                    fmt += regular[j][1].fmt
                    args.append(f"get({ij.name!r}, {_default_expr(ij)})")
                    j += 1
                s = _emit_struct_fmt(code, ">" + fmt)
                lines.append(f"    io.write({s}.pack({', '.join(args)}))")
                i = j
            else:
                stmts = sub.write_stmts(code, f"get({info.name!r}, {_default_expr(info)})")
                lines += ["    " + s for s in stmts]
                i += 1
        if self.flexible:
            if self.tagged:
                lines.append("    tags = []")
                for info, sub in self.tagged:
                    bname, bnew = _emit_name(code, sub, "ktw")
                    if bnew:
                        body = "\n".join("    " + s for s in sub.write_stmts(code, "value"))
                        code.append(
                            f"def {bname}(value):\n    io = BytesIO()\n{body}\n"
                            "    return io.getvalue()\n"
                        )
                    dflt = self.tag_default_bytes[info.tag]
                    lines.append(f"    value = get({info.name!r}, _MISSING)")
                    lines.append("    if value is not _MISSING:")
                    lines.append(f"        data = {bname}(value)")
                    lines.append(f"        if data != {dflt!r}:")
                    lines.append(f"            tags.append(({info.tag}, data))")
                lines.append("    rt_w_tags(io, tags)")
            else:
                lines.append("    io.write(b'\\x00')")
        return "\n".join(lines) + "\n"


#: Above `MessageSpec.charge_per_byte` of every request schema (a test checks it; 141 is the
#: highest, Metadata v4's empty topic names): frames shorter than budget / this skip the budget
#: without looking their schema up.
MAX_CHARGE_PER_BYTE = 256


def max_charge_per_byte(con: KafkaConstruct) -> int:
    """An upper bound of the budget a value of `con` charges per wire byte (rounded up).

    Every charge is for elements (or tags) whose minimal bytes are counted at the charge and
    are disjoint from other elements' minimal bytes, so a body of `b` bytes charges at most
    `b * max_charge_per_byte`: when that fits in the budget, the codec skips the budget.
    """
    if isinstance(con, KArray):
        element = con.element
        unit = max(element.min_size, 1)
        per = con.element_charge
        if isinstance(element, KBlob):
            per += max(STRING_COST, BYTES_COST)
        return max(-(-per // unit), max_charge_per_byte(element))
    if isinstance(con, KNullableStruct):
        return max_charge_per_byte(con.struct)
    if isinstance(con, KStruct):
        ratios = [max_charge_per_byte(c) for c in con.all_subcons]
        if con.flexible:
            ratios.append(-(-TAG_COST // 2))  # a tag takes >= 2 bytes (tag, size)
        return max(ratios, default=0)
    return 0


# --------------------------------------------------------------------------------------
# schema construction
# --------------------------------------------------------------------------------------


def build_construct(info: FieldInfo, flexible: bool) -> KafkaConstruct:
    """The construct reading/writing one field (or an array element) of one version."""
    kind = info.kind
    if kind == "array":
        assert info.element is not None
        if info.element == "struct":
            elem: KafkaConstruct = build_struct(info.fields, flexible)
        else:
            elem = _scalar(info.element, flexible, nullable=False)
        return KArray(elem, flexible, info.nullable)
    if kind == "struct":
        st = build_struct(info.fields, flexible)
        return KNullableStruct(st) if info.nullable else st
    return _scalar(kind, flexible, info.nullable)


def _scalar(kind: str, flexible: bool, nullable: bool) -> KafkaConstruct:
    if kind in FIXED_FORMATS:
        return KFixed(FIXED_FORMATS[kind])
    if kind == "uuid":
        return KUuid()
    if kind == "string":
        return KBlob("string", flexible, nullable)
    # bytes and records (records are opaque bytes here)
    return KBlob("bytes", flexible, nullable, records=kind == "records")


def build_struct(infos: Sequence[FieldInfo], flexible: bool) -> KStruct:
    return KStruct(infos, [build_construct(i, flexible) for i in infos], flexible)


class MessageSpec:
    """One request/response/data message: its fields over versions, schemas per version."""

    def __init__(
        self,
        name: str,
        valid_versions: tuple[int, int],
        flexible_min: int | None,
        fields: tuple[Field, ...],
    ) -> None:
        self.name = name
        self.valid_versions = valid_versions
        self.flexible_min = flexible_min
        self.declared = fields
        self._fields: dict[int, tuple[FieldInfo, ...]] = {}
        self._schemas: dict[int, Any] = {}
        self._interpreted: dict[int, KStruct] = {}
        self._charge_ratios: dict[int, int] = {}
        self.compile_failures: dict[int, str] = {}

    def _check(self, version: int) -> None:
        lo, hi = self.valid_versions
        if not lo <= version <= hi:
            raise ValueError(f"{self.name} has no version {version} (valid {lo}-{hi})")

    def is_flexible(self, version: int) -> bool:
        return self.flexible_min is not None and version >= self.flexible_min

    def fields(self, version: int) -> tuple[FieldInfo, ...]:
        """The declarative description of `version` (see `FieldInfo`)."""
        cached = self._fields.get(version)
        if cached is None:
            self._check(version)
            cached = resolve_fields(self.declared, version)
            self._fields[version] = cached
        return cached

    def interpreted(self, version: int) -> KStruct:
        """The (uncompiled) construct of `version`."""
        cached = self._interpreted.get(version)
        if cached is None:
            cached = build_struct(self.fields(version), self.is_flexible(version))
            self._interpreted[version] = cached
        return cached

    def charge_per_byte(self, version: int) -> int:
        """`max_charge_per_byte` of `version`'s construct (cached)."""
        cached = self._charge_ratios.get(version)
        if cached is None:
            cached = self._charge_ratios[version] = max_charge_per_byte(self.interpreted(version))
        return cached

    def schema(self, version: int) -> Any:
        """The construct of `version`: compiled when that works and agrees, else interpreted."""
        cached = self._schemas.get(version)
        if cached is None:
            interp = self.interpreted(version)
            cached = interp
            try:
                compiled = interp.compile()
                sample = interp.build({})
                if compiled.build({}) != sample or compiled.parse(sample) != interp.parse(sample):
                    raise ValueError("compiled schema disagrees with the interpreted one")
                cached = compiled
            except Exception as exc:  # fall back to the interpreted construct
                self.compile_failures[version] = repr(exc)
            self._schemas[version] = cached
        return cached
