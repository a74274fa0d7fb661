"""tools/gen_protocol.py's types section: TypedDicts for requests (read) and responses (build)."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from types import ModuleType

import pytest

from protocol.messages import API_MODULES
from protocol.primitives import FieldInfo

ROOT = Path(__file__).resolve().parents[3]


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protocol", ROOT / "tools/gen_protocol.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_protocol", module)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()

REQUEST = {
    "name": "DemoRequest",
    "fields": [
        {"name": "TransactionalId", "type": "string", "versions": "3+", "nullableVersions": "3+"},
        {"name": "OldField", "type": "int32", "versions": "0-2"},
        {"name": "Acks", "type": "int16", "versions": "0+"},
        {
            "name": "Topics",
            "type": "[]TopicData",
            "versions": "0+",
            "fields": [
                {"name": "Name", "type": "string", "versions": "0-12"},
                {"name": "TopicId", "type": "uuid", "versions": "13+"},
                {"name": "Records", "type": "records", "versions": "0+", "nullableVersions": "0+"},
                {"name": "Ids", "type": "[]int32", "versions": "0+"},
            ],
        },
    ],
}
RESPONSE = {
    "name": "DemoResponse",
    "fields": [
        {"name": "ThrottleTimeMs", "type": "int32", "versions": "1+", "default": "0"},
        {"name": "ErrorCode", "type": "int16", "versions": "0+"},
        {"name": "Leader", "type": "Leader", "versions": "10+", "tag": 0, "taggedVersions": "10+"},
        {"name": "Topics", "type": "[]TopicData", "versions": "0+", "fields": []},
    ],
    "commonStructs": [
        {"name": "Leader", "fields": [{"name": "LeaderId", "type": "int32", "versions": "10+"}]}
    ],
}


def test_span_clips_to_the_served_versions() -> None:
    assert gen._span("3+", (3, 13)) == (3, 13)
    assert gen._span("0-12", (3, 13)) == (3, 12)
    assert gen._span("0-2", (3, 13)) is None
    assert gen._span("none", (3, 13)) is None
    assert gen._span("5", (3, 13)) == (5, 5)


def test_request_types_mark_keys_some_served_version_lacks() -> None:
    source = "\n".join(gen.types_source(REQUEST, RESPONSE, (3, 13)))
    assert "class DemoRequest(TypedDict):" in source
    assert "transactional_id: str | None\n" in source
    assert "old_field" not in source  # only in versions we do not serve
    assert "acks: int\n" in source
    # TopicData is used by both sides: prefixed with the message name
    assert "topics: list[DemoRequestTopicData]" in source
    assert "name: NotRequired[str]  # v3-12" in source
    assert "topic_id: NotRequired[UUID]  # v13+" in source
    assert "records: bytes | memoryview | None" in source
    assert "ids: list[int]" in source
    assert "from uuid import UUID" in source
    assert source.index("class DemoRequest(") < source.index("class DemoRequestTopicData(")


def test_response_types_leave_builder_defaults_optional() -> None:
    source = "\n".join(gen.types_source(REQUEST, RESPONSE, (3, 13)))
    assert "throttle_time_ms: NotRequired[int]\n" in source  # JSON default
    assert "error_code: int\n" in source
    assert "leader: NotRequired[Leader]  # v10+" in source  # tagged, common struct
    assert "class Leader(TypedDict):\n        leader_id: int" in source
    assert "topics: list[DemoResponseTopicData]" in source
    assert "class DemoResponseTopicData(TypedDict):\n        pass" in source


def test_types_are_defined_only_while_type_checking() -> None:
    lines = gen.types_source(REQUEST, RESPONSE, (3, 13))
    assert "if TYPE_CHECKING:" in lines
    body = lines[lines.index("if TYPE_CHECKING:") + 1]
    assert all(not line or line.startswith("    ") for line in body.splitlines())


def test_generated_produce_module_declares_its_types() -> None:
    text = (ROOT / "protocol/messages/produce.py").read_text(encoding="utf-8")
    assert "    class ProduceRequest(TypedDict):" in text
    assert "    class TopicProduceData(TypedDict):" in text
    assert "    class ProduceResponse(TypedDict):" in text
    assert "    class PartitionProduceResponse(TypedDict):" in text


def _declared_types(source: str) -> dict[str, dict[str, str]]:
    """class name -> {key: annotation} of the TypedDicts under `if TYPE_CHECKING:`."""
    out: dict[str, dict[str, str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef):
            out[node.name] = {
                item.target.id: ast.unparse(item.annotation)
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    return out


def _struct_class(annotation: str) -> str:
    return re.sub(r"NotRequired\[|list\[|\]| \| None", "", annotation)


def _count(
    fields: tuple[FieldInfo, ...],
    cls: str,
    types: dict[str, dict[str, str]],
    seen: dict[str, Counter[str]],
    visits: Counter[str],
) -> None:
    visits[cls] += 1
    for f in fields:
        seen[cls][f.name] += 1
        if f.fields:
            _count(f.fields, _struct_class(types[cls][f.name]), types, seen, visits)


@pytest.mark.parametrize("module", list(API_MODULES.values()), ids=lambda m: m.NAME)
def test_types_match_the_served_versions(module: ModuleType) -> None:
    """Every key of every version is declared; NotRequired exactly where a version lacks it."""
    types = _declared_types(Path(module.__file__ or "").read_text(encoding="utf-8"))
    lo, hi = module.VALID_VERSIONS
    for side, fields_of in (
        ("Request", module.request_fields),
        ("Response", module.response_fields),
    ):
        seen: dict[str, Counter[str]] = defaultdict(Counter)
        visits: Counter[str] = Counter()
        for version in range(lo, hi + 1):
            _count(fields_of(version), module.NAME + side, types, seen, visits)
        for cls, keys in seen.items():
            assert set(types[cls]) == set(keys), cls
            for key, n in keys.items():
                optional = types[cls][key].startswith("NotRequired[")
                if n < visits[cls]:
                    assert optional, f"{cls}.{key}"
                elif side == "Request":
                    assert not optional, f"{cls}.{key}"
