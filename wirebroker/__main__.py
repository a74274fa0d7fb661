"""`python -m wirebroker [serve ...]`: the same program as the `wirebroker` console script."""

from __future__ import annotations

import sys

from wirebroker.cli import main

if __name__ == "__main__":
    sys.exit(main())
