"""STAND-IN (helper k848) for the server-side assignors helper asg writes: the interface of
/tmp/briefs/assignor_api.md with a trivial "uniform" and "range"; the lead keeps asg's version
at merge. Pure: no I/O, no trio, no clock."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

TopicKey = uuid.UUID


@dataclass(frozen=True)
class MemberSpec:
    subscribed: frozenset[TopicKey]
    rack: str | None = None
    instance_id: str | None = None
    assigned: Mapping[TopicKey, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicSpec:
    partitions: int
    racks: Mapping[int, frozenset[str]] = field(default_factory=dict)


class AssignorError(Exception):
    """An assignment that cannot be computed."""


class Assignor(Protocol):
    name: str

    def assign(
        self, members: Mapping[str, MemberSpec], topics: Mapping[TopicKey, TopicSpec]
    ) -> dict[str, dict[TopicKey, frozenset[int]]]: ...


class _Spread:
    """Each topic's partitions dealt round-robin over its subscribers (sorted ids); a
    partition stays with its current owner while that owner is under its share."""

    def __init__(self, name: str) -> None:
        self.name = name

    def assign(
        self, members: Mapping[str, MemberSpec], topics: Mapping[TopicKey, TopicSpec]
    ) -> dict[str, dict[TopicKey, frozenset[int]]]:
        out: dict[str, dict[TopicKey, set[int]]] = {m: {} for m in members}
        for tid in sorted(topics, key=str):
            subs = sorted(m for m, spec in members.items() if tid in spec.subscribed)
            if not subs:
                continue
            n = topics[tid].partitions
            quota = {
                m: n // len(subs) + (1 if i < n % len(subs) else 0) for i, m in enumerate(subs)
            }
            free = []
            for p in range(n):
                owner = next((m for m in subs if p in members[m].assigned.get(tid, ())), None)
                if owner is not None and quota[owner] > 0:
                    out[owner].setdefault(tid, set()).add(p)
                    quota[owner] -= 1
                else:
                    free.append(p)
            for p in free:
                m = max(subs, key=lambda s: (quota[s], -subs.index(s)))
                out[m].setdefault(tid, set()).add(p)
                quota[m] -= 1
        return {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in out.items()}


UNIFORM: Assignor = _Spread("uniform")
RANGE: Assignor = _Spread("range")
ASSIGNORS: Mapping[str, Assignor] = {"uniform": UNIFORM, "range": RANGE}


def assignors_from_config(names: Sequence[str]) -> list[Assignor]:
    out = []
    for n in names:
        a = ASSIGNORS.get(n.strip())
        if a is None:
            raise ValueError(f"unknown assignor {n!r}")
        out.append(a)
    return out
