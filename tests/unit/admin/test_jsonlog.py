"""`--log-format json`: one JSON object per line, stable keys, extras and tracebacks kept."""

from __future__ import annotations

import json
import logging

from wirebroker.jsonlog import JsonFormatter


def record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    rec = logging.LogRecord("wirebroker.x", logging.WARNING, __file__, 1, msg, args, None)
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def test_one_object_per_line_with_stable_keys() -> None:
    line = JsonFormatter().format(record("topic %s\nhas %d partitions", "t", 3, fault="x"))
    assert "\n" not in line
    obj = json.loads(line)
    assert obj["level"] == "WARNING"
    assert obj["logger"] == "wirebroker.x"
    assert obj["message"] == "topic t\nhas 3 partitions"
    assert obj["fault"] == "x"
    assert obj["ts"].endswith("Z") and obj["ts"][10] == "T"


def test_traceback_and_non_json_values() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        rec = record("failed", obj=object())
        rec.exc_info = sys.exc_info()
    obj = json.loads(JsonFormatter().format(rec))
    assert "ValueError: boom" in obj["exc"]
    assert obj["obj"].startswith("<object object")
