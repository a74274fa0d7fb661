"""tools/gen_protocol.py's types section: TypedDicts for requests (read) and responses (build)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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
