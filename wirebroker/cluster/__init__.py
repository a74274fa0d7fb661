"""The ZooKeeper runtime of a broker: registration and session (`zk_registration`,
`zk_member`), the metadata mirror (`zk_mirror`, `zk_metadata_cache`), role changes
(`zk_roles`), the ISR writer (`zk_isr`), controlled shutdown, dynamic broker configs, producer
id blocks, the ZooKeeper topic admin (`zk_topic_admin`) and the controller (`controller`, its
pure core `controller_context`). The single broker runs the same code over an in-process
ZooKeeper (`local_cluster`).

Above `replication` (it drives the replicas' roles through `zk_roles.ReplicaRoles`); what it
knows and decides with (topic store, topic admin interface, view, placement, election rules)
is `wirebroker.metadata`, below `replication`. Only the composition root (`broker.py`), the
command line and (for a type) `faults/control.py` import this package.
"""
