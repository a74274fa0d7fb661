"""Torn and corrupt files: 200 seeded cases of offline surgery on real partition directories.

See torn.py for the templates, the faults and what each case checks, and torn_broker.py for
the cases served by the real broker to kafka-python and confluent-kafka. The seed is printed
(replay with WIREBROKER_RELIABILITY_SEED); a failure lists every failed case with its faults.
The figures of docs/reliability.md come from tools/reliability/torn_files.py, which runs the
same code.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torn
import torn_broker

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
    pytest.mark.usefixtures("collect_leaked_sockets"),
]

CASES = 200
BROKER_CASES = 4


@pytest.fixture(scope="module")
def templates(
    tmp_path_factory: pytest.TempPathFactory, reliability_seed: int
) -> list[torn.Template]:
    work = tmp_path_factory.mktemp("torn-templates")
    out = torn.build_log_templates(work, reliability_seed)
    out += torn_broker.build_broker_templates(work, reliability_seed)
    return out


def test_torn_and_corrupt_files(
    templates: list[torn.Template], reliability_seed: int, tmp_path: Path
) -> None:
    logging.disable(logging.WARNING)  # thousands of expected recovery warnings
    try:
        results = [
            torn.run_case(templates[i % len(templates)], reliability_seed, i, tmp_path)
            for i in range(CASES)
        ]
    finally:
        logging.disable(logging.NOTSET)
    s = torn.summarize(results)
    figures = "\n".join(torn.figure_lines(s))
    assert s.ok == CASES, f"seed {reliability_seed}\n{figures}\n" + "\n".join(s.failures)
    assert set(s.by_fault) == {name for name, _, _ in torn.FAULTS}
    assert {t.name for t in templates} == set(s.by_template)
    assert s.found.get("load", 0) and s.found.get("read", 0) and s.found.get("intact", 0)
    assert s.acked_checked > 0 and s.acked_lost == 0


def test_damaged_logs_through_the_real_broker(
    templates: list[torn.Template], reliability_seed: int, tmp_path: Path
) -> None:
    broker_templates = [t for t in templates if t.name.startswith("broker")]
    results = [
        torn_broker.run_broker_case(
            broker_templates[i % 2], reliability_seed, 100_000 + i, tmp_path
        )
        for i in range(BROKER_CASES)
    ]
    s = torn.summarize(results)
    assert s.ok == BROKER_CASES, f"seed {reliability_seed}\n" + "\n".join(s.failures)
    assert s.batches_served > 0
