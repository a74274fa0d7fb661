"""One module per Kafka API: decode -> call a service -> build the response.

Every module here registers its handler with `wirebroker.handlers.registry.handler`;
`registry.load_handlers()` imports them all (modules whose name starts with "_" are skipped).
Each module opens with a docstring naming the versions it serves and what it skips. Handlers put
per-topic/per-partition errors in the response; they never raise for a client's mistake.
"""
