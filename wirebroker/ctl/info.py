"""`wirebroker cluster info`: the brokers, the controller and the cluster id (DescribeCluster;
kafka-python falls back to Metadata on brokers without it).

JSON: {"cluster_id", "controller", "brokers": [{"id", "host", "port", "rack", "controller"}]}
"""

from __future__ import annotations

import argparse

from wirebroker.ctl._kafka import admin
from wirebroker.ctl._output import emit_json, table


def cluster_info(args: argparse.Namespace) -> int:
    with admin(args) as client:
        found = client.describe_cluster()
    controller = found.get("controller_id")
    brokers = sorted(
        (
            {
                "id": b.get("broker_id", b.get("node_id")),
                "host": b["host"],
                "port": b["port"],
                "rack": b.get("rack"),
                "controller": b.get("broker_id", b.get("node_id")) == controller,
            }
            for b in found.get("brokers", [])
        ),
        key=lambda b: b["id"],
    )
    document = {"cluster_id": found.get("cluster_id"), "controller": controller, "brokers": brokers}
    if args.format == "json":
        emit_json(document)
        return 0
    table(
        ["cluster id", "controller", "brokers"],
        [[document["cluster_id"], controller, len(brokers)]],
    )
    print()
    table(
        ["id", "host", "port", "rack"],
        [
            [f"{b['id']}*" if b["controller"] else b["id"], b["host"], b["port"], b["rack"]]
            for b in brokers
        ],
        title="BROKERS (* controller)",
    )
    return 0
