"""libFuzzer entry point: `python tools/fuzz/atheris_main.py [libFuzzer flags] [corpus dirs]`.

Only the `protocol` package is instrumented for coverage (instrumenting everything that is
imported takes ~30 s at start-up and guides toward third-party code).
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

with atheris.instrument_imports(include=["protocol"]):
    import fuzz_protocol

atheris.Setup(sys.argv, fuzz_protocol.one_input)
atheris.Fuzz()
