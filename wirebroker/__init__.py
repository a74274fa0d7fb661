"""wirebroker: a Kafka broker in Python that speaks the Kafka binary protocol.

`wirebroker.running()` and `wirebroker.running_cluster()` start throwaway brokers for tests
(`wirebroker.testing`); they are imported on first use, so `import wirebroker` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wirebroker.testing import running, running_cluster

__version__ = "0.1.0"
__all__ = ["__version__", "running", "running_cluster"]


def __getattr__(name: str) -> Any:
    if name in ("running", "running_cluster"):
        from wirebroker import testing

        return getattr(testing, name)
    raise AttributeError(f"module 'wirebroker' has no attribute {name!r}")
