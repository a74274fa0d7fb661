"""What legitimately differs between two brokers, and how it is made comparable.

Every normalisation is one row of `RULES` (name, the fields it touches, why), the table that
CONFORMANCE.md prints. A rule touches only the fields it names, and only values that carry an
identity of the broker or of this run rather than a behaviour: -1 (none), 0, empty strings,
null, error codes, offsets, epochs and counts are never normalised. A rule maps each identity
to a placeholder, consistently within one side, so that "the member id the JoinGroup gave is
the leader the SyncGroup names" still compares (`<member:1>` on both sides), while "another
member" shows as `<member:2>`.

`Facts` holds one side's identities (learned from its own answers, in the corpus's order, by
`learn`); `normalise(tree, facts, listing)` returns the normalised copy of one plain answer
(`tree.plain`). `listing` is set for answers that list everything the broker has (all topics,
groups, transactions): the oracle is shared by a whole test run, so entries that are not this
run's are dropped there (rule `foreign-entries`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Rule:
    name: str
    fields: str  # what it touches, as printed in the report
    why: str


RULES: tuple[Rule, ...] = (
    Rule(
        "run-names",
        "every string: topic, group and transactional id names",
        "Names carry a per-run token (the oracle outlives a run); each becomes `<logical name>`"
        " on both sides, also inside error messages and config values.",
    ),
    Rule(
        "node-id",
        "node_id, leader_id, controller_id, broker_id, replica_nodes, isr_nodes, "
        "offline_replicas, eligible_leader_replicas, last_known_elr, replicas, "
        "adding_replicas, removing_replicas, leader (an int)",
        "Kafka's oracle is node 1, a fresh wirebroker node 0: the broker's own id becomes "
        "`<node>` (also as the name of a broker's config resource); -1 (no leader) and any "
        "other id stay as they are.",
    ),
    Rule(
        "endpoint",
        "host, port",
        "Each broker listens on its own free port: the side's own host and port become "
        "`<host>` / `<port>`; anything else (an empty host, -1) stays.",
    ),
    Rule(
        "cluster-id",
        "cluster_id",
        "A random id made when the cluster was formatted: the side's own becomes "
        "`<cluster-id>`; null stays.",
    ),
    Rule(
        "topic-id",
        "topic_id",
        "Random UUIDs made at topic creation: each becomes `<topic-id:NAME>` (learned from the "
        "side's own answers that carry a name and an id, then from the topics the actions "
        "created); the nil UUID stays; an id the side never named becomes `<topic-id:?>`.",
    ),
    Rule(
        "member-id",
        "member_id, leader (a string)",
        "Made by the coordinator (client id + random UUID): each id a JoinGroup answer gave is "
        "numbered `<member:N>` per side in order of first appearance, each a KIP-848, share or "
        "streams group heartbeat's answer gave where the broker made it (ConsumerGroupHeartbeat "
        "v0) `<heartbeat-member:N>`; the empty string and ids the corpus made up (run names) "
        "stay.",
    ),
    Rule(
        "producer-id",
        "producer_id (answers and stored batches)",
        "Allocated from a broker-wide counter (Kafka's in blocks from the controller): each id "
        "an InitProducerId or EndTxn answer gave is numbered `<producer:N>` per side in order "
        "of first appearance; -1, 0 and ids the corpus made up stay. Producer epochs are "
        "compared as they are.",
    ),
    Rule(
        "clock",
        "int fields named *timestamp*, *time_ms, *_time (not timeouts, not throttle)",
        "The broker's clock (LogAppendTime, transaction start, last write): a value within an "
        "hour of the run becomes `<now>`. The corpus's own timestamps are years away from now "
        "and stay, as does -1.",
    ),
    Rule(
        "throttle",
        "throttle_time_ms",
        "No quotas are configured on either side; the value is timing, not behaviour.",
    ),
    Rule(
        "fetch-session",
        "session_id",
        "A fetch session's id is random: non-zero becomes `<session>`; 0 (no session) stays, "
        "so a broker that makes no session still differs.",
    ),
    Rule(
        "prose",
        "error_message, batch_index_error_message",
        "Human text, not required to match: a non-empty text becomes `<text>`; null and the "
        "empty string stay, so a missing message still differs.",
    ),
    Rule(
        "documentation",
        "documentation (DescribeConfigs v3+)",
        "A config's documentation is prose: any string becomes `<doc>`, null stays. Noted, "
        "not compared: wirebroker answers an empty string for every config, Kafka its doc text.",
    ),
    Rule(
        "machine",
        "log_dir, total_bytes, usable_bytes; the values of the broker configs "
        + ", ".join(sorted(["log.dirs", "log.dir", "listeners", "advertised.listeners"]))
        + ", node.id, broker.id, controller.quorum.voters, metadata.log.dir",
        "Paths, disk sizes, ports and node ids of this machine: `<log-dir>`, `<bytes>` "
        "(-1 stays), `<machine>`.",
    ),
    Rule(
        "features-epoch",
        "finalized_features_epoch",
        "Kafka's is the offset of the metadata log record that last set a feature (a count of "
        "the cluster's history); a non-negative epoch becomes `<epoch>`, -1 stays.",
    ),
    Rule(
        "metadata-log",
        "DescribeQuorum: high_watermark, log_end_offset; port of a node's listeners",
        "The KRaft metadata log's offsets count every change ever made to the cluster (the "
        "shared oracle's grow with every test): a non-negative one becomes `<metadata-offset>`"
        "; the controller listener's port is a free port of the machine: `<listener-port>`.",
    ),
    Rule(
        "telemetry-ids",
        "client_instance_id, subscription_id",
        "KIP-714: the broker makes a random client instance id and a subscription id from it: "
        "`<client-instance>` and `<subscription>`; the nil UUID and 0 stay.",
    ),
    Rule(
        "set-order",
        "lists of partition numbers named partitions / partition_indexes",
        "Kafka builds them from hash sets (DescribeTransactions lists a transaction's "
        "partitions in any order): both sides' lists are sorted.",
    ),
    Rule(
        "foreign-entries",
        "listings of every topic, group, transaction or resource (steps marked listing)",
        "The oracle is shared by the whole test run: entries whose name is not one of this "
        "run's are dropped, and so is a paging cursor that names another run's topic (the "
        "page ended in topics that are not this run's). Entries asked for by name are never "
        "dropped.",
    ),
)

NODE_FIELDS = frozenset(
    {
        "node_id",
        "leader_id",
        "controller_id",
        "broker_id",
        "replica_nodes",
        "isr_nodes",
        "offline_replicas",
        "eligible_leader_replicas",
        "last_known_elr",
        "replicas",
        "adding_replicas",
        "removing_replicas",
        "leader",
    }
)
MEMBER_FIELDS = frozenset({"member_id", "leader"})
PROSE_FIELDS = frozenset({"error_message", "batch_index_error_message"})
MACHINE_CONFIGS = frozenset(
    {
        "log.dirs",
        "log.dir",
        "listeners",
        "advertised.listeners",
        "node.id",
        "broker.id",
        "controller.quorum.voters",
        "metadata.log.dir",
    }
)
# Lists of scalars that are sets in Kafka (its answers build them from hash sets).
SET_FIELDS = frozenset({"partitions", "partition_indexes"})
NAME_KEYS = ("name", "topic", "topic_name", "group_id", "transactional_id", "resource_name")
NIL_UUID = "00000000-0000-0000-0000-000000000000"
INIT_PRODUCER_ID, JOIN_GROUP, END_TXN = 22, 11, 26
HEARTBEATS = frozenset({68, 76, 88})  # KIP-848 consumer, share and streams group heartbeats
QUORUM_REPLICAS = frozenset({"current_voters", "observers"})  # DescribeQuorum's replica lists
CLOCK_SLACK_MS = 3_600_000


@dataclass
class Facts:
    """One side's identities, to be replaced by placeholders."""

    node_id: int | None = None
    host: str | None = None
    port: int | None = None
    cluster_id: str | None = None
    names: dict[str, str] = field(default_factory=dict)  # real name -> logical name
    window: tuple[int, int] = (0, 0)  # the run's wall clock, ms
    topic_ids: dict[str, str] = field(default_factory=dict)  # uuid text -> placeholder
    members: dict[str, str] = field(default_factory=dict)
    producers: dict[int, str] = field(default_factory=dict)
    _names_re: re.Pattern[str] | None = None

    def name(self, text: str) -> str:
        """`text` with every run name replaced by its `<logical>` placeholder."""
        if not self.names:
            return text
        if self._names_re is None:
            alternatives = sorted(self.names, key=len, reverse=True)
            self._names_re = re.compile("|".join(re.escape(n) for n in alternatives))
        return self._names_re.sub(lambda m: f"<{self.names[m.group(0)]}>", text)

    def is_ours(self, name: Any) -> bool:
        return isinstance(name, str) and self.name(name) != name

    def learn(self, api: int, tree: Any) -> None:
        """Record the identities one plain answer gives (call in the corpus's order): topic ids
        from any answer naming a topic with its id, member ids from JoinGroup answers,
        producer ids from InitProducerId and EndTxn answers. Only identities learned here are
        replaced; any other value stays as it is (the ids the corpus makes up, a 0 where a
        broker should say -1)."""
        self._learn_topic_ids(tree)
        if api == JOIN_GROUP and isinstance(tree, dict):
            for member_id in [tree.get("member_id"), tree.get("leader")] + [
                m.get("member_id") for m in tree.get("members") or []
            ]:
                if isinstance(member_id, str) and member_id and member_id not in self.members:
                    self.members[member_id] = f"<member:{self._numbered('<member:') + 1}>"
        if api in HEARTBEATS and isinstance(tree, dict):
            member_id = tree.get("member_id")
            # a broker-made id, numbered apart so that the classic members' numbers stay
            made = isinstance(member_id, str) and member_id and not self.is_ours(member_id)
            if made and member_id not in self.members:
                given = self._numbered("<heartbeat-member:")
                self.members[member_id] = f"<heartbeat-member:{given + 1}>"
        if api in (INIT_PRODUCER_ID, END_TXN) and isinstance(tree, dict):
            pid = tree.get("producer_id")
            if isinstance(pid, int) and pid >= 0 and pid not in self.producers:
                self.producers[pid] = f"<producer:{len(self.producers) + 1}>"

    def _numbered(self, prefix: str) -> int:
        """How many member ids have a placeholder starting with `prefix`."""
        return sum(1 for v in self.members.values() if v.startswith(prefix))

    def _learn_topic_ids(self, tree: Any) -> None:
        if isinstance(tree, dict):
            tid = tree.get("topic_id")
            name = next((tree[k] for k in ("name", "topic", "topic_name") if k in tree), None)
            new = isinstance(tid, str) and tid != NIL_UUID and tid not in self.topic_ids
            if new and isinstance(tid, str) and isinstance(name, str) and name:
                logical = self.name(name).strip("<>")
                mine = (f"<topic-id:{logical}>", f"<topic-id:{logical}#")
                taken = sum(1 for v in self.topic_ids.values() if v.startswith(mine))
                suffix = f"#{taken + 1}" if taken else ""
                self.topic_ids[tid] = f"<topic-id:{logical}{suffix}>"
            for value in tree.values():
                self._learn_topic_ids(value)
        elif isinstance(tree, list):
            for value in tree:
                self._learn_topic_ids(value)


def _is_clock_field(key: str) -> bool:
    if "throttle" in key or "timeout" in key:
        return False
    return "timestamp" in key or key.endswith("time_ms") or key.endswith("_time")


def _scalar(key: str, value: Any, facts: Facts) -> Any:
    """The normalised value of field `key` (a scalar or a list of scalars)."""
    if isinstance(value, list):
        return [_scalar(key, v, facts) for v in value]
    if isinstance(value, str):
        return _string(key, value, facts)
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    return _integer(key, value, facts)


def _string(key: str, value: str, facts: Facts) -> Any:
    if key == "topic_id":
        if value == NIL_UUID:
            return value
        return facts.topic_ids.get(value, "<topic-id:?>")
    if key in MEMBER_FIELDS and value in facts.members:
        return facts.members[value]
    if key in PROSE_FIELDS:
        return "<text>" if value else value
    if key == "documentation":
        return "<doc>"
    if key == "resource_name" and value == str(facts.node_id):
        return "<node>"
    if key == "cluster_id" and value == facts.cluster_id:
        return "<cluster-id>"
    if key == "host" and value == facts.host:
        return "<host>"
    if key == "log_dir":
        return "<log-dir>"
    if key == "client_instance_id" and value != NIL_UUID:
        return "<client-instance>"
    return facts.name(value)


def _integer(key: str, value: int, facts: Facts) -> Any:
    if key in NODE_FIELDS and facts.node_id is not None and value == facts.node_id:
        return "<node>"
    if key == "port" and value == facts.port:
        return "<port>"
    if key == "producer_id" and value in facts.producers:
        return facts.producers[value]
    if key == "throttle_time_ms":
        return "<throttle>"
    if key == "session_id" and value != 0:
        return "<session>"
    if key in ("total_bytes", "usable_bytes") and value >= 0:
        return "<bytes>"
    if key == "finalized_features_epoch" and value >= 0:
        return "<epoch>"
    if key == "subscription_id" and value != 0:
        return "<subscription>"
    if _is_clock_field(key):
        low, high = facts.window
        if low - CLOCK_SLACK_MS <= value <= high + CLOCK_SLACK_MS:
            return "<now>"
    return value


def _metadata_log(tree: dict[str, Any], out: dict[str, Any], key: str) -> None:
    """Rule metadata-log, on one struct of a DescribeQuorum answer (`key`: the list it is in)."""
    offsets = []
    if "current_voters" in tree:
        offsets.append("high_watermark")
    if key in QUORUM_REPLICAS:
        offsets.append("log_end_offset")
    for name in offsets:
        if isinstance(tree.get(name), int) and tree[name] >= 0:
            out[name] = "<metadata-offset>"
    if key == "listeners" and isinstance(out.get("port"), int):
        out["port"] = "<listener-port>"


def _entry_name(entry: dict[str, Any]) -> Any:
    return next((entry[k] for k in NAME_KEYS if k in entry), None)


def normalise(tree: Any, facts: Facts, listing: bool = False, key: str = "") -> Any:
    """The normalised copy of a plain answer (see the module docstring)."""
    if isinstance(tree, dict):
        out = {k: normalise(v, facts, listing, k) for k, v in tree.items()}
        cursor = tree.get("next_cursor")
        if listing and isinstance(cursor, dict) and not facts.is_ours(cursor.get("topic_name")):
            out["next_cursor"] = None
        if tree.get("name") in MACHINE_CONFIGS and "value" in tree and tree["value"] is not None:
            out["value"] = "<machine>"
        _metadata_log(tree, out, key)
        return out
    if isinstance(tree, list):
        if listing and tree and all(isinstance(e, dict) for e in tree):
            named = [e for e in tree if _entry_name(e) is not None]
            if named:
                tree = [e for e in tree if _entry_name(e) is None or facts.is_ours(_entry_name(e))]
        if tree and all(not isinstance(e, dict | list) for e in tree):
            values = _scalar(key, tree, facts)
            return sorted(values, key=repr) if key in SET_FIELDS else values
        return [normalise(v, facts, listing, key) for v in tree]
    if tree is None:
        return None
    return _scalar(key, tree, facts)
