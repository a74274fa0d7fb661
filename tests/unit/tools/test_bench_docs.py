"""docs/benchmarks.md and the bench tools that rewrite its marked blocks (`--write-docs`): every
tool's markers are in the file once, and its writer replaces its block alone, so a run of one
tool never eats the hand-written text or another tool's figures. No benchmark is run: the
writers get the block already there (the file must come back byte for byte) and a fake one."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "tools" / "bench"
DOC = ROOT / "docs" / "benchmarks.md"

#: tool -> the writer its main() calls: `_peers.write_section` (section without markers) or
#: its own `write_docs` (section with them)
TOOLS = {
    "bench_broker": "_peers",
    "bench_groups": "_peers",
    "bench_txn": "_peers",
    "bench_failover": "_peers",
    "bench_cluster": "_peers",
    "bench_admin": "own",
    "bench_fetch_sessions": "own",
}


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_bench_docs_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def markers(tool: str) -> tuple[str, str]:
    """The tool's (start, end) markers, read from its source without importing it (some tools
    put test harnesses on sys.path at import)."""
    found: dict[str, object] = {}
    for node in ast.parse((BENCH / f"{tool}.py").read_text()).body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pair = isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
            names = target.elts if isinstance(target, ast.Tuple) and pair else [target]
            value = node.value
            values = value.elts if isinstance(value, ast.Tuple) and pair else [value]
            for n, v in zip(names, values, strict=False):
                if isinstance(n, ast.Name) and isinstance(v, ast.Constant):
                    found[n.id] = v.value
    start = found.get("START_MARK", found.get("START"))
    end = found.get("END_MARK", found.get("END"))
    assert start == f"<!-- {tool}:start -->" and end == f"<!-- {tool}:end -->"
    return str(start), str(end)


def write(tool: str, path: Path, inner: str) -> None:
    """Write the block whose text between the markers is `inner` with the tool's writer."""
    start, end = markers(tool)
    if TOOLS[tool] == "_peers":
        sys.path.insert(0, str(BENCH))
        try:
            _load("_peers").write_section(path, inner, start, end)
        finally:
            sys.path.remove(str(BENCH))
    elif tool == "bench_admin":
        _load(tool).write_docs(path, f"{start}\n{inner}{end}")
    else:
        _load(tool).write_docs(path, f"{start}\n{inner}{end}\n")


def split(text: str, tool: str) -> tuple[str, str, str]:
    start, end = markers(tool)
    assert text.count(start) == 1 and text.count(end) == 1
    head, rest = text.split(start, 1)
    inner, tail = rest.split(end, 1)
    return head, inner.removeprefix("\n"), tail


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_a_tool_rewrites_its_block_and_nothing_else(tool: str, tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    original = DOC.read_text(encoding="utf-8")
    head, inner, tail = split(original, tool)
    doc.write_text(original, encoding="utf-8")
    write(tool, doc, inner)
    assert doc.read_text(encoding="utf-8") == original
    fake = "## Fake figures\n\n| measure | value |\n|---|---:|\n| x | 1 |\n"
    write(tool, doc, fake)
    assert split(doc.read_text(encoding="utf-8"), tool) == (head, fake, tail)


def test_the_fetch_session_tool_renders_a_fake_result_into_the_doc(tmp_path: Path) -> None:
    tool = _load("bench_fetch_sessions")
    keys = [
        *("cpu_per_s", "bytes_per_s", "answers_per_s", "cpu_ms_per_answer"),
        *("bytes_per_answer", "partitions_per_answer", "records_per_s"),
    ]
    results = {
        "sessions": [dict.fromkeys(keys, 1.0)],
        "no sessions": [dict.fromkeys(keys, 2.0)],
    }
    raw = {
        mode: {"cpu_ms_per_fetch": c, "bytes_per_answer": b}
        for mode, c, b in (("incremental", 1.0, 17.0), ("full", 2.0, 37_030.0))
    }
    args = argparse.Namespace(partitions=1000, seconds=20.0, rate=200, rounds=2, raw_requests=200)
    text = tool.render(args, results, raw, "load average 0.1")
    doc = tmp_path / "benchmarks.md"
    original = DOC.read_text(encoding="utf-8")
    doc.write_text(original, encoding="utf-8")
    tool.write_docs(doc, text)
    head, inner, tail = split(doc.read_text(encoding="utf-8"), "bench_fetch_sessions")
    assert (head, tail) == split(original, "bench_fetch_sessions")[::2]
    assert "--partitions 1000 --seconds 20 --rate 200" in inner and "2.0x" in inner
