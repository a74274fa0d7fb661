"""`wirebroker serve` starts fast: building the whole command line (every client command's
parser included) imports neither the Kafka client, the table library, trio nor the protocol
package; the client commands import them only when they run (wirebroker/ctl docstring)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from wirebroker.cli import _parser
_parser().parse_args(["topic", "list"])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"kafka", "rich", "trio", "protocol"})
print(",".join(heavy))
"""


def test_parser_imports_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == ""
