"""Typed errors of topic administration, each carrying the Kafka error code to return.

Handlers catch `ClusterError` (every error raised by `wirebroker.cluster`, the `TopicAdmin`
included, derives from it) and answer with `exc.error_code` and `str(exc)` as the error
message, as Kafka does with its ApiExceptions.
"""

from __future__ import annotations

from typing import ClassVar

from protocol.errors import ErrorCode

__all__ = [
    "ClusterError",
    "InvalidConfigError",
    "InvalidPartitionsError",
    "InvalidReplicationAssignmentError",
    "InvalidReplicationFactorError",
    "InvalidRequestError",
    "InvalidTopicError",
    "PolicyViolationError",
    "TopicExistsError",
    "UnknownTopicError",
    "UnknownTopicOrPartitionError",
]


class ClusterError(Exception):
    """Base of every topic-metadata error; `error_code` is what a handler returns."""

    error_code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN


class InvalidTopicError(ClusterError):
    """An illegal topic name (INVALID_TOPIC_EXCEPTION); the message says why."""

    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class TopicExistsError(ClusterError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(ClusterError):
    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(ClusterError):
    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicationAssignmentError(ClusterError):
    error_code = ErrorCode.INVALID_REPLICATION_ASSIGNMENT


class InvalidConfigError(ClusterError):
    error_code = ErrorCode.INVALID_CONFIG


class InvalidRequestError(ClusterError):
    error_code = ErrorCode.INVALID_REQUEST


class PolicyViolationError(ClusterError):
    error_code = ErrorCode.POLICY_VIOLATION


class UnknownTopicError(ClusterError):
    """The topic does not exist (UNKNOWN_TOPIC_OR_PARTITION)."""

    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class UnknownTopicOrPartitionError(UnknownTopicError):
    """The topic or the partition does not exist."""
