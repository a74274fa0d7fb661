"""kafka-topics and kafka-configs cases (see README.md for what each proves)."""

from __future__ import annotations

import base64
import re

from target import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    Target,
    config_lines,
    describe_configs,
    eventually,
    wait_until,
)

from protocol.api import ApiKey

RETENTION = "123456789"
LOGGER_FREE_KEY = "log.cleaner.backoff.ms"  # dynamic in Kafka, changes nothing a case sees


def _both(ran_out: str, ran_err: str) -> str:
    return ran_out + "\n" + ran_err


def _create(t: Target, topic: str, partitions: int, *configs: str) -> None:
    args = ["--bootstrap-server", t.bootstrap, "--create", "--topic", topic]
    args += ["--partitions", str(partitions), "--replication-factor", str(t.replication_factor)]
    for c in configs:
        args += ["--config", c]
    ran = t.tool("kafka-topics", *args).expect(0)
    assert ran.lines == [f"Created topic {topic}."], ran.out
    with t.wire() as w:
        w.wait_topics_ready([topic])


def topics_create(t: Target) -> str:
    topic = t.name("create")
    _create(t, topic, 3, f"retention.ms={RETENTION}", "cleanup.policy=compact")
    with t.wire() as w:
        assert w.topics([topic]) == {topic: 3}, w.topics([topic])
        configs = w.topic_configs(topic)
    assert configs["retention.ms"] == RETENTION, configs["retention.ms"]
    assert configs["cleanup.policy"] == "compact", configs["cleanup.policy"]
    again = ["--bootstrap-server", t.bootstrap, "--create", "--topic", topic, "--partitions", "1"]
    dup = t.tool("kafka-topics", *again).expect(1)
    assert "TopicExistsException" in _both(dup.out, dup.err), dup.out + dup.err
    t.tool("kafka-topics", *again, "--if-not-exists").expect(0)
    with t.wire() as w:
        assert w.topics([topic]) == {topic: 3}, "--if-not-exists changed the topic"
    return (
        "created with 3 partitions and two --config overrides (stored, per DescribeConfigs); "
        "a second --create fails with TopicExistsException (exit 1), --if-not-exists is a no-op"
    )


def _topic_id(t: Target, topic: str) -> str:
    with t.wire() as w:
        body = {
            "topics": [{"name": topic}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        }
        resp = w.call(ApiKey.METADATA, 12, body)
    [meta] = resp.topics
    return base64.urlsafe_b64encode(meta.topic_id.bytes).decode().rstrip("=")


def topics_describe(t: Target) -> str:
    topic = t.topic("describe", 3, {"retention.ms": RETENTION})
    ran = t.tool("kafka-topics", "--bootstrap-server", t.bootstrap, "--describe", "--topic", topic)
    ran.expect(0)
    head = dict(re.findall(r"(\w+): (\S*)", ran.lines[0]))
    assert head["Topic"] == topic and head["PartitionCount"] == "3", ran.lines[0]
    assert head["ReplicationFactor"] == str(t.replication_factor), ran.lines[0]
    assert head["TopicId"] == _topic_id(t, topic), (head["TopicId"], _topic_id(t, topic))
    assert f"retention.ms={RETENTION}" in ran.lines[0], ran.lines[0]
    with t.wire() as w:
        views = w.partitions(topic)
    shown = {}
    for line in ran.lines[1:]:
        cells = dict(re.findall(r"(\w+): (\S*)", line))
        shown[int(cells["Partition"])] = (
            int(cells["Leader"]),
            tuple(int(x) for x in cells["Replicas"].split(",")),
            tuple(int(x) for x in cells["Isr"].split(",")),
        )
    want = {p: (v.leader, v.replicas, v.isr) for p, v in views.items()}
    assert shown == want, f"tool {shown} != Metadata {want}"
    return (
        "PartitionCount, ReplicationFactor, TopicId, the config override and every "
        "partition's leader, replicas and ISR equal what Metadata says"
    )


def topics_list(t: Target) -> str:
    mine = [t.topic("list", 1), t.topic("list", 1)]
    with t.wire() as w:
        w.ensure_offsets_topic()
    listed = t.tool("kafka-topics", "--bootstrap-server", t.bootstrap, "--list").expect(0).lines
    assert set(mine) <= set(listed), f"{mine} not all in {listed}"
    assert "__consumer_offsets" in listed, listed
    assert listed == sorted(listed), "not sorted"
    public = t.tool(
        "kafka-topics", "--bootstrap-server", t.bootstrap, "--list", "--exclude-internal"
    ).expect(0)
    assert "__consumer_offsets" not in public.lines, public.lines
    assert set(mine) <= set(public.lines)
    return "--list shows the new topics and __consumer_offsets, sorted; --exclude-internal hides it"


def topics_alter(t: Target) -> str:
    topic = t.topic("alter", 2)
    base = ["--bootstrap-server", t.bootstrap, "--alter", "--topic", topic]
    t.tool("kafka-topics", *base, "--partitions", "5").expect(0)

    def five() -> None:
        with t.wire() as w:
            assert w.topics([topic]) == {topic: 5}, w.topics([topic])
            w.wait_topics_ready([topic])

    eventually(five)
    fewer = t.tool("kafka-topics", *base, "--partitions", "3").expect(1)
    text = _both(fewer.out, fewer.err)
    assert "InvalidPartitionsException" in text, text
    with t.wire() as w:
        assert w.topics([topic]) == {topic: 5}, "shrinking changed the partition count"
    return "--alter --partitions 5 adds 3 partitions; 3 is refused (InvalidPartitionsException)"


def topics_delete(t: Target) -> str:
    topic = t.topic("delete", 2)
    ran = t.tool("kafka-topics", "--bootstrap-server", t.bootstrap, "--delete", "--topic", topic)
    ran.expect(0)

    def gone() -> bool:
        with t.wire() as w:
            return topic not in w.topics([topic])

    wait_until("the topic to be gone", gone)
    listed = t.tool("kafka-topics", "--bootstrap-server", t.bootstrap, "--list").expect(0).lines
    assert topic not in listed, listed
    again = t.tool("kafka-topics", "--bootstrap-server", t.bootstrap, "--delete", "--topic", topic)
    again.expect(1)
    assert "does not exist" in _both(again.out, again.err), again.out + again.err
    return "--delete removes the topic (Metadata, --list); deleting it again fails (exit 1)"


# -- kafka-configs ------------------------------------------------------------------------------
def configs_topic(t: Target) -> str:
    topic = t.topic("configs", 1, {"retention.ms": RETENTION})
    base = ["--bootstrap-server", t.bootstrap, "--entity-type", "topics", "--entity-name", topic]
    add = "cleanup.policy=compact,max.message.bytes=20000"
    done = t.tool("kafka-configs", *base, "--alter", "--add-config", add).expect(0)
    assert done.lines == [f"Completed updating config for topic {topic}."], done.out
    t.tool("kafka-configs", *base, "--alter", "--delete-config", "retention.ms").expect(0)
    described: dict = {}

    def applied() -> None:
        with t.wire() as w:
            described.update(describe_configs(w, 2, topic))
        assert described["cleanup.policy"] == ("compact", "DYNAMIC_TOPIC_CONFIG"), described
        assert described["max.message.bytes"] == ("20000", "DYNAMIC_TOPIC_CONFIG"), described
        assert described["retention.ms"] == ("604800000", "DEFAULT_CONFIG"), described

    eventually(applied)
    dynamic = config_lines(t.tool("kafka-configs", *base, "--describe").expect(0).out)
    assert set(dynamic) == {"cleanup.policy", "max.message.bytes"}, dynamic
    assert dynamic["max.message.bytes"][0] == "20000", dynamic
    assert "DYNAMIC_TOPIC_CONFIG:max.message.bytes=20000" in dynamic["max.message.bytes"][1]
    every = config_lines(t.tool("kafka-configs", *base, "--describe", "--all").expect(0).out)
    mismatched = {
        k: (v[0], described.get(k))
        for k, v in every.items()
        if described.get(k, (None,))[0] != v[0]
    }
    assert not mismatched, f"--all differs from DescribeConfigs: {mismatched}"
    assert set(every) == set(described), set(every) ^ set(described)
    return (
        "--add-config (two keys) and --delete-config change what DescribeConfigs returns; "
        "--describe lists exactly the two overrides; --describe --all equals DescribeConfigs, "
        "key for key"
    )


def _broker_entity(t: Target) -> str:
    return str(t.node_ids()[0])


def configs_broker_describe(t: Target) -> str:
    node = _broker_entity(t)
    base = ["--bootstrap-server", t.bootstrap, "--entity-type", "brokers"]
    every = config_lines(
        t.tool("kafka-configs", *base, "--entity-name", node, "--describe", "--all").expect(0).out
    )
    with t.wire() as w:
        described = describe_configs(w, RESOURCE_BROKER, node)
        defaults = describe_configs(w, RESOURCE_BROKER, "")
    assert set(every) == set(described), sorted(set(every) ^ set(described))[:10]
    values = {k: v[0] for k, v in described.items()}
    shown = {k: None if v[0] == "null" else v[0] for k, v in every.items()}
    differ = {k: (shown[k], values[k]) for k in every if shown[k] != values[k]}
    assert not differ, f"--all differs from DescribeConfigs: {list(differ.items())[:5]}"
    dynamic = t.tool("kafka-configs", *base, "--describe").expect(0).out
    per_broker, _, cluster = dynamic.partition("Default configs for brokers in the cluster are:")
    assert f"Dynamic configs for broker {node} are:" in per_broker, dynamic
    want = {k for k, v in described.items() if v[1] == "DYNAMIC_BROKER_CONFIG"}
    assert set(config_lines(per_broker)) == want, (config_lines(per_broker), want)
    want_default = {k for k, v in defaults.items() if v[1] == "DYNAMIC_DEFAULT_BROKER_CONFIG"}
    assert set(config_lines(cluster)) == want_default, (config_lines(cluster), want_default)
    return (
        "--describe --all of a broker lists every config DescribeConfigs returns, with its "
        "value; --describe lists exactly the dynamic ones (per broker and cluster-wide default)"
    )


def _broker_config_becomes(t: Target, entity: str, want: tuple[str, str]) -> None:
    """Wait (bounded) until DescribeConfigs of broker `entity` ("" the cluster default) shows
    LOGGER_FREE_KEY as `want` (value, source): Kafka applies an altered broker config once
    its controller's record reaches the broker, a moment after the tool returns."""
    seen: list[object] = []

    def shows() -> bool:
        with t.wire() as w:
            seen[:] = [describe_configs(w, RESOURCE_BROKER, entity).get(LOGGER_FREE_KEY)]
        return seen[0] == want

    try:
        wait_until(f"{LOGGER_FREE_KEY} of broker {entity!r} to be {want}", shows, timeout=15)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; DescribeConfigs shows {seen[0]}") from None


def configs_broker_alter(t: Target) -> str:
    node = _broker_entity(t)
    base = ["--bootstrap-server", t.bootstrap, "--entity-type", "brokers"]
    one = [*base, "--entity-name", node]
    default = [*base, "--entity-default"]
    ran = t.tool("kafka-configs", *one, "--alter", "--add-config", f"{LOGGER_FREE_KEY}=15001")
    ran.expect(0)
    assert ran.lines == [f"Completed updating config for broker {node}."], ran.out
    try:
        _broker_config_becomes(t, node, ("15001", "DYNAMIC_BROKER_CONFIG"))
        shown = config_lines(t.tool("kafka-configs", *one, "--describe").expect(0).out)
        assert shown.get(LOGGER_FREE_KEY, ("",))[0] == "15001", shown
        t.tool("kafka-configs", *default, "--alter", "--add-config", f"{LOGGER_FREE_KEY}=15002")
        _broker_config_becomes(t, "", ("15002", "DYNAMIC_DEFAULT_BROKER_CONFIG"))
        # the per-broker value wins over the cluster default
        _broker_config_becomes(t, node, ("15001", "DYNAMIC_BROKER_CONFIG"))
    finally:
        t.tool("kafka-configs", *one, "--alter", "--delete-config", LOGGER_FREE_KEY)
        t.tool("kafka-configs", *default, "--alter", "--delete-config", LOGGER_FREE_KEY)
    _broker_config_becomes(t, node, ("15000", "DEFAULT_CONFIG"))
    return (
        f"--alter --add-config {LOGGER_FREE_KEY} for one broker (DYNAMIC_BROKER_CONFIG) and "
        "--entity-default (DYNAMIC_DEFAULT_BROKER_CONFIG; the broker's own value wins), both "
        "read back by DescribeConfigs; --delete-config restores the default"
    )


def configs_groups(t: Target) -> str:
    """kafka-configs --entity-type groups: KIP-848's group configs."""
    group = t.name("cfg-group")
    base = ["--bootstrap-server", t.bootstrap, "--entity-type", "groups", "--entity-name", group]
    add = "consumer.session.timeout.ms=50000,share.delivery.count.limit=3"
    done = t.tool("kafka-configs", *base, "--alter", "--add-config", add).expect(0)
    assert done.lines == [f"Completed updating config for group {group}."], done.out
    described: dict = {}

    def applied() -> None:
        with t.wire() as w:
            described.update(describe_configs(w, RESOURCE_GROUP, group))
        assert described["consumer.session.timeout.ms"] == ("50000", "DYNAMIC_GROUP_CONFIG")
        assert described["share.delivery.count.limit"] == ("3", "DYNAMIC_GROUP_CONFIG")

    eventually(applied)
    dynamic = config_lines(t.tool("kafka-configs", *base, "--describe").expect(0).out)
    assert set(dynamic) == {"consumer.session.timeout.ms", "share.delivery.count.limit"}, dynamic
    assert dynamic["consumer.session.timeout.ms"] == (
        "50000",
        "DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, "
        "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000",
    ), dynamic
    every = config_lines(t.tool("kafka-configs", *base, "--describe", "--all").expect(0).out)
    assert {k: v[0] for k, v in every.items()} == {k: v[0] for k, v in described.items()}
    refused = t.tool(
        "kafka-configs", *base, "--alter", "--add-config", "share.delivery.count.limit=11"
    )
    refused.expect(1)
    assert "share.delivery.count.limit must be in the range 2 to 10 inclusive." in refused.err
    t.tool("kafka-configs", *base, "--alter", "--delete-config", "share.delivery.count.limit")
    described.clear()

    def deleted() -> None:
        with t.wire() as w:
            described.update(describe_configs(w, RESOURCE_GROUP, group))
        assert described["share.delivery.count.limit"] == ("5", "DEFAULT_CONFIG"), described

    eventually(deleted)
    return (
        "--alter --add-config (two keys) on a group is described as DYNAMIC_GROUP_CONFIG; "
        "--describe lists exactly the overrides with their synonyms, --describe --all equals "
        "DescribeConfigs; an out-of-range value is refused with Kafka's text; --delete-config "
        "restores the default"
    )
