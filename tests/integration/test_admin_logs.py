"""Operational log lines, in `--log-format json`: a line per topic created and deleted, per
group rebalance (group, generation, members) and per leadership change."""

from __future__ import annotations

import json
from pathlib import Path

from _broker import BrokerProcess
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import NewTopic


def test_json_log_lines_for_topics_groups_and_leadership(tmp_path: Path) -> None:
    log_path = tmp_path / "broker.log"
    proc = BrokerProcess(
        tmp_path / "data",
        log_path=log_path,
        extra_args=["--log-format", "json"],
        overrides={"auto.create.topics.enable": "false"},  # a late metadata would recreate it
    )
    try:
        proc.start()
        admin = KafkaAdminClient(bootstrap_servers=proc.bootstrap)
        admin.create_topics([NewTopic("logged-topic", 2, 1)])
        consumer = KafkaConsumer(
            "logged-topic",
            bootstrap_servers=proc.bootstrap,
            group_id="logged-group",
            client_id="logged-client",
        )
        for _ in range(40):
            consumer.poll(timeout_ms=250)
            if consumer.assignment():
                break
        assert consumer.assignment()
        consumer.close()
        admin.delete_topics(["logged-topic"])
        admin.close()
    finally:
        proc.close()
    lines = [line for line in log_path.read_text().splitlines() if line.startswith("{")]
    records = [json.loads(line) for line in lines]  # every broker line is JSON
    assert records and all({"ts", "level", "logger", "message"} <= r.keys() for r in records)
    messages = [r["message"] for r in records]

    def count(*parts: str) -> int:
        return sum(all(p in m for p in parts) for m in messages)

    assert count("created topic logged-topic with assignment") == 1
    assert count("deleting topic logged-topic") == 1
    assert count("logged-topic-0: leader at epoch") == 1
    assert count("logged-topic-1: leader at epoch") == 1
    assert (
        count("group logged-group rebalanced: generation 1,", "1 member(s)", "logged-client") == 1
    )
