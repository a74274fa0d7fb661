"""glibc malloc settings for a process that moves ~1 MB buffers: `tune_malloc()`.

The problem
    Each Produce request and Fetch response allocates a few buffers of about 1 MB (the frame,
    the batch copy the log stamps before writing, the pread of a fetch, the response frame).
    glibc serves allocations above its mmap threshold (128 KiB at start, raised dynamically to
    the size of the largest mmapped chunk freed so far) with a fresh mmap(), and returns the
    top of the heap to the kernel once more than twice that threshold is free. A broker that
    frees three or four 1 MB buffers per request keeps crossing both limits, so most requests
    map fresh memory and fault in every page of it again (256 page faults per MiB, several us
    each in a virtual machine).

    What it bought: docs/benchmarks.md, "What the data path's design buys".

The fix
    `mallopt(M_MMAP_THRESHOLD, 32 MiB)` (the largest value glibc accepts on 64-bit) keeps buffers
    up to 32 MiB on the heap, and `mallopt(M_TRIM_THRESHOLD, 16 MiB)` lets up to 16 MiB of free
    heap top stay mapped for the next request. Setting either turns glibc's dynamic adjustment
    off. Cost: after a burst the process may keep up to ~16 MiB more resident than before;
    idle memory is unchanged.

Only glibc has `mallopt` with these parameters: elsewhere (musl, macOS, Windows) and when
`WIREBROKER_MALLOC_TUNING=0` is set, nothing is changed. Called once by `wirebroker serve`
(the process entry point), never on import, so test processes keep their defaults.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "tune_malloc"]

log = logging.getLogger(__name__)

MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 16 * 1024 * 1024
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def tune_malloc() -> bool:
    """Apply the settings above; True when glibc accepted both."""
    if os.environ.get("WIREBROKER_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith(
        "linux"
    ):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version") or not hasattr(libc, "mallopt"):
            return False  # not glibc (musl has no tunable mallopt parameters)
        mallopt = libc.mallopt
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        mallopt.restype = ctypes.c_int
        ok = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
            mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        )
    except (OSError, AttributeError):
        return False
    log.debug("malloc tuning %s", "applied" if ok else "rejected by libc")
    return ok
