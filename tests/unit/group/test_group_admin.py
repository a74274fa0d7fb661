"""ListGroups, DescribeGroups, DeleteGroups."""

from __future__ import annotations

from groupkit import Kit

from protocol.errors import ErrorCode as E
from protocol.group_records import GroupMetadataKey, OffsetCommitKey, decode_key
from wirebroker.group import GroupState


def three_groups() -> Kit:
    k = Kit()
    k.stable_group(2, group="stable")
    k.commit({("t", 0): 1}, group="simple")
    k.stable_group(1, group="preparing", protocol_type="connect")
    k.join_dynamic(client_id="x", group="preparing", protocol_type="connect")
    return k


def test_list_groups_with_state_and_type_filters() -> None:
    k = three_groups()
    everything = k.list_groups()
    assert everything["error_code"] == 0
    assert sorted(
        (g["group_id"], g["protocol_type"], g["group_state"], g["group_type"])
        for g in everything["groups"]
    ) == [
        ("preparing", "connect", "PreparingRebalance", "classic"),
        ("simple", "", "Empty", "classic"),
        ("stable", "consumer", "Stable", "classic"),
    ]

    def ids(**kw: list[str]) -> list[str]:
        return sorted(g["group_id"] for g in k.list_groups(**kw)["groups"])

    assert ids(states_filter=["stable", " EMPTY "]) == ["simple", "stable"]
    assert ids(states_filter=["Dead"]) == []
    assert ids(types_filter=["Classic"]) == ["preparing", "simple", "stable"]
    assert ids(types_filter=["consumer"]) == []
    assert ids(types_filter=["bogus"]) == []


def test_describe_stable_group_has_protocol_and_member_metadata() -> None:
    k = Kit()
    leader, follower = k.stable_group(2)
    (d,) = k.describe_groups(api_version=5, group_ids=["g"])["groups"]
    assert (d["error_code"], d["group_state"], d["protocol_type"], d["protocol_data"]) == (
        0,
        "Stable",
        "consumer",
        "range",
    )
    assert d["authorized_operations"] == -2147483648
    assert d["members"] == [
        {
            "member_id": leader,
            "group_instance_id": None,
            "client_id": "c0",
            "client_host": "/127.0.0.1",
            "member_metadata": b"r",
            "member_assignment": f"assign-{leader}".encode(),
        },
        {
            "member_id": follower,
            "group_instance_id": None,
            "client_id": "c1",
            "client_host": "/127.0.0.1",
            "member_metadata": b"r",
            "member_assignment": f"assign-{follower}".encode(),
        },
    ]


def test_describe_rebalancing_group_hides_metadata() -> None:
    k = Kit()
    leader, _ = k.stable_group(2)
    k.join(leader)
    (d,) = k.describe_groups(api_version=5, group_ids=["g"])["groups"]
    assert d["group_state"] == "PreparingRebalance" and d["protocol_data"] == ""
    assert all(m["member_metadata"] == b"" for m in d["members"])
    assert d["members"][0]["member_assignment"] == f"assign-{leader}".encode()


def test_describe_unknown_group_dead_and_v6_group_id_not_found() -> None:
    k = Kit()
    (v5,) = k.describe_groups(api_version=5, group_ids=["nope"])["groups"]
    assert (v5["error_code"], v5["group_state"], v5["error_message"]) == (0, "Dead", None)
    (v6,) = k.describe_groups(api_version=6, group_ids=["nope"])["groups"]
    assert v6["error_code"] == E.GROUP_ID_NOT_FOUND and v6["group_state"] == "Dead"
    assert v6["error_message"] == "Group nope not found."


def test_delete_groups_writes_offset_and_group_tombstones() -> None:
    k = Kit()
    k.stable_group(2, group="busy")
    k.commit({("t", 0): 1, ("t", 1): 2, ("u", 0): 3}, group="idle")
    before = len(k.records)
    r = k.absorb(k.core.delete_groups(k.now, group_ids=["idle", "busy", "ghost", "idle"]))
    assert r.response is not None
    assert [(x.group_id, x.error) for x in r.response.results] == [
        ("idle", 0),
        ("busy", E.NON_EMPTY_GROUP),
        ("ghost", E.GROUP_ID_NOT_FOUND),
        ("idle", E.GROUP_ID_NOT_FOUND),
    ]
    new = k.records[before:]
    assert all(rec.value is None for rec in new)
    assert [decode_key(rec.key) for rec in new] == [
        OffsetCommitKey("idle", "t", 0),
        OffsetCommitKey("idle", "t", 1),
        OffsetCommitKey("idle", "u", 0),
        GroupMetadataKey("idle"),
    ]
    assert k.core.group("idle") is None and k.fetched("idle") == {}
    g = k.core.group("busy")
    assert g is not None and g.state is GroupState.STABLE
    # A deleted group can be reused from scratch.
    assert k.commit({("t", 0): 50}, group="idle") == {("t", 0): E.NONE}
