"""Client telemetry (KIP-714): GetTelemetrySubscriptions and PushTelemetry.

Kafka 4.4 lists neither in ApiVersions unless a metrics reporter that takes client
telemetry is configured (the oracle has none), yet it answers them; so they are sent even
when neither side advertises them (`corpus.build`): the report lists them as probes, with
both reactions. A client asks for its subscription (no instance id yet: the broker makes
one), pushes an empty, terminating batch of metrics with the id and subscription it got,
and pushes as a client instance the broker never saw.
"""

from __future__ import annotations

import uuid
from typing import Any

from compat.conformance.corpus.base import API, step, sweep_steps
from compat.conformance.script import Ctx, Scenario

NIL = uuid.UUID(int=0)
STRANGER = uuid.UUID(int=0x7E1E)  # a client instance id the broker never gave


def _keep(ctx: Ctx, answer: Any) -> None:
    if not answer.error_code:
        ctx.vars["instance"] = answer.client_instance_id
        ctx.vars["subscription"] = answer.subscription_id


def _push(stranger: bool) -> Any:
    def body(ctx: Ctx) -> dict[str, Any]:
        return {
            "client_instance_id": STRANGER if stranger else ctx.vars.get("instance", NIL),
            "subscription_id": 1 if stranger else ctx.vars.get("subscription", 0),
            "terminating": not stranger,
            "compression_type": 0,
            "metrics": b"",
        }

    return body


def sweep(subscriptions: list[int], push: list[int]) -> Scenario:
    items = sweep_steps(
        "GetTelemetrySubscriptions",
        API.GET_TELEMETRY_SUBSCRIPTIONS,
        subscriptions,
        {"client_instance_id": NIL},
        "a new client's subscription (the broker makes its instance id)",
        keep=_keep,
    )
    for v in push:
        items += [
            step(
                f"PushTelemetry.v{v}",
                API.PUSH_TELEMETRY,
                v,
                _push(stranger=False),
                "an empty, terminating push with the instance id and subscription given",
            ),
            step(
                f"PushTelemetry.v{v}.unknown_instance",
                API.PUSH_TELEMETRY,
                v,
                _push(stranger=True),
                "a push from a client instance id the broker never gave",
            ),
        ]
    return Scenario("sweep client telemetry", tuple(items))
