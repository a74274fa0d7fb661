"""The conformance harness's own machinery (compat/conformance): normaliser, comparison,
reasons, statuses, ratchet, report and corpus, on hand-made answers (no broker).

The point of most of these: a real difference must survive normalisation and be reported.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from compat.conformance import ratchet
from compat.conformance.classify import (
    DIFFERS,
    IDENTICAL,
    NOT_COVERED,
    NOT_DECODABLE,
    ONE_SIDE,
    PROBE,
    UNEXPLAINED,
    pairs,
    reason_for,
)
from compat.conformance.compare import ABSENT, Difference, canonical, diff, show
from compat.conformance.corpus import build, coverage, encodable, union
from compat.conformance.harness import KAFKA, OURS, StepResult
from compat.conformance.normalise import RULES, Facts, normalise
from compat.conformance.reasons import REASONS, Reason
from compat.conformance.report import render, step_details
from compat.conformance.script import Step
from compat.conformance.transport import ANSWER, CLOSED, Outcome
from compat.conformance.tree import batches, blob, plain
from protocol.api import SCHEMAS
from protocol.records import RecordSpec, build_batch

NOW = 1_800_000_000_000
TOKEN = "cfabc123"


def facts(**kw: Any) -> Facts:
    base: dict[str, Any] = {
        "node_id": 1,
        "host": "127.0.0.1",
        "port": 9092,
        "cluster_id": "Zq1",
        "names": {f"{TOKEN}-orders": "orders", f"{TOKEN}-orders-2": "orders-2", f"{TOKEN}-g": "g"},
        "window": (NOW, NOW + 60_000),
    }
    base.update(kw)
    return Facts(**base)


def norm(tree: Any, f: Facts | None = None, listing: bool = False) -> Any:
    return normalise(tree, f or facts(), listing)


# -- normaliser: identities become placeholders ---------------------------------------------------
def test_own_node_id_host_port_and_cluster_id_become_placeholders() -> None:
    answer = {
        "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092}],
        "cluster_id": "Zq1",
        "controller_id": 1,
        "topics": [{"partitions": [{"leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}]}],
    }
    out = norm(answer)
    assert out["brokers"] == [{"node_id": "<node>", "host": "<host>", "port": "<port>"}]
    assert out["cluster_id"] == "<cluster-id>"
    assert out["controller_id"] == "<node>"
    assert out["topics"][0]["partitions"][0] == {
        "leader_id": "<node>",
        "replica_nodes": ["<node>"],
        "isr_nodes": ["<node>"],
    }


def test_no_leader_and_other_nodes_and_foreign_hosts_stay() -> None:
    out = norm({"leader_id": -1, "replica_nodes": [1, 7], "host": "", "port": -1, "node_id": 7})
    assert out == {
        "leader_id": -1,
        "replica_nodes": ["<node>", 7],
        "host": "",
        "port": -1,
        "node_id": 7,
    }


def test_error_codes_and_semantic_values_equal_to_an_identity_are_never_normalised() -> None:
    # error code 1 (OFFSET_OUT_OF_RANGE) equals the node id; offsets equal the port: all stay
    answer = {"error_code": 1, "high_watermark": 9092, "base_offset": 1, "generation_id": 1}
    assert norm(answer) == answer


def test_run_names_become_logical_names_everywhere_longest_first() -> None:
    out = norm(
        {
            "name": f"{TOKEN}-orders-2",
            "error_message": None,
            "value": f"topic {TOKEN}-orders is full",
            "group_id": f"{TOKEN}-g",
        }
    )
    assert out["name"] == "<orders-2>"
    assert out["value"] == "topic <orders> is full"
    assert out["group_id"] == "<g>"


def test_topic_ids_are_learned_from_answers_naming_them_and_a_recreated_topic_is_told_apart() -> (
    None
):
    f = facts()
    first, second, stranger = (str(uuid.UUID(int=n)) for n in (5, 6, 7))
    f.learn(19, {"topics": [{"name": f"{TOKEN}-orders", "topic_id": first}]})
    f.learn(3, {"topics": [{"name": f"{TOKEN}-orders", "topic_id": second}]})
    f.learn(3, {"topics": [{"name": f"{TOKEN}-orders-2", "topic_id": str(uuid.UUID(int=8))}]})
    out = norm(
        {"a": {"topic_id": first}, "b": {"topic_id": second}, "c": {"topic_id": stranger}}, f
    )
    assert out == {
        "a": {"topic_id": "<topic-id:orders>"},
        "b": {"topic_id": "<topic-id:orders#2>"},
        "c": {"topic_id": "<topic-id:?>"},
    }
    nil = "00000000-0000-0000-0000-000000000000"
    assert norm({"topic_id": nil}, f) == {"topic_id": nil}


def test_member_ids_only_from_join_group_answers() -> None:
    f = facts()
    f.learn(
        11, {"member_id": "c-uuid-1", "leader": "c-uuid-1", "members": [{"member_id": "c-uuid-2"}]}
    )
    out = norm(
        {"member_id": "c-uuid-2", "leader": "c-uuid-1", "members": [{"member_id": "made-up"}]}, f
    )
    assert out == {
        "member_id": "<member:2>",
        "leader": "<member:1>",
        "members": [{"member_id": "made-up"}],
    }
    assert norm({"member_id": ""}, f) == {"member_id": ""}


def test_producer_ids_only_from_allocations_and_minus_one_and_zero_stay() -> None:
    f = facts()
    f.learn(22, {"producer_id": 4000, "producer_epoch": 0})
    f.learn(26, {"producer_id": 4001, "producer_epoch": 0})
    f.learn(61, {"producer_id": 4002})  # DescribeProducers allocates nothing
    out = norm({"a": {"producer_id": 4000, "producer_epoch": 3}, "b": {"producer_id": 4001}}, f)
    assert out == {
        "a": {"producer_id": "<producer:1>", "producer_epoch": 3},
        "b": {"producer_id": "<producer:2>"},
    }
    assert norm({"producer_id": 4002}, f) == {"producer_id": 4002}
    assert norm({"producer_id": 0}, f) == {"producer_id": 0}
    assert norm({"producer_id": -1}, f) == {"producer_id": -1}


def test_member_ids_a_heartbeat_answer_gave_are_numbered_apart_and_made_up_ids_stay() -> None:
    f = facts()
    f.learn(68, {"member_id": "AbCdEfGhIjKlMnOpQrStUv", "member_epoch": 2})  # v0: broker-made
    f.learn(68, {"member_id": f"{TOKEN}-g", "member_epoch": 2})  # v1: the client made it
    f.learn(11, {"member_id": "c-uuid-1", "leader": "c-uuid-1", "members": []})
    out = norm(
        {
            "a": {"member_id": "AbCdEfGhIjKlMnOpQrStUv"},
            "b": {"member_id": f"{TOKEN}-g"},
            "c": {"member_id": "c-uuid-1"},
        },
        f,
    )
    assert out == {
        "a": {"member_id": "<heartbeat-member:1>"},
        "b": {"member_id": "<g>"},
        "c": {"member_id": "<member:1>"},  # the classic members' numbers do not move
    }


def test_describe_quorum_metadata_log_offsets_and_listener_ports() -> None:
    answer = {
        "topics": [
            {
                "partitions": [
                    {
                        "leader_id": 1,
                        "leader_epoch": 1,
                        "high_watermark": 347,
                        "current_voters": [{"replica_id": 1, "log_end_offset": 347}],
                        "observers": [{"replica_id": 2, "log_end_offset": -1}],
                    }
                ]
            }
        ],
        "nodes": [{"node_id": 1, "listeners": [{"name": "C", "host": "127.0.0.1", "port": 6}]}],
        "high_watermark": 12,  # anywhere else (a Fetch answer) it is an offset to compare
    }
    out = norm(answer)
    partition = out["topics"][0]["partitions"][0]
    assert partition["high_watermark"] == "<metadata-offset>"
    assert partition["leader_epoch"] == 1
    assert partition["current_voters"] == [{"replica_id": 1, "log_end_offset": "<metadata-offset>"}]
    assert partition["observers"] == [{"replica_id": 2, "log_end_offset": -1}]
    assert out["nodes"][0]["listeners"] == [
        {"name": "C", "host": "<host>", "port": "<listener-port>"}
    ]
    assert out["high_watermark"] == 12


def test_telemetry_ids_become_placeholders_and_nil_stays() -> None:
    nil = "00000000-0000-0000-0000-000000000000"
    out = norm({"client_instance_id": str(uuid.UUID(int=9)), "subscription_id": 77})
    assert out == {"client_instance_id": "<client-instance>", "subscription_id": "<subscription>"}
    assert norm({"client_instance_id": nil, "subscription_id": 0}) == {
        "client_instance_id": nil,
        "subscription_id": 0,
    }


def test_clock_values_only_near_the_run_and_never_timeouts() -> None:
    out = norm(
        {
            "log_append_time_ms": NOW + 5,
            "timestamp": 1_700_000_000_000,
            "max_timestamp": -1,
            "transaction_timeout_ms": NOW + 5,
            "throttle_time_ms": 5,
        }
    )
    assert out == {
        "log_append_time_ms": "<now>",
        "timestamp": 1_700_000_000_000,
        "max_timestamp": -1,
        "transaction_timeout_ms": NOW + 5,
        "throttle_time_ms": "<throttle>",
    }


def test_prose_keeps_null_and_empty_apart_from_text() -> None:
    assert norm({"error_message": "boom"}) == {"error_message": "<text>"}
    assert norm({"error_message": None}) == {"error_message": None}
    assert norm({"error_message": ""}) == {"error_message": ""}
    assert norm({"documentation": ""}) == {"documentation": "<doc>"}
    assert norm({"documentation": None}) == {"documentation": None}


def test_session_ids_machine_configs_and_disk_sizes() -> None:
    out = norm(
        {
            "session_id": 77,
            "results": [{"log_dir": "/tmp/x", "total_bytes": 10, "usable_bytes": -1}],
            "configs": [
                {"name": "log.dirs", "value": "/tmp/x"},
                {"name": "retention.ms", "value": "5"},
            ],
        }
    )
    assert out["session_id"] == "<session>"
    assert out["results"] == [
        {"log_dir": "<log-dir>", "total_bytes": "<bytes>", "usable_bytes": -1}
    ]
    assert out["configs"][0]["value"] == "<machine>"
    assert out["configs"][1]["value"] == "5"
    assert norm({"session_id": 0}) == {"session_id": 0}


def test_partition_sets_are_sorted_but_replica_lists_keep_their_order() -> None:
    out = norm({"partitions": [1, 0], "replica_nodes": [7, 3]})
    assert out == {"partitions": [0, 1], "replica_nodes": [7, 3]}


def test_listings_drop_foreign_entries_and_plain_answers_do_not() -> None:
    answer = {"groups": [{"group_id": f"{TOKEN}-g"}, {"group_id": "someone-else"}]}
    assert norm(answer, listing=True) == {"groups": [{"group_id": "<g>"}]}
    assert norm(answer) == {"groups": [{"group_id": "<g>"}, {"group_id": "someone-else"}]}


def test_every_rule_is_named_and_justified() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert all(r.fields and len(r.why) > 30 for r in RULES)


# -- comparison ---------------------------------------------------------------------------------
def test_a_real_difference_survives_normalisation_and_is_reported() -> None:
    kafka = {
        "topics": [
            {
                "name": f"{TOKEN}-orders",
                "partitions": [{"partition_index": 0, "error_code": 0, "leader_id": 1}],
            }
        ]
    }
    ours = {
        "topics": [
            {
                "name": f"{TOKEN}-orders",
                "partitions": [{"partition_index": 0, "error_code": 5, "leader_id": -1}],
            }
        ]
    }
    found = diff(norm(kafka), norm(ours, facts(node_id=0, port=1)))
    assert found == [
        Difference("topics[name=<orders>].partitions[partition_index=0].error_code", 0, 5),
        Difference("topics[name=<orders>].partitions[partition_index=0].leader_id", "<node>", -1),
    ]


def test_each_side_is_normalised_with_its_own_identities() -> None:
    kafka = {"node_id": 1, "port": 9092, "cluster_id": "Zq1"}
    ours = {"node_id": 0, "port": 40000, "cluster_id": "other"}
    mine = facts(node_id=0, port=40000, cluster_id="other")
    assert diff(norm(kafka), norm(ours, mine)) == []


def test_keyed_lists_ignore_order_and_show_entries_of_one_side() -> None:
    a = {"configs": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}
    b = {
        "configs": [
            {"name": "b", "value": "2"},
            {"name": "c", "value": "3"},
            {"name": "a", "value": "9"},
        ]
    }
    assert diff(a, b) == [
        Difference("configs[name=a].value", "1", "9"),
        Difference("configs[name=c]", ABSENT, {"name": "c", "value": "3"}),
    ]


def test_unkeyed_lists_compare_by_position_and_types_matter() -> None:
    assert diff({"x": [[1], [2]]}, {"x": [[1]]}) == [Difference("x[1]", [2], ABSENT)]
    assert diff({"flag": True}, {"flag": 1}) == [Difference("flag", True, 1)]
    assert diff({"v": None}, {}) == [Difference("v", None, ABSENT)]


def test_canonical_sorts_keyed_lists_only() -> None:
    tree = {
        "members": [{"member_id": "<m2>", "x": [3, 1]}, {"member_id": "<m1>", "x": [2]}],
        "pairs": [[2], [1]],
    }
    assert canonical(tree) == {
        "members": [{"member_id": "<m1>", "x": [2]}, {"member_id": "<m2>", "x": [3, 1]}],
        "pairs": [[2], [1]],
    }


def test_show_names_error_codes() -> None:
    assert show(3, "topics[name=x].error_code") == "3 UNKNOWN_TOPIC_OR_PARTITION"
    assert show(3, "partition_index") == "3"


# -- answers as trees ---------------------------------------------------------------------------
def test_records_are_shown_as_decoded_batches() -> None:
    data = build_batch([RecordSpec(b"k", b"v", [("h", b"x")], 1_700_000_000_000)], compression=1)
    [view] = plain({"records": data})["records"]
    assert view["compression"] == "gzip"
    assert view["crc_ok"] is True
    assert view["records"] == [
        {
            "offset": 0,
            "timestamp": 1_700_000_000_000,
            "key": "k",
            "value": "v",
            "headers": [["h", "x"]],
        }
    ]
    tail = batches(data + data[:20])
    assert tail[-1]["unreadable_bytes"] == 20


def test_blobs_show_text_runs_so_names_inside_normalise() -> None:
    text = blob(b"\x00\x01" + f"{TOKEN}-orders".encode() + b"\xff")
    assert text == f'0x0001"{TOKEN}-orders"ff'
    assert norm({"metadata": text}) == {"metadata": '0x0001"<orders>"ff'}


# -- reasons, statuses ----------------------------------------------------------------------------
def _result(step_id: str, api: int, version: int, differences: list[Difference]) -> StepResult:
    outcome = Outcome(ANSWER, body={})
    result = StepResult(
        Step(step_id, api, version, note="n"), "s", {KAFKA: outcome, OURS: outcome}, {}
    )
    result.differences = differences
    return result


def test_reasons_match_by_api_step_and_path_with_alternatives_and_regexes() -> None:
    reasons = (
        Reason("a", "bug", "w", steps="x.* | y.one", path="*.error_code", api=1),
        Reason("b", "bug", "w", path=r"re:.*\.configs\[name=[^\]]*\]"),
    )
    code = Difference("p.error_code", 0, 1)
    assert reason_for(_result("y.one", 1, 0, [code]), code, reasons).key == "a"
    assert reason_for(_result("y.two", 1, 0, [code]), code, reasons) is UNEXPLAINED
    assert reason_for(_result("x.two", 2, 0, [code]), code, reasons) is UNEXPLAINED
    config = Difference("r.configs[name=z]", 1, ABSENT)
    inside = Difference("r.configs[name=z].synonyms[name=q]", 1, ABSENT)
    assert reason_for(_result("k", 32, 0, [config]), config, reasons).key == "b"
    assert reason_for(_result("k", 32, 0, [inside]), inside, reasons) is UNEXPLAINED


def test_every_reason_has_a_known_kind_and_a_unique_key() -> None:
    from compat.conformance.reasons import KINDS

    keys = [r.key for r in REASONS]
    assert len(keys) == len(set(keys))
    assert all(r.kind in KINDS and r.kind != "unexplained" for r in REASONS)


# The newest ApiVersions our codecs know: Kafka advertising one more stands for a version our
# codecs do not know yet (as ApiVersions v5 was until the codecs came from Kafka 4.4).
NEWEST_AV = SCHEMAS[18].VALID_VERSIONS[1]


def test_pair_statuses() -> None:
    advertised = {
        KAFKA: {0: (0, 3), 18: (0, NEWEST_AV + 1), 75: (0, 0)},
        OURS: {0: (0, 2), 18: (0, NEWEST_AV)},
    }
    results = [
        _result("p1", 0, 1, []),
        _result("p2", 0, 2, [Difference("x", 1, 2)]),
        _result("p3", 0, 3, []),
        _result("probe", 0, 14, []),
    ]
    status = {(p.api, p.version): p.status for p in pairs(advertised, results)}
    assert status[(0, 1)] == IDENTICAL
    assert status[(0, 2)] == DIFFERS
    assert status[(0, 3)] == ONE_SIDE
    assert status[(0, 0)] == NOT_COVERED
    assert status[(18, NEWEST_AV + 1)] == NOT_DECODABLE  # our codecs stop at NEWEST_AV
    assert status[(18, NEWEST_AV)] == NOT_COVERED  # both advertise it, no step used it
    assert status[(0, 14)] == PROBE


# -- ratchet ------------------------------------------------------------------------------------
def test_ratchet_fails_on_regressions_and_on_vanished_entries(tmp_path: Path) -> None:
    listed = {"step a", "step b", "pair Produce v9"}
    problems = ratchet.check(
        listed, identical={"step a"}, played={"step a", "step b", "pair Produce v9"}
    )
    assert problems == ["differs again: pair Produce v9", "differs again: step b"]
    assert ratchet.check({"step gone"}, set(), set()) == [
        "no longer played (remove by hand if intended): step gone"
    ]
    path = tmp_path / "identical.txt"
    ratchet.write({"step b", "pair X v1"}, path)
    assert ratchet.load(path) == {"step b", "pair X v1"}


def test_ratchet_update_only_adds(tmp_path: Path) -> None:
    results = [_result("a", 0, 9, []), _result("b", 0, 9, [Difference("x", 1, 2)])]
    advertised = {KAFKA: {0: (9, 9)}, OURS: {0: (9, 9)}}
    now = ratchet.identical_now(results, pairs(advertised, results))
    assert now == {"step a"}  # the pair differs (step b), so it is not identical
    path = tmp_path / "identical.txt"
    ratchet.write({"step b"}, path)
    assert ratchet.update(now, path) == {"step a"}
    assert ratchet.load(path) == {"step a", "step b"}  # b differs now but stays listed
    assert ratchet.check(ratchet.load(path), now, {"step a", "step b"}) == ["differs again: step b"]


# -- report -------------------------------------------------------------------------------------
def test_report_is_deterministic_and_merges_entries_of_one_side() -> None:
    advertised = {KAFKA: {32: (4, 4)}, OURS: {32: (4, 4)}}
    differences = [
        Difference("results[resource_name=<t>].configs[name=b.b]", {"name": "b.b"}, ABSENT),
        Difference("results[resource_name=<t>].configs[name=a.a]", {"name": "a.a"}, ABSENT),
        Difference("results[resource_name=<t>].error_code", 0, 3),
    ]
    results = [_result("configs.broker_one", 32, 4, differences)]
    text = render(pairs(advertised, results), results, ["kafka: s: boom"])
    assert text == render(pairs(advertised, results), results, ["kafka: s: boom"])
    assert "only Kafka has 2: [name=a.a], [name=b.b]" in text
    assert "Kafka `0 NONE`, wirebroker `3 UNKNOWN_TOPIC_OR_PARTITION`" in text
    assert "| differing (both advertise, a step differs) | 1 |" in text
    details = step_details(results[0])
    assert details[0] == "- `configs.broker_one` (DescribeConfigs v4): n"
    assert details[1].endswith("[configs-not-built]")  # reasons.py explains these
    assert details[2].endswith("[unexplained]")


def test_a_reaction_difference_is_one_line() -> None:
    result = _result("sasl", 17, 0, [Difference("(reaction)", "answered", "closed the connection")])
    result.outcomes[OURS] = Outcome(CLOSED)
    assert step_details(result)[1].startswith('  - `(reaction)`: Kafka `"answered"`')


def test_where_only_kafka_answered_its_whole_answer_follows_in_key_order() -> None:
    result = _result("sasl", 17, 0, [Difference("(reaction)", "answered", "closed the connection")])
    result.outcomes[OURS] = Outcome(CLOSED)
    result.views = {
        KAFKA: {"error_code": 34, "mechanisms": [{"name": "b"}, {"name": "a"}]},
        OURS: {"outcome": CLOSED},
    }
    lines = step_details(result)
    assert lines[-1] == (
        '  - Kafka\'s answer: `{"error_code":34,"mechanisms":[{"name":"a"},{"name":"b"}]}`'
    )
    both = _result("p", 0, 9, [Difference("x", 1, 2)])  # both answered: the diff says it all
    both.views = {KAFKA: {"x": 1}, OURS: {"x": 2}}
    assert not any("Kafka's answer" in line for line in step_details(both))


# -- corpus -------------------------------------------------------------------------------------
VOTE = 52  # a KRaft controller API: no broker listens for it, so our codecs have no schema
# What wirebroker does not serve (security, KRaft, the new group protocols...)
ONLY_KAFKA = (17, 29, 30, 31, 36, 38, 39, 40, 41, 48, 49, 50, 51, 55, 57, 64, 68, 69)
ONLY_KAFKA += (76, 77, 78, 79, 80, 81, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94)


def _advertised() -> dict[str, dict[int, tuple[int, int]]]:
    ours = {k: m.VALID_VERSIONS for k, m in SCHEMAS.items() if k not in ONLY_KAFKA}
    ours[0] = (0, 13)
    kafka = {k: m.VALID_VERSIONS for k, m in SCHEMAS.items() if k not in (71, 72)}
    kafka.update({0: (0, 13), 18: (0, NEWEST_AV + 1), VOTE: (0, 2)})
    return {KAFKA: kafka, OURS: ours}


def test_corpus_covers_every_version_our_codecs_know_with_unique_step_ids() -> None:
    assert VOTE not in SCHEMAS
    advertised = _advertised()
    scenarios = build(advertised)  # raises on a duplicate step id
    assert coverage(advertised, scenarios) == []
    steps = {s.id: s for sc in scenarios for s in sc.steps()}
    assert {(s.api, s.version) for s in steps.values()} >= {
        (0, 0),
        (0, 13),
        (1, 18),
        (11, 9),
        (26, 5),
    }
    # every version of every API only Kafka serves gets real requests (not header-only)
    for key in ONLY_KAFKA:
        low, high = SCHEMAS[key].VALID_VERSIONS
        sent = {s.version for s in steps.values() if s.api == key and s.raw is None}
        assert sent >= set(range(low, high + 1)), key
    # whole flows: KIP-848, share and streams groups, the share coordinator's state
    assert {
        "cg-v0.join",
        "cg-v1.revoke",
        "cg-v1.describe_v1",
        "share.fetch",
        "share.acknowledge",
        "share.offsets_v0",
        "share-state.initialize_v0",
        "st-v1.topology_update_v0",
        "CreateDelegationToken.v3",
        "UnregisterBroker.v0",
        "AddRaftVoter.v1",
    } <= set(steps)
    # telemetry is sent although neither side advertises it (Kafka answers it anyway)
    assert {"GetTelemetrySubscriptions.v0", "PushTelemetry.v0"} <= set(steps)
    # an API our codecs have no schema for gets one header-only probe, at its newest version
    assert steps["no_codec.Vote.v2"].raw is not None
    # versions of known APIs our codecs lack are not sent (they are listed as not decodable)
    assert not any(s.api == 18 and s.version == NEWEST_AV + 1 for s in steps.values())
    assert max(s.phase for s in scenarios) == 2 and scenarios[-1].phase == 2


def test_spread_and_pick_cover_every_version() -> None:
    from compat.conformance.corpus.members import pick, spread

    assert spread([0, 1], [0, 1]) == {0: [0], 1: [1]}
    assert spread([0, 1], [0]) == {0: [0], 1: [0]}
    assert spread([0], [0, 1, 2]) == {0: [0, 1, 2]}  # the newest flow takes what is left
    assert spread([3], [1, 2]) == {3: [2, 1]}
    assert [pick([1, 2], slot) for slot in range(4)] == [1, 2, 2, 2]


def test_actions_for_an_api_run_only_on_a_side_that_serves_it() -> None:
    from compat.conformance.corpus.base import where_served
    from compat.conformance.script import Ctx, Names, Side

    ran: list[str] = []
    action = where_served(76, "wait", lambda ctx: ran.append(ctx.side.label))
    names = Names("cf0")
    kafka = Side(KAFKA, "127.0.0.1:1", names, advertised={76: (1, 1)})
    ours = Side(OURS, "127.0.0.1:2", names, advertised={0: (0, 13)})
    for side in (kafka, ours):
        action.run(Ctx(side))  # no connection is opened until a request is sent
    assert ran == [KAFKA]


def test_union_and_encodable() -> None:
    advertised = {
        KAFKA: {18: (0, NEWEST_AV + 1), VOTE: (0, 2)},
        OURS: {18: (0, NEWEST_AV), 0: (0, 13)},
    }
    every = union(advertised)
    assert every[18] == list(range(NEWEST_AV + 2))
    assert every[VOTE] == [0, 1, 2]
    known = encodable(every)
    assert known[18] == list(range(NEWEST_AV + 1))
    assert VOTE not in known  # an API our codecs have no schema for
    assert known[0] == list(range(14))  # Produce v0-2 through the corpus's legacy codec


@pytest.mark.parametrize("version", [0, 1, 2])
def test_legacy_produce_codec_round_trips_its_answer(version: int) -> None:
    import struct

    from compat.conformance.corpus.legacy import decoder

    body = (
        struct.pack(">i", 7)
        + struct.pack(">i", 1)
        + struct.pack(">h", 1)
        + b"t"
        + struct.pack(">i", 1)
    )
    body += struct.pack(">ihq", 0, 35, -1) + (struct.pack(">q", -1) if version >= 2 else b"")
    body += struct.pack(">i", 0) if version >= 1 else b""
    correlation, answer = decoder(version)(body)
    assert correlation == 7
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 35


# -- transport: how a side's reaction is recorded -------------------------------------------------
def _one_shot_server(reply: Any) -> tuple[Any, int]:
    """A server for one connection: reads request frames and lets `reply(frame, conn)` act."""
    import socket
    import struct
    import threading

    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            while True:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    return
                frame = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                if not reply(frame, conn):
                    return

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


def test_a_closed_connection_and_a_missing_answer_are_outcomes_not_errors() -> None:
    import struct

    from compat.conformance.transport import NO_ANSWER, UNDECODABLE, Connection

    def close_at_once(frame: bytes, conn: Any) -> bool:
        return False

    listener, port = _one_shot_server(close_at_once)
    with listener:
        conn = Connection(f"127.0.0.1:{port}", timeout=5)
        assert conn.exchange(conn.request(3, 12, {"topics": []})).kind == CLOSED

    def answer_api_versions_and_garbage(frame: bytes, conn: Any) -> bool:
        api, _, correlation = struct.unpack_from(">hhi", frame)
        if api == 18:  # the probe: an ApiVersions v0 answer with no APIs
            body = struct.pack(">ihi", correlation, 0, 0)
        elif api == 3:  # a Metadata answer our codecs cannot read
            body = struct.pack(">i", correlation) + b"\xff\xff"
        else:  # acks=0 Produce: no answer
            return True
        conn.sendall(struct.pack(">i", len(body)) + body)
        return True

    listener, port = _one_shot_server(answer_api_versions_and_garbage)
    with listener:
        conn = Connection(f"127.0.0.1:{port}", timeout=5)
        acks0 = conn.request(0, 9, {"acks": 0, "timeout_ms": 1, "topic_data": []})
        assert conn.exchange(acks0, answer_due=False).kind == NO_ANSWER
        garbled = conn.exchange(conn.request(3, 12, {"topics": []}))
        assert garbled.kind == UNDECODABLE
        assert garbled.detail
        conn.close()
