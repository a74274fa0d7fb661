"""The transaction coordinator (KIP-98): a pure core (metadata.py: states and transitions,
coordinator.py: the requests, effects.py: what the runtime applies, loader.py: replay of
`__transaction_state`; codecs in `protocol.txn_records`). Only a future `runtime.py` may use
trio."""
