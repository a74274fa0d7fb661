"""ApiVersions v5 (KIP-1242) across a real 3-broker cluster: a client that names the cluster
and the node it means (the Java client 4.4 does, from its metadata) is answered by that node
and told REBOOTSTRAP_REQUIRED by any other, whose address it may have kept from before a
broker moved (tests/oracle/test_new_versions.py compares the single-broker case with Apache
Kafka)."""

from __future__ import annotations

import _wire
from _cluster import ClusterProcesses

from protocol.api import ApiKey
from protocol.errors import ErrorCode

SOFTWARE = {"client_software_name": "cluster-tests", "client_software_version": "1"}


def test_each_broker_answers_only_as_itself(cluster: ClusterProcesses) -> None:
    cluster.wait_metadata_brokers()
    meta = _wire.metadata(cluster.address(0), [])
    nodes = sorted(b.node_id for b in meta.brokers)
    assert nodes == [0, 1, 2]
    for node in nodes:
        for named in nodes:
            body = {**SOFTWARE, "cluster_id": meta.cluster_id, "node_id": named}
            answer = _wire.request(cluster.address(node), ApiKey.API_VERSIONS, 5, body)
            expected = ErrorCode.NONE if named == node else ErrorCode.REBOOTSTRAP_REQUIRED
            assert answer.error_code == expected, (node, named)
            assert bool(answer.api_keys) == (named == node)
        other = {**SOFTWARE, "cluster_id": meta.cluster_id + "-other", "node_id": node}
        answer = _wire.request(cluster.address(node), ApiKey.API_VERSIONS, 5, other)
        assert answer.error_code == ErrorCode.REBOOTSTRAP_REQUIRED
