"""Rewrite one section of docs/reliability.md, leaving the others alone.

Each section of the document sits between two marker lines::

    <!-- section: KEY -->
    ## Title
    ...
    <!-- /section: KEY -->

`update_section(key, body)` replaces what lies between the markers of KEY with `body` (which
should start with its own `## Title` line); a KEY not in the document yet is appended at the
end. The figure tools of tools/reliability/ call it with `--update-doc`; a section is only
ever written by the tool that measured it.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["DOC", "section_markers", "update_section"]

DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"


def section_markers(key: str) -> tuple[str, str]:
    return f"<!-- section: {key} -->", f"<!-- /section: {key} -->"


def update_section(key: str, body: str, doc: Path = DOC) -> None:
    """Replace (or append) section `key` of `doc` with `body`."""
    if not re.fullmatch(r"[a-z0-9-]+", key):
        raise ValueError(f"bad section key {key!r}")
    start, end = section_markers(key)
    block = f"{start}\n{body.strip()}\n{end}"
    text = doc.read_text() if doc.exists() else "# Reliability\n"
    i, j = text.find(start), text.find(end)
    if i >= 0 and j > i:
        text = text[:i] + block + text[j + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text)
