"""Rendering a command's result: a rich table for people, or one JSON document for scripts.

Tables have a header row and no borders (`box.SIMPLE_HEAD`) so they read like `kafka-topics.sh`
and `rpk` output and survive `grep`/`awk`. On a terminal rich sizes them to its width; into a
pipe or file they are never wrapped or truncated (a very wide virtual console) and carry no
colour codes. JSON goes to stdout as one indented document; messages for people (notes, dry
run reminders, summaries) go to stderr so `--format json | jq` always sees valid JSON.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any

_PIPE_WIDTH = 1 << 16


def _console() -> Any:
    from rich.console import Console

    tty = sys.stdout.isatty()
    return Console(
        file=io.StringIO(),
        force_terminal=tty,
        width=shutil.get_terminal_size().columns if tty else _PIPE_WIDTH,
        highlight=False,
        soft_wrap=not tty,
        no_color=not tty,
    )


def cell(value: Any) -> str:
    """A table cell: lists joined with commas, None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, list | tuple | set):
        return ",".join(str(v) for v in value)
    return str(value)


def table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None
) -> None:
    """Print `rows` under `columns` (upper-cased) to stdout; an optional title line above."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    console = _console()
    if title:
        print(title)
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name in columns:
        grid.add_column(name.upper(), overflow="fold" if console.is_terminal else "ignore")
    for row in rows:
        grid.add_row(*(Text(cell(v)) for v in row))  # Text: no markup parsing of '[...]'
    console.print(grid)
    for text in console.file.getvalue().splitlines():
        print(text.rstrip())  # rich pads every cell: no trailing blanks in files and pipes


def emit_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")
    sys.stdout.flush()


def note(message: str) -> None:
    """A message for people: stderr, never mixed into the JSON or table on stdout."""
    print(message, file=sys.stderr, flush=True)


def line(text: str = "") -> None:
    print(text, flush=False)
