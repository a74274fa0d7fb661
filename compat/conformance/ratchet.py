"""The ratchet: compat/conformance/identical.txt lists what compared identical once and must
stay identical.

Lines are `step <step id>` or `pair <Api> v<N>` (an API/version both sides advertise whose
every step is identical); `#` starts a comment. `check` fails when a listed entry differs
again or is no longer played (a renamed or removed step must be taken out of the file by
hand, with the reason in the commit); `update` adds what is newly identical and never
removes anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from compat.conformance.classify import IDENTICAL, Pair
from compat.conformance.harness import StepResult

PATH = Path(__file__).resolve().with_name("identical.txt")
HEADER = (
    "# compat/conformance: steps and API/version pairs that compared identical with Apache\n"
    "# Kafka. The run fails when one differs again; `compat/conformance/run --update` adds newly\n"
    "# identical ones. Remove an entry only by hand, saying why in the commit.\n"
)


def identical_now(results: Sequence[StepResult], pairs: Sequence[Pair]) -> set[str]:
    entries = {f"step {r.step.id}" for r in results if r.identical}
    entries |= {f"pair {p.name}" for p in pairs if p.status == IDENTICAL}
    return entries


def played_now(results: Sequence[StepResult], pairs: Sequence[Pair]) -> set[str]:
    return {f"step {r.step.id}" for r in results} | {f"pair {p.name}" for p in pairs}


def load(path: Path = PATH) -> set[str]:
    if not path.exists():
        return set()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line}


def check(listed: set[str], identical: set[str], played: set[str]) -> list[str]:
    """What breaks the ratchet, one line each (empty: it holds)."""
    problems = [f"differs again: {e}" for e in sorted(listed & played - identical)]
    problems += [
        f"no longer played (remove by hand if intended): {e}" for e in sorted(listed - played)
    ]
    return problems


def write(entries: set[str], path: Path = PATH) -> None:
    steps = sorted(e for e in entries if e.startswith("step "))
    pairs = sorted(e for e in entries if not e.startswith("step "))
    path.write_text(HEADER + "".join(f"{e}\n" for e in pairs + steps))


def update(identical: set[str], path: Path = PATH) -> set[str]:
    """Add `identical` to the file (nothing is ever removed); returns what was added."""
    listed = load(path)
    write(listed | identical, path)
    return identical - listed
