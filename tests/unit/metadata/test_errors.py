"""KafkaError: the code as a class keyword, inherited when a subclass names none."""

from __future__ import annotations

from protocol.errors import ErrorCode
from wirebroker.errors import KafkaError
from wirebroker.log.errors import LogError, StorageError
from wirebroker.metadata.errors import (
    ClusterError,
    TopicExistsError,
    UnknownTopicError,
    UnknownTopicOrPartitionError,
)
from wirebroker.replication.partition import NotEnoughReplicasError


def test_bases_answer_unknown() -> None:
    assert KafkaError.error_code is ErrorCode.UNKNOWN
    assert ClusterError.error_code is ErrorCode.UNKNOWN
    assert LogError.error_code is ErrorCode.UNKNOWN


def test_class_keyword_sets_the_code() -> None:
    assert TopicExistsError.error_code is ErrorCode.TOPIC_ALREADY_EXISTS
    assert StorageError.error_code is ErrorCode.KAFKA_STORAGE_ERROR
    assert NotEnoughReplicasError.error_code is ErrorCode.NOT_ENOUGH_REPLICAS
    assert TopicExistsError("x").error_code is ErrorCode.TOPIC_ALREADY_EXISTS


def test_subclass_without_code_inherits_it() -> None:
    assert UnknownTopicOrPartitionError.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert issubclass(UnknownTopicOrPartitionError, UnknownTopicError)


def test_families_stay_apart() -> None:
    assert issubclass(StorageError, LogError) and not issubclass(StorageError, ClusterError)
    assert issubclass(TopicExistsError, ClusterError) and not issubclass(TopicExistsError, LogError)
    assert str(TopicExistsError("Topic 'a' already exists.")) == "Topic 'a' already exists."
