#!/usr/bin/env python3
"""Generate `protocol/messages/*.py` from Kafka's JSON message definitions.

Source: Apache Kafka 4.4.0's own definitions, the `common/message/*.json` files inside the
kafka-clients jar that compat/oracle fetches (`compat.oracle.jars.message_definitions()`:
Maven into ~/.cache/wirebroker once, offline after; read with zipfile, never copied into the
repository). The protocol is the specification and Kafka 4.4 is the broker wirebroker is
measured against (compat/oracle), so the codecs come from the same release as the oracle:
every field, tagged field, version range and unstable version exactly as Kafka 4.4 declares
them, and ApiVersions can be compared range for range.

Selected: every `*Request.json` / `*Response.json` pair whose request lists `"broker"` in its
`"listeners"`, that is every API a client (or another broker) can send to a broker; the
controller-only and KRaft-internal APIs (Vote, BeginQuorumEpoch, BrokerHeartbeat,
AllocateProducerIds, ...) and the removed ZooKeeper-era ones (LeaderAndIsr, ...) are left out.
Plus the `"type": "data"` definitions in `DATA_TYPES` (ConsumerProtocolAssignment,
ConsumerProtocolSubscription). RequestHeader/ResponseHeader are skipped: `protocol/headers.py`
is hand-written. A generated module exists for an API does not mean it is served: the broker
advertises only the APIs and versions its handlers register (wirebroker/handlers/registry.py).

Output: one module per API, named after the API in snake_case (`produce.py`,
`offset_for_leader_epoch.py`), one per data type, and `__init__.py` listing them. Each module
declares `API_KEY`, `NAME`, `VALID_VERSIONS`, `FLEXIBLE_MIN`, the `REQUEST`/`RESPONSE`
`MessageSpec`s (fields with their versions, nullable versions, defaults converted to Python
values, tags) and the accessors `request_schema(v)`, `response_schema(v)`,
`request_fields(v)`, `response_fields(v)`. The JSON's prose ("about") is not copied. Fields
of `commonStructs` are emitted once as module-level tuples.

Each API module ends with a types section, defined under `if TYPE_CHECKING:` only (no runtime
cost): a `TypedDict` per struct, `<Name>Request` (what a parsed request holds, over all served
versions; keys some version lacks are NotRequired) and `<Name>Response` (what a handler builds;
NotRequired also where the builder fills a default). Nested structs keep Kafka's JSON struct
names, prefixed with the message name when request and response both use the name.

A latest version marked `"latestVersionUnstable": true` is left out of `VALID_VERSIONS`
(Kafka does not serve unstable versions unless told to); its fields stay declared.

The output is formatted with `ruff format` (the repository's configuration) so it is
deterministic and lint-clean.

Usage: `python tools/gen_protocol.py` (write) or `python tools/gen_protocol.py --check`
(exit 1 listing the files that differ from what would be generated).
"""

from __future__ import annotations

import argparse
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from compat.oracle.jars import KAFKA_VERSION, MESSAGE_DIR, message_definitions  # noqa: E402

OUT_DIR = ROOT / "protocol" / "messages"
SOURCE = f"Apache Kafka {KAFKA_VERSION}"
JAR = f"kafka-clients-{KAFKA_VERSION}.jar"
COMMENTS = re.compile(r"(?m)((?:^\s*//.*\n?)+)")
#: The data definitions (not APIs) that are generated: those the broker reads and writes.
DATA_TYPES = ("ConsumerProtocolAssignment", "ConsumerProtocolSubscription")
_SNAKE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake(name: str) -> str:
    """JSON field name -> snake_case (TopicData -> topic_data, IsrNodes -> isr_nodes)."""
    out = _SNAKE.sub("_", name).lower()
    return out + "_" if keyword.iskeyword(out) else out


def load(text: str) -> dict[str, Any]:
    """One JSON definition without its `//` comment lines."""
    data: dict[str, Any] = json.loads(COMMENTS.sub("", text))
    return data


def served_by_brokers(request: dict[str, Any]) -> bool:
    """True when a broker listens for the request (its JSON `listeners` names "broker")."""
    return "broker" in request.get("listeners", [])


def versions_of(spec: str) -> tuple[int, int]:
    if spec.endswith("+"):
        raise ValueError(f"open-ended validVersions {spec!r}")
    lo, sep, hi = spec.partition("-")
    return (int(lo), int(hi)) if sep else (int(lo), int(lo))


def flexible_min(spec: str) -> int | None:
    if spec == "none":
        return None
    if not spec.endswith("+"):
        raise ValueError(f"unexpected flexibleVersions {spec!r}")
    return int(spec[:-1])


def convert_default(ftype: str, raw: Any, where: str) -> Any:
    """The JSON `default` (often a string) as the Python value of the field's type."""
    if ftype.startswith("[]") or ftype[:1].isupper():
        if raw == "null":
            return None
        raise ValueError(f"{where}: unsupported default {raw!r} for {ftype}")
    if ftype in ("int8", "int16", "int32", "int64", "uint16"):
        return raw if isinstance(raw, int) else int(str(raw), 0)
    if ftype == "float64":
        return float(raw)
    if ftype == "bool":
        if isinstance(raw, bool):
            return raw
        if raw in ("true", "false"):
            return raw == "true"
        raise ValueError(f"{where}: bad bool default {raw!r}")
    if ftype in ("string", "bytes", "records"):
        if raw == "null":
            return None
        if ftype == "string":
            return str(raw)
        if raw == "":
            return b""
        raise ValueError(f"{where}: unsupported default {raw!r} for {ftype}")
    if ftype == "uuid":
        raise ValueError(f"{where}: uuid defaults are not supported")
    raise ValueError(f"{where}: unknown type {ftype}")


class Emitter:
    """Turns one JSON message's fields into `Field(...)` source text."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.message_name = message["name"]
        self.common = {s["name"]: s for s in message.get("commonStructs", [])}
        self.common_order = [s["name"] for s in message.get("commonStructs", [])]
        self.used_common: set[str] = set()

    def struct_name(self, ftype: str) -> str | None:
        inner = ftype[2:] if ftype.startswith("[]") else ftype
        return inner if inner[:1].isupper() else None

    def common_var(self, name: str) -> str:
        return "_" + snake(name).upper()

    def field(self, f: dict[str, Any], where: str) -> str:
        if "flexibleVersions" in f:
            raise ValueError(f"{where}.{f['name']}: field-level flexibleVersions unsupported")
        name = snake(f["name"])
        args = [repr(name), repr(f["type"]), repr(f["versions"])]
        if "nullableVersions" in f:
            args.append(f"nullable={f['nullableVersions']!r}")
        if "default" in f:
            value = convert_default(f["type"], f["default"], f"{where}.{f['name']}")
            args.append(f"default={value!r}")
        if "tag" in f:
            args.append(f"tag={int(f['tag'])}")
            args.append(f"tagged={f.get('taggedVersions', f['versions'])!r}")
        struct = self.struct_name(f["type"])
        if struct is not None:
            if "fields" in f:
                args.append(f"fields={self.fields(f['fields'], where + '.' + f['name'])}")
            elif struct in self.common:
                self.used_common.add(struct)
                args.append(f"fields={self.common_var(struct)}")
            else:
                raise ValueError(f"{where}.{f['name']}: struct {struct} has no fields")
        return f"Field({', '.join(args)})"

    def fields(self, fields: list[dict[str, Any]], where: str) -> str:
        items = [self.field(f, where) for f in fields]
        if not items:
            return "()"
        return "(" + ", ".join(items) + ",)"

    def common_defs(self) -> list[str]:
        """Definitions of the used common structs, each after the ones it refers to."""
        out: list[str] = []
        done: set[str] = set()

        def emit(name: str) -> None:
            if name in done:
                return
            done.add(name)
            before = set(self.used_common)
            body = self.fields(self.common[name]["fields"], name)
            for dep in sorted(self.used_common - before):
                emit(dep)
            for dep in self.deps(self.common[name]["fields"]):
                emit(dep)
            out.append(f"{self.common_var(name)} = {body}")

        for name in self.common_order:
            if name in self.used_common:
                emit(name)
        return out

    def deps(self, fields: list[dict[str, Any]]) -> list[str]:
        found = []
        for f in fields:
            struct = self.struct_name(f["type"])
            if struct is None:
                continue
            if "fields" in f:
                found += self.deps(f["fields"])
            elif struct in self.common:
                found.append(struct)
        return found


# --- types: TypedDicts for mypy (no runtime use) ---------------------------------------------

_PY_TYPES = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "int",
    "uint16": "int",
    "float64": "float",
    "bool": "bool",
    "string": "str",
    "bytes": "bytes",
    "uuid": "UUID",
}
#: Produce records are decoded as memoryviews of the frame (protocol.fastcodec).
_RECORDS = {"read": "bytes | memoryview", "build": "bytes"}
_MAX_VERSION = 1 << 15


def _span(spec: str, within: tuple[int, int]) -> tuple[int, int] | None:
    """The versions of `spec` ("3+", "0-12", "5", "none") inside `within`, or None."""
    if spec == "none":
        return None
    if spec.endswith("+"):
        lo, hi = int(spec[:-1]), _MAX_VERSION
    else:
        lo, hi = versions_of(spec)
    lo, hi = max(lo, within[0]), min(hi, within[1])
    return (lo, hi) if lo <= hi else None


def _struct_refs(fields: list[dict[str, Any]], common: dict[str, Any]) -> set[str]:
    """JSON struct names used by `fields`, nested and common ones included."""
    found: set[str] = set()
    for f in fields:
        inner = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        if not inner[:1].isupper():
            continue
        found.add(inner)
        sub = f.get("fields") or common.get(inner, {}).get("fields", [])
        found |= _struct_refs(sub, common)
    return found


def _message_refs(message: dict[str, Any]) -> set[str]:
    common = {s["name"]: s for s in message.get("commonStructs", [])}
    return _struct_refs(message.get("fields", []), common)


class TypeEmitter:
    """One message -> TypedDict classes, one per struct, nested structs after their parent.

    mode "read" (requests as handlers read them): a key is NotRequired when some served
    version lacks it. mode "build" (responses as handlers build them): also NotRequired when
    the builder fills it (a JSON default, or a tagged field).
    """

    def __init__(
        self, message: dict[str, Any], valid: tuple[int, int], mode: str, rename: set[str]
    ) -> None:
        self.message = message
        self.valid = valid
        self.mode = mode
        self.rename = rename
        self.common = {s["name"]: s for s in message.get("commonStructs", [])}
        self.classes: list[str] = []
        self.seen: set[str] = set()
        self.used: set[str] = set()

    def name(self, struct: str) -> str:
        return self.message["name"] + struct if struct in self.rename else struct

    def emit(self) -> list[str]:
        self.struct(self.message["name"], self.message.get("fields", []), self.valid)
        return self.classes

    def struct(self, cls: str, fields: list[dict[str, Any]], span: tuple[int, int]) -> None:
        if cls in self.seen:
            return
        self.seen.add(cls)
        body: list[str] = []
        nested: list[tuple[str, list[dict[str, Any]], tuple[int, int]]] = []
        for f in fields:
            fspan = _span(f["versions"], span)
            if fspan is None:
                continue
            body.append(self.member(f, fspan, span, nested))
        self.classes.append(f"class {cls}(TypedDict):\n" + ("\n".join(body) or "    pass"))
        for sub in nested:
            self.struct(*sub)

    def member(
        self,
        f: dict[str, Any],
        fspan: tuple[int, int],
        span: tuple[int, int],
        nested: list[tuple[str, list[dict[str, Any]], tuple[int, int]]],
    ) -> str:
        ftype = f["type"]
        array = ftype.startswith("[]")
        inner = ftype[2:] if array else ftype
        if inner[:1].isupper():
            py = self.name(inner)
            sub = f["fields"] if "fields" in f else self.common[inner]["fields"]
            nested.append((py, sub, fspan))
        elif inner == "records":
            py = _RECORDS[self.mode]
        else:
            py = _PY_TYPES[inner]
            if inner == "uuid":
                self.used.add("UUID")
        if array:
            py = f"list[{py}]"
        if _span(f.get("nullableVersions", "none"), fspan) is not None and "None" not in py:
            py += " | None"
        optional = fspan != span
        if self.mode == "build" and ("default" in f or "tag" in f):
            optional = True
        if optional:
            self.used.add("NotRequired")
            py = f"NotRequired[{py}]"
        note = "" if fspan == span else f"  # v{_versions_text(fspan, self.valid)}"
        return f"    {snake(f['name'])}: {py}{note}"


def _versions_text(span: tuple[int, int], valid: tuple[int, int]) -> str:
    lo, hi = span
    if hi == valid[1]:
        return f"{lo}+"
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def types_source(req: dict[str, Any], resp: dict[str, Any], valid: tuple[int, int]) -> list[str]:
    """The TypedDict section of an API module (under `if TYPE_CHECKING:`)."""
    req_refs, resp_refs = _message_refs(req), _message_refs(resp)
    clashes = (req_refs & resp_refs) | ((req_refs | resp_refs) & {req["name"], resp["name"]})
    emitters = [
        TypeEmitter(req, valid, "read", clashes),
        TypeEmitter(resp, valid, "build", clashes),
    ]
    classes = [c for em in emitters for c in em.emit()]
    used = set().union(*(em.used for em in emitters))
    imports = ["from typing import " + ", ".join(sorted({"TypedDict"} | (used & {"NotRequired"})))]
    if "UUID" in used:
        imports.append("from uuid import UUID")
    body = "\n".join([*imports, *classes])
    return [TYPES_HEADER, "if TYPE_CHECKING:", textwrap.indent(body, "    ")]


TYPES_HEADER = """
# --- Types for mypy ----------------------------------------------------------------------------
# Defined only while type checking (no import cost): import them under `if TYPE_CHECKING:`.
# Decoders still return construct Containers and builders take plain dicts; these describe them.
# `{Name}Request` is what a parsed request holds (a key is NotRequired when a served version
# lacks it: read it with .get()). `{Name}Response` is what a handler builds (NotRequired: a
# served version lacks it, or the builder fills its default). Nested structs keep Kafka's JSON
# struct names, prefixed with the message name where request and response both use one.
"""


def spec_source(var: str, message: dict[str, Any], valid: tuple[int, int]) -> list[str]:
    em = Emitter(message)
    body = em.fields(message.get("fields", []), message["name"])
    lines = em.common_defs()
    lines.append(f"{var} = MessageSpec({message['name']!r}, VALID_VERSIONS, FLEXIBLE_MIN, {body})")
    return lines


def _valid(message: dict[str, Any]) -> tuple[tuple[int, int], int | None]:
    lo, hi = versions_of(message["validVersions"])
    unstable = hi if message.get("latestVersionUnstable") else None
    if unstable is not None:
        hi -= 1
    return (lo, hi), unstable


def banner(sources: list[str]) -> str:
    files = ", ".join(f"{MESSAGE_DIR}{s}" for s in sources)
    return (
        f"# AUTOGENERATED by tools/gen_protocol.py from {SOURCE} ({JAR}: {files}).\n"
        "# DO NOT EDIT: regenerate with `python tools/gen_protocol.py`.\n"
    )


def api_module(base: str, req: dict[str, Any], resp: dict[str, Any], sources: list[str]) -> str:
    if req["apiKey"] != resp["apiKey"]:
        raise ValueError(f"{base}: request/response api keys differ")
    if req["flexibleVersions"] != resp["flexibleVersions"]:
        raise ValueError(f"{base}: request/response flexible versions differ")
    req_valid, unstable = _valid(req)
    resp_valid, _ = _valid(resp)
    # Kafka serves a version only if both sides know it.
    valid = (max(req_valid[0], resp_valid[0]), min(req_valid[1], resp_valid[1]))
    fmin = flexible_min(req["flexibleVersions"])
    doc = f"{base} (API key {req['apiKey']}): versions {valid[0]}-{valid[1]}"
    doc += f", flexible from {fmin}." if fmin is not None else ", never flexible."
    if unstable is not None:
        doc += f" Version {unstable} is unstable upstream and not served."
    req_lines = spec_source("REQUEST", req, valid)
    resp_lines = spec_source("RESPONSE", resp, valid)
    # keep common-struct names of request and response apart
    req_lines = _prefix_common(req_lines, "REQUEST")
    resp_lines = _prefix_common(resp_lines, "RESPONSE")
    type_lines = types_source(req, resp, valid)
    parts = [
        banner(sources),
        f'"""{doc}"""\n',
        "from __future__ import annotations\n",
        "from typing import TYPE_CHECKING, Any\n",
        "from protocol.primitives import Field, FieldInfo, MessageSpec\n",
        f"API_KEY = {req['apiKey']}",
        f"NAME = {base!r}",
        f"VALID_VERSIONS = {valid!r}",
        f"FLEXIBLE_MIN: int | None = {fmin!r}\n",
        *req_lines,
        *resp_lines,
        "",
        _accessors(),
        *type_lines,
    ]
    return "\n".join(parts)


def _prefix_common(lines: list[str], side: str) -> list[str]:
    names = re.findall(r"^(_[A-Z0-9_]+) = ", "\n".join(lines), flags=re.M)
    out = []
    for line in lines:
        for n in names:
            line = re.sub(rf"\b{n}\b", f"_{side}{n}", line)
        out.append(line)
    return out


def _accessors() -> str:
    return '''
def request_schema(version: int) -> Any:
    """The request construct of `version` (built on first use, cached)."""
    return REQUEST.schema(version)


def response_schema(version: int) -> Any:
    """The response construct of `version` (built on first use, cached)."""
    return RESPONSE.schema(version)


def request_fields(version: int) -> tuple[FieldInfo, ...]:
    """The request's fields in `version` (name, kind, nullable, default, tag, ...)."""
    return REQUEST.fields(version)


def response_fields(version: int) -> tuple[FieldInfo, ...]:
    """The response's fields in `version`."""
    return RESPONSE.fields(version)
'''


def data_module(base: str, data: dict[str, Any], source: str) -> str:
    valid, _unstable = _valid(data)
    fmin = flexible_min(data["flexibleVersions"])
    doc = f"{base} (data type, not an API): versions {valid[0]}-{valid[1]}"
    doc += f", flexible from {fmin}." if fmin is not None else ", never flexible."
    lines = spec_source("SCHEMA", data, valid)
    parts = [
        banner([source]),
        f'"""{doc}"""\n',
        "from __future__ import annotations\n",
        "from typing import Any\n",
        "from protocol.primitives import Field, FieldInfo, MessageSpec\n",
        f"NAME = {base!r}",
        f"VALID_VERSIONS = {valid!r}",
        f"FLEXIBLE_MIN: int | None = {fmin!r}\n",
        *lines,
        "",
        '''
def schema(version: int) -> Any:
    """The construct of `version` (built on first use, cached)."""
    return SCHEMA.schema(version)


def fields(version: int) -> tuple[FieldInfo, ...]:
    """The fields in `version`."""
    return SCHEMA.fields(version)
''',
    ]
    return "\n".join(parts)


def init_module(apis: list[tuple[int, str]], datas: list[str]) -> str:
    imports = sorted([m for _, m in apis] + datas)
    lines = [
        banner(["*Request.json", "*Response.json", "ConsumerProtocol*.json"]),
        '"""Generated message schemas: `API_MODULES` maps API key -> module."""\n',
        "from __future__ import annotations\n",
        "from types import ModuleType\n",
    ]
    lines += [f"from protocol.messages import {m}" for m in imports]
    lines.append("")
    lines.append("API_MODULES: dict[int, ModuleType] = {")
    lines += [f"    {key}: {mod}," for key, mod in sorted(apis)]
    lines.append("}")
    lines.append("DATA_MODULES: dict[str, ModuleType] = {")
    lines += [f"    {mod!r}: {mod}," for mod in sorted(datas)]
    lines.append("}")
    lines.append("")
    lines.append(
        "__all__ = ['API_MODULES', 'DATA_MODULES', " + ", ".join(repr(m) for m in imports) + "]"
    )
    return "\n".join(lines) + "\n"


def ruff_format(sources: dict[str, str]) -> dict[str, str]:
    """Each source sorted (isort rules) and formatted by ruff as if it were
    `protocol/messages/<name>` (the repository's configuration); files in parallel, since the
    cost is ruff's start-up, twice per file."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise SystemExit("ruff is required to format the generated code")

    def one(name: str, text: str) -> str:
        rel = f"protocol/messages/{name}"
        for cmd in (
            [ruff, "check", "--fix", "--quiet", "--select", "I", "--stdin-filename", rel, "-"],
            [ruff, "format", "--quiet", "--stdin-filename", rel, "-"],
        ):
            proc = subprocess.run(
                cmd, input=text, capture_output=True, text=True, cwd=ROOT, check=False
            )
            if proc.returncode != 0:
                raise SystemExit(f"ruff failed on {name}: {proc.stderr}")
            text = proc.stdout
        return text

    with ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
        futures = {name: pool.submit(one, name, text) for name, text in sources.items()}
        return {name: future.result() for name, future in futures.items()}


def generate() -> dict[str, str]:
    """File name (inside protocol/messages) -> source text."""
    texts = message_definitions()
    sources: dict[str, str] = {}
    apis: list[tuple[int, str]] = []
    for name in sorted(texts):
        if not name.endswith("Request.json"):
            continue
        req = load(texts[name])
        if req.get("type") != "request":
            continue  # RequestHeader
        if not served_by_brokers(req):
            continue
        base = name[: -len("Request.json")]
        resp_name = base + "Response.json"
        if resp_name not in texts:
            raise SystemExit(f"{name} has no response definition")
        resp = load(texts[resp_name])
        mod = snake(base)
        sources[mod + ".py"] = api_module(base, req, resp, [name, resp_name])
        apis.append((req["apiKey"], mod))
    datas: list[str] = []
    for stem in DATA_TYPES:
        data = load(texts[stem + ".json"])
        if data.get("type") != "data":
            raise SystemExit(f"{stem}: unexpected message type {data.get('type')}")
        mod = snake(stem)
        sources[mod + ".py"] = data_module(stem, data, stem + ".json")
        datas.append(mod)
    sources["__init__.py"] = init_module(apis, datas)
    return ruff_format(sources)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed files differ")
    args = parser.parse_args(argv)
    wanted = generate()
    existing = {p.name for p in OUT_DIR.glob("*.py")} if OUT_DIR.exists() else set()
    if args.check:
        bad = sorted(
            name
            for name, text in wanted.items()
            if not (OUT_DIR / name).exists() or (OUT_DIR / name).read_text(encoding="utf-8") != text
        )
        bad += sorted(f"{name} (stale, not generated)" for name in existing - set(wanted))
        for name in bad:
            print(f"protocol/messages/{name} differs from the generator's output")
        return 1 if bad else 0
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for name, text in wanted.items():
        target = OUT_DIR / name
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    for name in sorted(existing - set(wanted)):
        (OUT_DIR / name).unlink()
    print(f"wrote {len(wanted)} files to {OUT_DIR.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
