"""Progress of long client work (`produce`, `consume`) on stderr, for people only.

Shown when stderr is a terminal, or when $WIREBROKER_PROGRESS=1 forces it (tests, `script`);
never with `--no-progress` or WIREBROKER_PROGRESS=0, never into a pipe or file otherwise, and
never on stdout (stdout carries consumed records and JSON summaries). A rich live bar:

    produce t  ━━━━━━━━━━━━━━━━━━━━ 12.3/40.0 MB  120000 records  41000 rec/s  0:00:03
    consume t  ━━━━━━━━━━━━━━━━━━━━ 500/1000      500 records     2000 rec/s  0:00:00

The bar has a total when one is known: the file's size in bytes for `produce -f FILE`, N for
`consume -n N`, the records between the start positions and the end offsets for `consume -e`;
otherwise a spinner. Counting is cheap: `advance()` adds to local counters and hands them to
rich at most every `_REFRESH_S` (rich itself redraws from its own thread). `close()` draws the
last state and leaves it on the screen, above the command's one-line summary. When stdout is
a terminal as well, what the command prints there goes through rich (above the bar) while the
bar is shown; a redirected stdout is never touched.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

PROGRESS_ENV = "WIREBROKER_PROGRESS"
_REFRESH_S = 0.1


def wanted(args: argparse.Namespace) -> tuple[bool, bool]:
    """(show it, force a terminal): --no-progress wins, then $WIREBROKER_PROGRESS, then isatty."""
    if getattr(args, "no_progress", False):
        return False, False
    forced = os.environ.get(PROGRESS_ENV, "").strip().lower()
    if forced in ("0", "no", "false", "off"):
        return False, False
    if forced in ("1", "yes", "true", "on"):
        return True, True
    return sys.stderr.isatty(), False


def _same_terminal() -> bool:
    """stdout is a terminal too: records are printed above the bar (rich's stdout proxy, so
    the redraws don't tear them); into a pipe or file stdout is left alone, byte for byte."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """A counter of records (and bytes) with an optional rich display (module doc)."""

    def __init__(
        self,
        args: argparse.Namespace,
        description: str,
        *,
        total: int | None = None,
        unit_bytes: bool = False,
        console: Any = None,
    ) -> None:
        self.records = 0
        self.bytes = 0
        self.unit_bytes = unit_bytes
        self._started = time.monotonic()
        self._pushed = self._started
        self._bar: Any = None
        show, force = wanted(args)
        if console is None and not show:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as RichProgress

        if console is None:
            console = Console(file=sys.stderr, force_terminal=force or None, highlight=False)
        columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
        if total is not None:
            columns += [BarColumn(), DownloadColumn() if unit_bytes else MofNCompleteColumn()]
        columns += [
            TextColumn("{task.fields[records]} records"),
            TextColumn("{task.fields[rate]:.0f} rec/s"),
            TimeElapsedColumn(),
        ]
        self._bar = RichProgress(
            *columns,
            console=console,
            transient=False,
            redirect_stdout=_same_terminal(),
            redirect_stderr=False,
        )
        self._task = self._bar.add_task(description, total=total, records=0, rate=0.0)
        self._bar.start()

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def advance(self, records: int = 1, nbytes: int = 0) -> None:
        self.records += records
        self.bytes += nbytes
        if self._bar is not None:
            now = time.monotonic()
            if now - self._pushed >= _REFRESH_S:
                self._pushed = now
                self._push(now)

    def _push(self, now: float) -> None:
        elapsed = max(now - self._started, 1e-6)
        self._bar.update(
            self._task,
            completed=self.bytes if self.unit_bytes else self.records,
            records=self.records,
            rate=self.records / elapsed,
        )

    def close(self) -> None:
        """Draw the final counts and stop the display (idempotent)."""
        if self._bar is not None:
            self._push(time.monotonic())
            self._bar.refresh()
            self._bar.stop()
            self._bar = None
