"""Structured logs: `wirebroker serve --log-format json` writes one JSON object per line.

Fields: `ts` (UTC, ISO 8601 with milliseconds), `level`, `logger`, `message` (the formatted
message), `exc` (the traceback, when there is one), plus any `extra={...}` field a caller gave
(values that are not JSON types are written with `str`). Keys are stable; a log shipper can
parse every line without a pattern. `configure(level, fmt)` installs the stderr handler for
either format ("text" keeps the format the broker always had).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

__all__ = ["TEXT_FORMAT", "JsonFormatter", "configure"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: attributes every LogRecord has; anything else came from `extra=`
_STANDARD = frozenset(
    vars(logging.LogRecord("x", logging.INFO, "x", 0, "x", None, None)).keys()
) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        seconds = int(record.created)
        millis = int((record.created - seconds) * 1000)
        out: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc"] = record.exc_text
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in out:
                out[key] = value
        return json.dumps(out, default=str, ensure_ascii=False)


def configure(level: str | int, fmt: str = "text") -> None:
    """Log to stderr at `level` in `fmt` ("text" or "json")."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level, handlers=[handler])
