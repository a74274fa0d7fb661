"""The cluster's errors, in one module: typed errors of topic administration, each carrying
the Kafka error code to return, and the ZooKeeper runtime's own.

Handlers catch `ClusterError` (every error of topic metadata, the `TopicAdmin`'s included,
derives from it) and answer with `exc.error_code` and `str(exc)` as the error
message, as Kafka does with its ApiExceptions.

One error of the ZooKeeper runtime is not answered to clients and is no `ClusterError`:
`BrokerIdTakenError` (a broker cannot register: it exits). A controller that finds a newer
controller epoch resigns without an error (`ZkController.run` returns).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from wirebroker.coordination.api import CoordinationError
from wirebroker.errors import KafkaError

__all__ = [
    "BrokerIdTakenError",
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


class ClusterError(KafkaError):
    """Base of every topic-metadata error; `error_code` is what a handler returns."""


class InvalidTopicError(ClusterError, code=ErrorCode.INVALID_TOPIC_EXCEPTION):
    """An illegal topic name; the message says why."""


class TopicExistsError(ClusterError, code=ErrorCode.TOPIC_ALREADY_EXISTS):
    """CreateTopics of a topic that already exists."""


class InvalidPartitionsError(ClusterError, code=ErrorCode.INVALID_PARTITIONS):
    """A partition count below 1, or CreatePartitions not growing the topic."""


class InvalidReplicationFactorError(ClusterError, code=ErrorCode.INVALID_REPLICATION_FACTOR):
    """A replication factor below 1 or above the number of brokers."""


class InvalidReplicationAssignmentError(
    ClusterError, code=ErrorCode.INVALID_REPLICATION_ASSIGNMENT
):
    """A manual assignment naming unknown brokers, repeats or uneven replica counts."""


class InvalidConfigError(ClusterError, code=ErrorCode.INVALID_CONFIG):
    """An unknown topic config or a value it does not accept."""


class InvalidRequestError(ClusterError, code=ErrorCode.INVALID_REQUEST):
    """A request whose fields contradict each other."""


class PolicyViolationError(ClusterError, code=ErrorCode.POLICY_VIOLATION):
    """A request a broker policy refuses."""


class UnknownTopicError(ClusterError, code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
    """The topic does not exist."""


class UnknownTopicOrPartitionError(UnknownTopicError):
    """The topic or the partition does not exist."""


class BrokerIdTakenError(CoordinationError):
    """/brokers/ids/<id> stays registered by another live session: another broker has our id."""
