"""The KRaft controller's APIs a broker also listens for (it forwards them to the
controller): UnregisterBroker, UnregisterController, AddRaftVoter and RemoveRaftVoter.

The oracle is shared by a whole test run, so every request here is invalid-but-safe: it
names a broker, controller or voter id (999) that does not exist, with a made-up directory
id and an endpoint nobody listens on; none can change the cluster. (On the oracle's static
quorum, kraft.version 0, adding or removing a voter is refused before anything else is
looked at.) DescribeQuorum is in sweeps_misc.py.
"""

from __future__ import annotations

import uuid

from compat.conformance.corpus.base import API, sweep_steps
from compat.conformance.script import Scenario

NOBODY = 999  # no broker, controller or voter has this id
DIRECTORY = uuid.UUID(int=0xD1)  # no log directory has this id


def sweep(
    unregister_broker: list[int],
    unregister_controller: list[int],
    add_voter: list[int],
    remove_voter: list[int],
) -> Scenario:
    items = sweep_steps(
        "UnregisterBroker",
        API.UNREGISTER_BROKER,
        unregister_broker,
        {"broker_id": NOBODY},
        f"unregister broker {NOBODY}, which does not exist (never the oracle's own)",
    )
    items += sweep_steps(
        "UnregisterController",
        API.UNREGISTER_CONTROLLER,
        unregister_controller,
        {"controller_id": NOBODY},
        f"unregister controller {NOBODY}, which does not exist",
    )
    items += sweep_steps(
        "AddRaftVoter",
        API.ADD_RAFT_VOTER,
        add_voter,
        {
            "cluster_id": None,
            "timeout_ms": 1000,
            "voter_id": NOBODY,
            "voter_directory_id": DIRECTORY,
            "listeners": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 1}],
            "ack_when_committed": True,
        },
        f"add voter {NOBODY} (no such node; an endpoint nobody listens on)",
    )
    items += sweep_steps(
        "RemoveRaftVoter",
        API.REMOVE_RAFT_VOTER,
        remove_voter,
        {"cluster_id": None, "voter_id": NOBODY, "voter_directory_id": DIRECTORY},
        f"remove voter {NOBODY}, which is not a voter",
    )
    return Scenario("sweep KRaft controller APIs (invalid-but-safe)", tuple(items))
