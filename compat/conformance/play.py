"""Playing the script to one side: phases in order, the scenarios of a phase concurrently."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from compat.conformance.script import (
    Ctx,
    Do,
    Played,
    Scenario,
    Side,
    SideResult,
    Step,
)
from compat.conformance.transport import ANSWER, NOT_SENT, Outcome

MAX_CONCURRENT = 12


def play_step(ctx: Ctx, step: Step) -> Outcome:
    """Send one step on the scenario's connection and keep what it asks for."""
    try:
        if step.raw is not None:
            req = step.raw(ctx, ctx.conn)
        else:
            body = step.body(ctx) if callable(step.body) else (step.body or {})
            req = ctx.conn.request(step.api, step.version, body)
    except Exception as exc:  # a value an earlier step should have kept is missing
        return Outcome(NOT_SENT, detail=f"{type(exc).__name__}: {exc}")
    outcome = ctx.conn.exchange(req, answer_due=step.answer_due, timeout=step.timeout)
    if outcome.kind == ANSWER and step.keep is not None:
        # Nothing to keep from an error answer: the steps that need the value say not-sent.
        with contextlib.suppress(KeyError, IndexError, AttributeError, TypeError, ValueError):
            step.keep(ctx, outcome.body)
    return outcome


def play_scenario(side: Side, scenario: Scenario, result: SideResult) -> None:
    ctx = Ctx(side)
    try:
        for item in scenario.items:
            if isinstance(item, Do):
                try:
                    item.run(ctx)
                except Exception as exc:
                    result.failures.append(
                        f"{scenario.name}: {item.what}: {type(exc).__name__}: {exc}"
                    )
                continue
            result.played[item.id] = Played(item, play_step(ctx, item))
    finally:
        ctx.close()


def play(side: Side, scenarios: Sequence[Scenario]) -> SideResult:
    """The whole script on one side."""
    result = SideResult()
    for phase in sorted({s.phase for s in scenarios}):
        batch = [s for s in scenarios if s.phase == phase]
        with ThreadPoolExecutor(max_workers=MAX_CONCURRENT) as pool:
            for future in [pool.submit(play_scenario, side, s, result) for s in batch]:
                future.result()
    return result
