"""Members of the groups only some sides serve (KIP-848 consumer, share and streams groups).

A `Member` tracks one member on one side: its id (made by the client, a run name, except for
ConsumerGroupHeartbeat v0, where the broker makes it) and the member epoch its last answer
gave. A side that never answered (it does not serve the API) keeps the defaults, so every
request is still built and sent to it, and the report shows how it reacted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compat.conformance.corpus.groups import STRANGER
from compat.conformance.script import Ctx

__all__ = ["STRANGER", "Epoch", "Member", "identity", "pick", "spread"]

#: A heartbeat's member epoch: a value, a function of the side's ctx, or None (the kept one).
Epoch = Callable[[Ctx], int] | int | None


@dataclass(frozen=True)
class Member:
    label: str  # its logical name: the member id the client makes is `<token>-<label>`
    broker_made: bool = False  # ConsumerGroupHeartbeat v0: joins with "" and is given an id

    def id(self, ctx: Ctx) -> str:
        if self.broker_made:
            return str(ctx.vars.get(f"{self.label}.id", ""))
        return ctx.name(self.label)

    def epoch(self, ctx: Ctx) -> int:
        return int(ctx.vars.get(f"{self.label}.epoch", 0))

    def keep(self) -> Callable[[Ctx, Any], None]:
        """A `Step.keep`: the id and epoch of a successful heartbeat's answer."""

        def run(ctx: Ctx, answer: Any) -> None:
            if answer.error_code:
                return
            if answer.member_id:
                ctx.vars[f"{self.label}.id"] = answer.member_id
            ctx.vars[f"{self.label}.epoch"] = answer.member_epoch

        return run


def identity(ctx: Ctx, member: Member | None, epoch: Epoch = None) -> tuple[str, int]:
    """The member id and member epoch a heartbeat of `member` sends: `member` None is the
    empty member id (epoch 0); `epoch`, when given, instead of the member's kept one."""
    if epoch is None:
        current = member.epoch(ctx) if member is not None else 0
    else:
        current = epoch(ctx) if callable(epoch) else epoch
    return (member.id(ctx) if member is not None else ""), current


def pick(versions: list[int], slot: int) -> int:
    """The version for the `slot`-th request of one API in a flow: the oldest first, then
    the next, ..., the newest for every slot after that (so that a flow with at least as
    many requests as versions covers them all)."""
    return versions[min(slot, len(versions) - 1)]


def spread(primary: list[int], secondary: list[int]) -> dict[int, list[int]]:
    """Which versions of a secondary API (a describe) each flow (one per version of the
    primary API, a heartbeat) uses: the newest not above its own, and the newest flow also
    every version no other flow used."""
    out: dict[int, list[int]] = {}
    if not secondary:
        return {v: [] for v in primary}
    for v in primary:
        below = [s for s in secondary if s <= v]
        out[v] = [max(below) if below else min(secondary)]
    used = {s for vs in out.values() for s in vs}
    if primary:
        out[primary[-1]] += [s for s in secondary if s not in used]
    return out
