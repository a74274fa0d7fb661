"""wirebroker.metadata.reassignment: one reassignment entry checked as Kafka's controller does
(the texts are Kafka 4.4's, asked of it in tests/oracle/test_kafka_answers.py)."""

from __future__ import annotations

import pytest

from wirebroker.metadata.reassignment import check_target, unknown_partition

PREFIX = "The manual partition assignment includes"


def check(target, *, current=(1, 2), ongoing=False, registered=(1, 2, 3), allow_rf=True):
    return check_target(
        list(current), target, ongoing=ongoing, registered=registered, allow_rf_change=allow_rf
    )


def test_unknown_topic_and_partition() -> None:
    assert unknown_partition("t", 4, topic_exists=False) == (3, "Unable to find a topic named t.")
    assert unknown_partition("t", 4, topic_exists=True) == (3, "Unable to find partition t:4.")


def test_cancel() -> None:
    assert check(None) == (85, None)
    assert check(None, ongoing=True) is None


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ([], (39, f"{PREFIX} an empty replica list.")),
        ([1, 1], (39, f"{PREFIX} the broker 1 more than once.")),
        ([1, 7, 8], (39, f"{PREFIX} broker 7, but no such broker is registered.")),
        ([2, 3], None),
        ([3], None),
    ],
)
def test_targets(target, problem) -> None:
    assert check(target) == problem


def test_replication_factor_change_needs_the_flag() -> None:
    assert check([3], allow_rf=False) == (38, "The replication factor is changed from 2 to 1")
    assert check([2, 3], allow_rf=False) is None
