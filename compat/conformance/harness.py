"""One conformance run: both brokers, the corpus played to each, the answers compared.

    with brokers() as (kafka, ours):          # the oracle and a fresh wirebroker
        run = play_both(kafka, ours)          # Run: every step's outcome on each side
        results = compare_run(run)            # StepResult per step, normalised and diffed

The oracle is the run's shared one ($WIREBROKER_ORACLE) or one started here
(`compat.oracle.kafka.shared_or_new`); wirebroker is `python -m wirebroker serve --port 0`
with its defaults on a temporary data directory, given the one dynamic config Kafka 4's
`kafka-storage format` writes (`min.insync.replicas=1` as the cluster-wide default, KIP-966)
so that both describe it alike (`mirror_storage_format`).
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compat.conformance import corpus
from compat.conformance.compare import Difference, diff, show
from compat.conformance.normalise import Facts, normalise
from compat.conformance.play import play
from compat.conformance.script import Ctx, Names, Scenario, Side, SideResult, Step
from compat.conformance.transport import ANSWER, Outcome
from compat.conformance.tree import plain
from compat.oracle.kafka import shared_or_new
from compat.scenarios.broker import Broker
from compat.scenarios.wire import Wire
from protocol.api import ApiKey

KAFKA, OURS = "kafka", "wirebroker"


@contextlib.contextmanager
def brokers() -> Iterator[tuple[str, str]]:
    """(oracle bootstrap, wirebroker bootstrap), both stopped (ours) or released at the end."""
    with shared_or_new() as oracle, tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        broker = Broker(Path(tmp) / "data")
        broker.start()
        try:
            mirror_storage_format(broker.bootstrap)
            yield oracle, broker.bootstrap
        finally:
            broker.stop()


def mirror_storage_format(bootstrap: str) -> None:
    """Set on wirebroker what `kafka-storage format` sets on a new Kafka 4 cluster: the
    cluster-wide dynamic default min.insync.replicas=1 (same value as the built-in default;
    only its source and synonyms show it)."""
    body = {
        "resources": [
            {
                "resource_type": 4,  # BROKER, "": the cluster-wide default
                "resource_name": "",
                "configs": [{"name": "min.insync.replicas", "config_operation": 0, "value": "1"}],
            }
        ],
        "validate_only": False,
    }
    with Wire(bootstrap) as wire:
        (answer,) = wire.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body).responses
    if answer.error_code != 0:
        raise RuntimeError(f"wirebroker refused min.insync.replicas=1: {answer.error_message}")


@dataclass
class Run:
    names: Names
    sides: dict[str, Side]
    advertised: dict[str, dict[int, tuple[int, int]]]
    scenarios: list[Scenario]
    results: dict[str, SideResult]
    window: tuple[int, int]


def discover(side: Side) -> dict[int, tuple[int, int]]:
    """The side's node id and cluster id (Metadata) and what it advertises (ApiVersions v3)."""
    ctx = Ctx(side)
    try:
        meta = ctx.call(ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False})
        side.node_id = int(meta.brokers[0].node_id)
        side.cluster_id = meta.cluster_id
        versions = ctx.call(
            ApiKey.API_VERSIONS,
            3,
            {"client_software_name": "conformance", "client_software_version": "1.0"},
        )
        for key_type in (0, 1):  # have both create their coordinator topics before the script
            body = {"key": f"{side.names.token}-probe", "key_type": key_type}
            ctx.wait(
                f"coordinator of key type {key_type}",
                lambda body=body: ctx.call(ApiKey.FIND_COORDINATOR, 3, body).error_code == 0,
                timeout=60.0,
            )
        # Kafka's producer ids come in blocks from its controller: the first InitProducerId
        # after a start answers COORDINATOR_LOAD_IN_PROGRESS until the first block arrived.
        init = {"transactional_id": None, "transaction_timeout_ms": 60000}
        ctx.wait(
            "producer ids",
            lambda: ctx.call(ApiKey.INIT_PRODUCER_ID, 2, init).error_code == 0,
            timeout=60.0,
        )
        side.advertised = {a.api_key: (a.min_version, a.max_version) for a in versions.api_keys}
        return dict(side.advertised)
    finally:
        ctx.close()


def play_both(kafka: str, ours: str, only: str | None = None) -> Run:
    names = Names("cf" + secrets.token_hex(3))
    sides = {KAFKA: Side(KAFKA, kafka, names), OURS: Side(OURS, ours, names)}
    started = int(time.time() * 1000)
    advertised = {label: discover(side) for label, side in sides.items()}
    scenarios = corpus.build(advertised)
    if only:
        scenarios = [s for s in scenarios if any(st.id.startswith(only) for st in s.steps())]
    results: dict[str, SideResult] = {}

    def run(label: str) -> None:
        results[label] = play(sides[label], scenarios)

    threads = [threading.Thread(target=run, args=(label,)) for label in sides]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return Run(names, sides, advertised, scenarios, results, (started, int(time.time() * 1000)))


@dataclass
class StepResult:
    step: Step
    scenario: str
    outcomes: dict[str, Outcome]
    views: dict[str, Any]  # normalised answers (or the outcome kind)
    differences: list[Difference] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


def _view(outcome: Outcome, facts: Facts, listing: bool) -> Any:
    if outcome.kind != ANSWER:
        return {"outcome": outcome.kind}
    return normalise(plain(outcome.body), facts, listing)


def facts_of(run: Run, label: str) -> Facts:
    side = run.sides[label]
    facts = Facts(
        node_id=side.node_id,
        host=side.host,
        port=side.port,
        cluster_id=side.cluster_id,
        names=run.names.reverse(),
        window=run.window,
    )
    for scenario in run.scenarios:
        for s in scenario.steps():
            played = run.results[label].played.get(s.id)
            if played is not None and played.outcome.kind == ANSWER:
                facts.learn(s.api, plain(played.outcome.body))
    # then the ids of topics the actions created that no answer named (by logical name)
    for logical, tid in sorted(side.shared.get("topic_ids", {}).items()):
        facts.learn(-1, {"name": run.names.real(logical), "topic_id": str(tid)})
    return facts


def error_codes(tree: Any) -> set[int]:
    """Every error code in a plain answer."""
    if isinstance(tree, dict):
        found = {v for k, v in tree.items() if k.endswith("error_code") and isinstance(v, int)}
        for v in tree.values():
            found |= error_codes(v)
        return found
    if isinstance(tree, list):
        return set().union(*(error_codes(v) for v in tree)) if tree else set()
    return set()


def reaction(outcome: Outcome) -> str:
    """How a side reacted, in one line (when the two reacted differently)."""
    if outcome.kind != ANSWER:
        return {
            "closed": "closed the connection",
            "timeout": "no answer (timed out)",
            "no-answer": "no answer (none due)",
            "not-sent": "not sent (an earlier step failed)",
            "undecodable": "an answer our codecs cannot decode",
        }.get(outcome.kind, outcome.kind)
    codes = sorted(error_codes(plain(outcome.body)))
    named = ", ".join(show(c, "error_code") for c in codes)
    return f"answered (error codes: {named})" if codes else "answered"


def compare_run(run: Run) -> list[StepResult]:
    facts = {label: facts_of(run, label) for label in run.sides}
    out = []
    for scenario in run.scenarios:
        for s in scenario.steps():
            outcomes = {label: run.results[label].played[s.id].outcome for label in run.sides}
            views = {label: _view(outcomes[label], facts[label], s.listing) for label in run.sides}
            result = StepResult(s, scenario.name, outcomes, views)
            kinds = {label: outcomes[label].kind for label in run.sides}
            if kinds[KAFKA] != kinds[OURS]:
                result.differences = [
                    Difference("(reaction)", reaction(outcomes[KAFKA]), reaction(outcomes[OURS]))
                ]
            else:
                result.differences = diff(views[KAFKA], views[OURS])
            out.append(result)
    return out
