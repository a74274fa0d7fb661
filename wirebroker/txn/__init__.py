"""The transaction coordinator (KIP-98): a pure core (metadata.py: states and transitions,
coordinator.py: the requests, effects.py: what the runtime applies, loader.py: replay of
`__transaction_state`; codecs in `protocol.txn_records`), its trio runtime (runtime.py, over
the shared `wirebroker.coordinator.runtime.CoordinatorRuntime`) and the WriteTxnMarkers sender
(markers.py), the package's only trio modules."""
