"""Fault injection (issue 16): make the broker misbehave on purpose, for client tests.

    core.py        the pure fault store and matcher (`FaultRules`), taking `now_ms`
    responses.py   a valid error response for any request, from the generated schemas
    control.py     broker-level faults (unreachable, refused or dropped connections, leadership
                   moves, ISR shrinks) applied to the running broker (trio)
    http.py        the JSON routes at /faults on the admin listener

The dispatcher (`wirebroker.handlers.dispatcher`) consults `core` only; `core` and
`responses` import nothing of the broker (import-linter contract).
"""
