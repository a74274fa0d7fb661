"""`KafkaError`: the base of every typed broker error that carries a Kafka `ErrorCode`.

A subclass names its code as a class keyword and inherits its parent's when it names none::

    class TopicExistsError(ClusterError, code=ErrorCode.TOPIC_ALREADY_EXISTS):
        "The topic already exists."

Handlers answer a caught error with `exc.error_code` (and `str(exc)` as the message where the
API has one), as Kafka does with its ApiExceptions. Imports nothing from wirebroker, so every
layer may use it.
"""

from __future__ import annotations

from typing import ClassVar

from protocol.errors import ErrorCode

__all__ = ["KafkaError"]


class KafkaError(Exception):
    """An exception whose `error_code` is what a handler puts in its response."""

    error_code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN

    def __init_subclass__(cls, code: ErrorCode | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.error_code = code
