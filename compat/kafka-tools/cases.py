"""The kafka-tools cases: one per tool and operation, in report order.

A case is `fn(target) -> note`: it runs one of Kafka's tools unchanged against
`target.bootstrap`, checks the tool's exit code and output and, through the wire oracle, the
effect on the broker. Returning is a pass (the note goes to the results), AssertionError or
any other exception a failure, `Unsupported` n/a. `cluster=True`: the case needs several
brokers; it runs on the 3-broker wirebroker cluster, and on Kafka only when `kafka_na` is
empty (else that is the reason it is n/a there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import cases_cluster as cl
import cases_groups as gr
import cases_misc as mi
import cases_topics as tp
from target import Target

SINGLE_NODE = (
    "a single-node Kafka has one replica per partition: there is no other broker to move "
    "a replica to or to elect as leader"
)


@dataclass(frozen=True)
class Case:
    id: str
    fn: Callable[[Target], str]
    cluster: bool = False
    kafka_na: str = ""


CASES = [
    Case("kafka-topics.create", tp.topics_create),
    Case("kafka-topics.describe", tp.topics_describe),
    Case("kafka-topics.list", tp.topics_list),
    Case("kafka-topics.alter_partitions", tp.topics_alter),
    Case("kafka-topics.delete", tp.topics_delete),
    Case("kafka-configs.topic", tp.configs_topic),
    Case("kafka-configs.broker_describe", tp.configs_broker_describe),
    Case("kafka-configs.broker_alter", tp.configs_broker_alter),
    Case("kafka-configs.groups", tp.configs_groups),
    Case("kafka-consumer-groups.list_describe", gr.groups_list_describe),
    Case("kafka-consumer-groups.reset_offsets", gr.groups_reset_offsets),
    Case("kafka-consumer-groups.delete", gr.groups_delete),
    Case("kafka-console-producer.keys_headers", gr.console_producer),
    Case("kafka-console-consumer.formatter", gr.console_consumer_formatter),
    Case("kafka-console-consumer.group", gr.console_consumer_group),
    Case("kafka-console-consumer.isolation_level", gr.console_consumer_isolation),
    Case("kafka-console-consumer.group_protocol_consumer", gr.console_consumer_kip848),
    Case("kafka-get-offsets.times", mi.get_offsets),
    Case("kafka-transactions.list_describe", mi.transactions_describe),
    Case("kafka-transactions.abort", mi.transactions_abort),
    Case("kafka-producer-perf-test.acks_all", mi.producer_perf),
    Case("kafka-producer-perf-test.transactional", mi.producer_perf_transactional),
    Case("kafka-consumer-perf-test.read", mi.consumer_perf),
    Case("kafka-delete-records.delete", mi.delete_records),
    Case("kafka-log-dirs.describe", mi.log_dirs),
    Case("kafka-cluster.cluster_id", mi.cluster_id_case),
    Case("kafka-acls.no_authorizer", mi.acls_without_authorizer),
    Case("kafka-configs.client_quotas", mi.configs_client_quotas),
    Case("kafka-leader-election.preferred", cl.election_preferred, True, SINGLE_NODE),
    Case("kafka-leader-election.unclean", cl.election_unclean, True, SINGLE_NODE),
    Case("kafka-reassign-partitions.move", cl.reassign_move, True, SINGLE_NODE),
    Case("kafka-reassign-partitions.throttle", cl.reassign_throttle, True),
]
