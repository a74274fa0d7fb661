"""CRC-32C (Castagnoli), the checksum of Kafka record batches v2.

`crc32c(data, crc=0)` returns the CRC-32C of `data`; passing a previous result as `crc`
continues the checksum, so `crc32c(b, crc32c(a)) == crc32c(a + b)`. `data` may be `bytes`,
`bytearray` or a contiguous `memoryview` (read-only or writable): nothing is copied.

Implementation: the `crc32c` PyPI package (C, SSE4.2/ARMv8 instructions when present, a
software table otherwise; LGPL-2.1-or-later, used unmodified as a dependency), falling back
to crcmod's predefined "crc-32c" (C extension) when `crc32c` is not installed.
`BACKEND` names the one in use.

crc32c is far faster than crcmod on large batches and, unlike google-crc32c (as fast), takes
writable memoryviews, hence its choice (figures: docs/benchmarks.md, "What the data path's
design buys").

Start-up: the package's `__init__` reads its own version with `importlib.metadata`, which
imports `email`, `zipfile`, `csv`, ... (~20-35 ms of every broker start). `_load_extension`
loads only its C extension `crc32c._crc32c` (the same function, registered under its own name
so a later `import crc32c` reuses it); any surprise falls back to the plain import.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

_impl: Callable[[bytes | bytearray | memoryview, int], int]


def _load_extension() -> ModuleType:
    """`crc32c._crc32c` without running the `crc32c` package's `__init__` (see above)."""
    name = "crc32c._crc32c"
    if name in sys.modules:
        return sys.modules[name]
    try:
        package = importlib.util.find_spec("crc32c")
        assert package is not None and package.submodule_search_locations
        for location in package.submodule_search_locations:
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = Path(location) / f"_crc32c{suffix}"
                if path.is_file():
                    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
                    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
                    assert spec is not None
                    module = importlib.util.module_from_spec(spec)
                    loader.exec_module(module)
                    sys.modules[name] = module
                    return module
    except Exception:  # pragma: no cover - a layout this code does not know: import it whole
        pass
    import crc32c as package_module

    return sys.modules.get(name, package_module)


try:
    _impl = _load_extension().crc32c
    BACKEND = "crc32c"
except ImportError:  # pragma: no cover - exercised only without the crc32c package
    import crcmod.predefined

    _impl = crcmod.predefined.mkCrcFun("crc-32c")
    BACKEND = "crcmod"


def crc32c(data: bytes | bytearray | memoryview, crc: int = 0) -> int:
    """CRC-32C of `data`, continuing from `crc` (the CRC of the bytes before it)."""
    return _impl(data, crc)


__all__ = ["BACKEND", "crc32c"]
