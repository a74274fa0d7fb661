"""Typed errors of topic-metadata operations, each carrying the Kafka error code to return.

Handlers catch `ClusterError` (every error raised by `wirebroker.cluster` and by the topic
operations of `wirebroker.replication.ReplicaManager` derives from it) and answer with
`exc.error_code` and `str(exc)` as the error message, as Kafka does with its ApiExceptions.
"""

from __future__ import annotations

from typing import ClassVar

from protocol.errors import ErrorCode


class ClusterError(Exception):
    """Base of every topic-metadata error; `error_code` is what a handler returns."""

    error_code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN


class InvalidTopicError(ClusterError):
    """An illegal topic name (INVALID_TOPIC_EXCEPTION); the message says why."""

    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
