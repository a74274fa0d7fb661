#!/usr/bin/env python3
"""Print the segments, batches and index entries of a partition directory (read-only).

    python tools/dump_log.py DATA_DIR/<topic>-<n> [--records] [--no-index] [--segment BASE]
                        [--format text|json]

A thin wrapper kept for scripts and tests that run it from a checkout: the tool lives in the
package as `wirebroker dump-log` (wirebroker/ctl/dump_log.py), so an installed wirebroker has it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wirebroker.ctl.dump_log import main

if __name__ == "__main__":
    sys.exit(main())
