"""parse_segment_file_name: the inverse of segment_file_name."""

from __future__ import annotations

from wirebroker.log.segment import SEGMENT_SUFFIXES, parse_segment_file_name, segment_file_name


def test_round_trip_for_every_segment_file() -> None:
    for suffix in (*SEGMENT_SUFFIXES, ".log.swap", ".index.cleaned"):
        assert parse_segment_file_name(segment_file_name(42, suffix)) == (42, suffix)


def test_other_names_are_not_segment_files() -> None:
    for name in (
        "leader-epoch-checkpoint",
        "42.log",
        "0" * 21 + ".log",
        "0" * 20,
        "x" * 20 + ".log",
    ):
        assert parse_segment_file_name(name) is None
