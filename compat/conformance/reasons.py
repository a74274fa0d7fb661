"""Why each known difference exists: the one hand-written file of the harness's verdicts.

A `Reason` matches a difference by API key (None: any), step id pattern and field path
pattern (`*` matches anything, every other character is literal); the first match wins, so
specific reasons come before general ones. A difference no reason matches is reported as
unexplained. Kinds:
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = {
    "bug": "wirebroker bug, to fix",
    "not-built": "not built yet",
    "deliberate": "deliberate deviation",
    "environment": "environment (how the two brokers were set up, not behaviour)",
    "kafka": "Kafka quirk or bug (wirebroker's answer is valid too)",
    "unexplained": "unexplained",
}


@dataclass(frozen=True)
class Reason:
    key: str  # short name the report cites
    kind: str
    why: str
    steps: str = "*"
    path: str = "*"
    api: int | None = None


REASONS: tuple[Reason, ...] = ()
