"""Verdicts: each difference matched with its reason, each API/version given a status.

Statuses of an API/version pair (what CONFORMANCE.md counts at the top):

    identical       both sides advertise it and every step at it compared identical
    differs         both advertise it and at least one step differs
    one side only   exactly one side advertises it (the request is sent to both anyway, and
                    how each reacted is shown)
    not decodable   a side advertises it but our codecs do not know the version: listed,
                    nothing compared
    not covered     both advertise it, our codecs know it, and no step uses it (a corpus gap)
    probe           neither side advertises it: steps that test the reaction to it
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from compat.conformance.compare import Difference
from compat.conformance.corpus.probes import api_name, codec_versions
from compat.conformance.harness import KAFKA, OURS, StepResult
from compat.conformance.reasons import KINDS, REASONS, Reason

IDENTICAL, DIFFERS, ONE_SIDE, NOT_DECODABLE, NOT_COVERED, PROBE = (
    "identical",
    "differs",
    "one side only",
    "not decodable",
    "not covered",
    "probe",
)
UNEXPLAINED = Reason("unexplained", "unexplained", "no reason in compat/conformance/reasons.py")


def _glob(pattern: str) -> re.Pattern[str]:
    """A reason's pattern: `re:` and a regular expression, or alternatives separated by " | "
    where `*` matches anything and every other character is literal."""
    if pattern.startswith("re:"):
        return re.compile(pattern[3:] + r"\Z")
    alternatives = [
        "".join(".*" if c == "*" else re.escape(c) for c in alt) for alt in pattern.split(" | ")
    ]
    return re.compile("(?:" + "|".join(alternatives) + r")\Z")


_COMPILED: dict[str, re.Pattern[str]] = {}


def _match(pattern: str, text: str) -> bool:
    rx = _COMPILED.get(pattern)
    if rx is None:
        rx = _COMPILED[pattern] = _glob(pattern)
    return bool(rx.match(text))


def reason_for(
    step: StepResult, difference: Difference, reasons: Sequence[Reason] = REASONS
) -> Reason:
    """The first reason whose API, step and path patterns match, else UNEXPLAINED."""
    for reason in reasons:
        if reason.api is not None and reason.api != step.step.api:
            continue
        if _match(reason.steps, step.step.id) and _match(reason.path, difference.path):
            return reason
    return UNEXPLAINED


@dataclass
class Pair:
    """One API/version pair with its steps and status."""

    api: int
    version: int
    advertised_by: tuple[str, ...]
    steps: list[StepResult] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{api_name(self.api)} v{self.version}"

    @property
    def decodable(self) -> bool:
        return self.version in codec_versions(self.api)

    @property
    def status(self) -> str:
        if not self.advertised_by:
            return PROBE
        if not self.decodable:
            return NOT_DECODABLE
        if len(self.advertised_by) == 1:
            return ONE_SIDE
        if not self.steps:
            return NOT_COVERED
        return IDENTICAL if all(s.identical for s in self.steps) else DIFFERS


def pairs(
    advertised: Mapping[str, Mapping[int, tuple[int, int]]], results: Sequence[StepResult]
) -> list[Pair]:
    """Every API/version either side advertises or a step used, sorted."""
    found: dict[tuple[int, int], Pair] = {}

    def pair(api: int, version: int) -> Pair:
        key = (api, version)
        if key not in found:
            by = tuple(
                side
                for side in (KAFKA, OURS)
                if api in advertised[side]
                and advertised[side][api][0] <= version <= advertised[side][api][1]
            )
            found[key] = Pair(api, version, by)
        return found[key]

    for side in (KAFKA, OURS):
        for api, (low, high) in advertised[side].items():
            for v in range(low, high + 1):
                pair(api, v)
    for r in results:
        pair(r.step.api, r.step.version).steps.append(r)
    return [found[k] for k in sorted(found)]


def counts(all_pairs: Sequence[Pair]) -> dict[str, int]:
    out = {s: 0 for s in (IDENTICAL, DIFFERS, ONE_SIDE, NOT_DECODABLE, NOT_COVERED, PROBE)}
    for p in all_pairs:
        out[p.status] += 1
    return out


def kind_label(kind: str) -> str:
    return KINDS.get(kind, kind)
