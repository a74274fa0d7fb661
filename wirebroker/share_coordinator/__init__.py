"""The KIP-932 share coordinator: share-partition state in `__share_group_state`.

Pure: `config.py`, `keys.py`, `batches.py`, `core.py`, `offsets_admin.py`; trio: `runtime.py`
(on the shared `wirebroker.coordinator.runtime.CoordinatorRuntime`) and `persister.py` (the
`Persister` the share partitions and the group coordinator use). Notes: docs/share-groups.md,
section "Share state".
"""
