"""Extra librdkafka settings for every confluent-kafka client the reliability harnesses make
(`tests/reliability/_chaos.py`, `_cluster_chaos.py`, `tests/cluster/_streams.py`, the group
member processes of `_group_procs.py`), from the environment so that child processes get them
too: `WIREBROKER_TEST_LIBRDKAFKA` holds a JSON object of settings, such as
`security.protocol`, `ssl.ca.location`, `sasl.mechanism`, `sasl.username`, `sasl.password`
(`tools/reliability/cluster_chaos.py --security SASL_SSL` sets it). Unset: nothing extra."""

from __future__ import annotations

import json
import os

ENV = "WIREBROKER_TEST_LIBRDKAFKA"


def librdkafka_extra() -> dict[str, str]:
    """The settings to add to a librdkafka client's configuration (usually none)."""
    extra: dict[str, str] = json.loads(os.environ.get(ENV) or "{}")
    return extra
