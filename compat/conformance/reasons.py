"""Why each known difference exists: the one hand-written file of the harness's verdicts.

A `Reason` matches a difference by API key (None: any), step id pattern and field path
pattern: `*` matches anything, every other character is literal, and ` | ` separates
alternatives (or `re:` and a regular expression). The first match wins, so specific reasons
come before general ones. A difference no reason matches is reported as unexplained (and
`run --strict` fails on it).

Keep the evidence in the `why`: what Kafka answers, what wirebroker answers, and where Kafka's
behaviour was checked (the oracle's answer in CONFORMANCE.md is the evidence; Kafka's source or
KIP only says why).
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = {
    "bug": "wirebroker bug, to fix",
    "cosmetic": "wirebroker difference no client acts on (to fix)",
    "not-built": "not built yet",
    "deliberate": "deliberate deviation",
    "environment": "environment (how the brokers were set up, not behaviour)",
    "kafka": "Kafka quirk or bug (wirebroker's answer is valid too)",
    "unexplained": "unexplained",
}


@dataclass(frozen=True)
class Reason:
    key: str  # short name the report cites
    kind: str
    why: str
    steps: str = "*"
    path: str = "*"
    api: int | None = None


PRODUCE, FETCH, LIST_OFFSETS, METADATA, FIND_COORDINATOR = 0, 1, 2, 3, 10
API_VERSIONS, CREATE_TOPICS, DESCRIBE_CONFIGS, ALTER_CONFIGS = 18, 19, 32, 33
ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS, ALTER_REASSIGNMENTS = 43, 44, 45
DESCRIBE_LOG_DIRS, DESCRIBE_TRANSACTIONS = 35, 65

_PRODUCE_REASONS = (
    Reason(
        "produce-v0-2",
        "deliberate",
        "Produce v0-2 (message formats v0/v1, removed in Kafka 4.0 but still advertised): Kafka "
        "closes the connection; wirebroker answers UNSUPPORTED_VERSION per partition so that a "
        "client that skipped ApiVersions fails at once (compat/README.md, "
        "protocol/legacy_produce.py).",
        steps="Produce.v0 | Produce.v1 | Produce.v2",
        api=PRODUCE,
    ),
    Reason(
        "produce-null-records",
        "kafka",
        "Produce with null records: Kafka 4.4 fails with a NullPointerException "
        "(PartitionProduceData.records() is null, in its log) and never answers; wirebroker "
        "answers INVALID_RECORD.",
        steps="produce.error.null_records",
    ),
    Reason(
        "kafka-compressed-offsets",
        "kafka",
        "A compressed batch whose records' offset deltas are not 0, 1, 2, ...: Kafka 4.4's "
        "validator then rebuilds the batch with new offsets, from records it read without "
        'their keys and values, and fails (UnsupportedOperationException "key is skipped in '
        'PartialDefaultRecord" in its log): UNKNOWN_SERVER_ERROR. wirebroker stores the '
        "batch as it came, as both do an uncompressed one (step produce.garbage.none_unordered, "
        "identical).",
        steps="produce.garbage.gzip_unordered",
        api=PRODUCE,
    ),
    Reason(
        "produce-records-unread",
        "deliberate",
        "A batch whose CRC is right but whose records are garbage (bytes that are no records, "
        "trailing bytes, a record cut short, a record count that does not match, a corrupt "
        "compressed stream, a good stream of garbage): Kafka reads every record while it "
        "validates a Produce, decompressing compressed batches, and refuses the batch "
        "(INVALID_RECORD for records it cannot parse; UNKNOWN_SERVER_ERROR, -1, for a corrupt "
        "compressed stream and for an uncompressed record whose length varint is too long; "
        "with the log start offset); wirebroker reads records only where one may be refused "
        "(a compacted topic, timestamps out of the header's window) and stores the batch. "
        "Reading every record was measured (tools/bench/bench_record_checks.py, 5 alternating "
        "rounds, 2 CPUs): 100 B records 4.4x the broker CPU (confluent-kafka: 0.67x the "
        "records/s), 6.5x per MB without a client; compressed batches of 100 B records 25-40x; "
        "10 KiB records +27% per MB (docs/log.md). Of an LZ4 frame the header and block layout "
        "are checked as Kafka's reader does (steps produce.lz4.*, identical), at no cost.",
        steps="produce.garbage.*",
        api=PRODUCE,
    ),
)

_FETCH_REASONS = (
    Reason(
        "fetch-before-marker",
        "kafka",
        "A read_committed fetch from offset 0 of a partition holding a transaction's batch "
        "and then its marker: Kafka's answer ends after the batch, wirebroker's includes the "
        "marker. The corpus's records carry 2023 timestamps, so the marker (written now) rolls "
        "a new segment (segment.ms); Kafka's read stops at a segment's end, wirebroker's "
        "read_committed read goes on into the next segment (its read_uncommitted one, a "
        "sendfile slice, stops there as Kafka's: identical). A consumer fetches on from the "
        "last offset either way.",
        steps="txn-v*.fetch_*",
        path="*.records[base_offset=2]",
        api=FETCH,
    ),
)

_METADATA_REASONS = (
    Reason(
        "metadata-auto-create",
        "bug",
        "Metadata with allow_auto_topic_creation for a topic that does not exist (every version "
        "tried): Kafka creates it but answers that request UNKNOWN_TOPIC_OR_PARTITION without "
        "partitions (nil topic id); the topic exists from the next request "
        "(metadata.auto_created_after, identical). wirebroker creates it before answering and "
        "answers NONE with the partition.",
        steps="metadata.auto_create*",
        api=METADATA,
    ),
)

_VERSIONS_REASONS = (
    Reason(
        "kraft",
        "deliberate",
        "KRaft: a wirebroker cluster is coordinated by ZooKeeper (README, Known limits), so it "
        "has no metadata quorum (DescribeQuorum, UnregisterBroker, UnregisterController, the "
        "Raft voter APIs), no feature levels to update (UpdateFeatures) and no "
        "metadata.version, kraft.version or eligible.leader.replicas.version feature.",
        path="api_keys[api_key=55] | api_keys[api_key=57] | api_keys[api_key=64]"
        " | api_keys[api_key=80]"
        " | api_keys[api_key=81] | api_keys[api_key=94] | *[name=metadata.version]"
        " | *[name=kraft.version] | *[name=eligible.leader.replicas.version]",
    ),
    Reason(
        "security",
        "not-built",
        "Delegation tokens (issue 34): Kafka serves these APIs; wirebroker does not "
        "advertise them yet and closes the connection. (SaslHandshake and SaslAuthenticate "
        "are served, ILLEGAL_SASL_STATE on a PLAINTEXT listener as Kafka's; the ACL APIs as "
        "by a Kafka without an authorizer: SECURITY_DISABLED; the SCRAM credential and client "
        "quota APIs as Kafka serves them.)",
        path="(reaction) | api_keys[api_key=38]"
        " | api_keys[api_key=39] | api_keys[api_key=40] | api_keys[api_key=41]",
        steps="ApiVersions.* | Sasl* | *ClientQuotas.* | *DelegationToken.*",
    ),
    Reason(
        "new-groups",
        "not-built",
        "Streams groups (KIP-1071): Kafka serves their APIs and finalizes streams.version; "
        "wirebroker does not advertise them and closes the connection. Share groups (KIP-932) "
        "and KIP-848 consumer groups are served (issue 35), without the share.version and "
        "group.version features Kafka finalizes.",
        steps="ApiVersions.* | cg-v* | share.* | st-v*",
        path="(reaction) | api_keys[api_key=68] | api_keys[api_key=69] | api_keys[api_key=76]"
        " | api_keys[api_key=77] | api_keys[api_key=78] | api_keys[api_key=79]"
        " | api_keys[api_key=88]"
        " | api_keys[api_key=89] | api_keys[api_key=90] | api_keys[api_key=91]"
        " | api_keys[api_key=92] | api_keys[api_key=93] | *[name=group.version]"
        " | *[name=share.version] | *[name=streams.version]",
    ),
    Reason(
        "share-offsets-without-share-groups",
        "not-built",
        "The share group offsets APIs (Describe / Alter / DeleteShareGroupOffsets) are served, "
        "but wirebroker has no share groups yet (ShareGroupHeartbeat, issue 35): the group of "
        "these steps does not exist there, so Alter and Delete answer GROUP_ID_NOT_FOUND and "
        "Describe finds no initialised partition (start offset -1, lag -1).",
        steps="share.offsets_v* | share.alter_* | share.delete_offsets_*",
    ),
    Reason(
        "kraft-apis",
        "deliberate",
        "KRaft's APIs: DescribeQuorum (the metadata quorum), UpdateFeatures, UnregisterBroker, "
        "UnregisterController, AddRaftVoter, RemoveRaftVoter. A wirebroker cluster is "
        "coordinated by ZooKeeper, its brokers leave by their ZooKeeper session and its one "
        "feature (transaction.version) is a broker config; wirebroker does not advertise them "
        "and closes the connection.",
        steps="DescribeQuorum.* | UpdateFeatures.* | UnregisterBroker.* | UnregisterController.*"
        " | AddRaftVoter.* | RemoveRaftVoter.*",
    ),
    Reason(
        "telemetry-unadvertised",
        "kafka",
        "Client telemetry (KIP-714): Kafka 4.4 leaves GetTelemetrySubscriptions and "
        "PushTelemetry out of ApiVersions when no metrics reporter takes client telemetry (the "
        "oracle has none), yet answers them (a subscription with no metrics requested); "
        "wirebroker, which does not advertise them either, closes the connection, as a broker "
        "may for an API it does not serve.",
        steps="GetTelemetrySubscriptions.* | PushTelemetry.*",
    ),
)

_CONFIG_REASONS = (
    Reason(
        "oracle-settings",
        "environment",
        "The oracle's server.properties sets node.id, advertised.listeners and, as Kafka's own "
        "single-node config does, num.partitions=1 and the internal topics' replication factors "
        "and min ISR to 1 (STATIC_BROKER_CONFIG, 4, with a second synonym); wirebroker runs with "
        "its defaults: the same values on one broker, except advertised.listeners (unset: null).",
        path="*[name=node.id].* | *[name=broker.id].* | *[name=advertised.listeners].*"
        " | *[name=num.partitions].* | *[name=offsets.topic.replication.factor].*"
        " | *[name=transaction.state.log.replication.factor].*"
        " | *[name=transaction.state.log.min.isr].*"
        " | *[name=share.coordinator.state.topic.replication.factor].*"
        " | *[name=share.coordinator.state.topic.min.isr].*",
        api=DESCRIBE_CONFIGS,
    ),
    Reason(
        "listeners-static",
        "deliberate",
        "listeners: Kafka can add and remove listeners at run time (read_only false); "
        "wirebroker cannot rebind its listener, so it describes listeners as read-only and "
        "refuses to change it dynamically (wirebroker/dynamic_configs.py, README "
        "Configuration). Every other dynamic broker config wirebroker has is updatable, as in "
        "Kafka.",
        path="*[name=listeners].read_only",
        api=DESCRIBE_CONFIGS,
    ),
    Reason(
        "group-initial-delay",
        "deliberate",
        "group.initial.rebalance.delay.ms: wirebroker's default is 0 (Kafka's 3000) so that a "
        "local consumer starts at once (README, Configuration).",
        path="*[name=group.initial.rebalance.delay.ms].*",
        api=DESCRIBE_CONFIGS,
    ),
    Reason(
        "configs-not-built",
        "not-built",
        "Broker configs Kafka has and wirebroker does not (KRaft, SASL/SSL, quotas, share and "
        "streams groups, tiered storage's broker side, thread pools and the rest: about 260); "
        "and the 9 wirebroker has and Kafka 4.4 does not (ZooKeeper, admin.listeners, "
        "cluster.id, transaction.version, min.incremental.fetch.session.eviction.ms...). "
        "Every topic config of Kafka 4.4 is there.",
        path=r"re:.*\.configs\[name=[^\]]*\]",
        steps="configs.broker_*",
        api=DESCRIBE_CONFIGS,
    ),
)

_SHARE_REASONS = (
    Reason(
        "share-leader-placeholder",
        "environment",
        "ShareFetch / ShareAcknowledge put `current_leader` {leader_id 0, leader_epoch 0} on "
        "every partition answered without a leadership error, on both brokers (the field's "
        "zero value, not a node). Kafka's oracle is node 1, so its 0 stays 0; wirebroker is "
        "node 0, so the normaliser renders the same 0 as `<node>`.",
        steps="share.*",
        path="*.current_leader.leader_id",
    ),
)

REASONS: tuple[Reason, ...] = (
    *_SHARE_REASONS,
    *_PRODUCE_REASONS,
    *_FETCH_REASONS,
    *_METADATA_REASONS,
    *_VERSIONS_REASONS,
    *_CONFIG_REASONS,
)
