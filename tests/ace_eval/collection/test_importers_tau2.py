"""The tau2-bench importer on small Results files written for these tests (same shapes as tau2's data model)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ace_eval.collection import CollectionError, read_collection, write_collection
from ace_eval.collection.importers import import_tau2, import_traces

POLICY = "# Airline Agent Policy\n\nCancel only within 24 hours of booking, for business, or with insurance."
RESERVATION = {"reservation_id": "Q4ZK8M", "cabin": "business", "created_at": "2024-05-10T11:00:00"}


def _msg(role: str, content: str | None = None, **more: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "turn_idx": None, "timestamp": "2025-06-02T10:00:00", **more}


def _call(call_id: str, name: str, arguments: dict[str, Any], requestor: str = "assistant") -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments, "requestor": requestor}


def _result(call_id: str, content: str, *, error: bool = False, requestor: str = "assistant") -> dict[str, Any]:
    return _msg("tool", content, id=call_id, requestor=requestor, error=error)


def results(domain: str = "airline", simulations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A tau2 `Results` payload: one task, two trials (a success and a failure)."""
    task = {
        "id": "3",
        "description": {"purpose": "Cancel a business reservation", "relevant_policies": None, "notes": None},
        "user_scenario": {
            "persona": None,
            "instructions": {
                "domain": domain,
                "reason_for_call": "You want to cancel reservation Q4ZK8M because your conference was cancelled.",
                "known_info": "You are Ines Duarte, user id ines_duarte_5521.",
                "unknown_info": None,
                "task_instructions": "Accept a full refund to the original payment method.",
            },
        },
        "initial_state": None,
        "evaluation_criteria": {
            "actions": [
                {
                    "action_id": "3_0",
                    "requestor": "assistant",
                    "name": "cancel_reservation",
                    "arguments": {"reservation_id": "Q4ZK8M"},
                    "info": None,
                    "compare_args": None,
                }
            ],
            "communicate_info": ["1180"],
            "nl_assertions": None,
            "env_assertions": None,
            "reward_basis": ["DB", "COMMUNICATE"],
        },
    }
    success = {
        "id": "0b6d3c52-7a51-4c1e-9a0e-2f4f0f3a9d11",
        "task_id": "3",
        "trial": 0,
        "start_time": "2025-06-02T10:00:00",
        "end_time": "2025-06-02T10:00:41",
        "duration": 41.2,
        "termination_reason": "user_stop",
        "agent_cost": 0.021,
        "user_cost": 0.003,
        "seed": 300,
        "mode": "half_duplex",
        "reward_info": {
            "reward": 1.0,
            "db_check": {"db_match": True, "db_reward": 1.0},
            "communicate_checks": [{"info": "1180", "met": True, "justification": "said"}],
            "reward_basis": ["DB", "COMMUNICATE"],
            "reward_breakdown": {"DB": 1.0, "COMMUNICATE": 1.0},
            "info": None,
        },
        "messages": [
            _msg("assistant", "Hi! How can I help you today?"),
            _msg("user", "Hi, I'm ines_duarte_5521 and I need to cancel reservation Q4ZK8M."),
            _msg(
                "assistant",
                None,
                tool_calls=[_call("toolu_01", "get_reservation_details", {"reservation_id": "Q4ZK8M"})],
            ),
            _result("toolu_01", json.dumps(RESERVATION)),
            _msg("assistant", "Q4ZK8M is business class, so it can be cancelled with a $1180 refund. Confirm?"),
            _msg("user", "Yes, please."),
            _msg("assistant", None, tool_calls=[_call("toolu_02", "cancel_reservation", {"reservation_id": "Q4ZK8M"})]),
            _result("toolu_02", json.dumps({**RESERVATION, "status": "cancelled"})),
            _msg("assistant", "Done: $1180 goes back to your card in 5-7 business days."),
            _msg("user", "Thanks! ###STOP###"),
        ],
    }
    failure = {
        **success,
        "id": "5c0e41aa-1d7f-4a2b-8c55-6b1f9e2d7c30",
        "trial": 1,
        "reward_info": {
            "reward": 0.0,
            "db_check": {"db_match": False, "db_reward": 0.0},
            "communicate_checks": [{"info": "1180", "met": False, "justification": "amount never stated"}],
            "reward_basis": ["DB", "COMMUNICATE"],
        },
        "messages": [
            _msg("assistant", "Hi! How can I help you today?"),
            _msg("user", "Please cancel Q4ZK8M, I'm ines_duarte_5521."),
            # Two calls in one turn, answered by one grouped tool message; the ids are empty, as some agents leave them.
            _msg(
                "assistant",
                "Let me look that up.",
                tool_calls=[
                    _call("", "get_user_details", {"user_id": "ines_duarte_5521"}),
                    _call("", "get_reservation_details", {"reservation_id": "Q4ZK8M"}),
                ],
            ),
            {
                "role": "tool",
                "tool_messages": [
                    _result("", '{"user_id": "ines_duarte_5521"}'),
                    _result("", "Error: reservation service timeout", error=True),
                ],
            },
            _msg("assistant", "I couldn't reach the reservation system; please try again later."),
            _msg("user", "Okay. ###STOP###"),
        ],
    }
    return {
        "timestamp": "2025-06-02T10:05:00",
        "info": {
            "git_commit": "abc1234",
            "num_trials": 2,
            "max_steps": 100,
            "max_errors": 10,
            "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1-mini", "llm_args": {"temperature": 0}},
            "agent_info": {"implementation": "llm_agent", "llm": "claude-3-7-sonnet-20250219", "llm_args": {}},
            "environment_info": {"domain_name": domain, "policy": POLICY, "tool_defs": None},
            "seed": 300,
        },
        "tasks": [task],
        "simulations": simulations if simulations is not None else [success, failure],
    }


def write(tmp_path: Path, payload: Any, name: str = "results.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(payload, indent=2))
    return path


def test_tau2_results_become_traces(tmp_path: Path) -> None:
    imported = import_tau2(write(tmp_path, results()))
    assert imported.source_system == "tau2-airline" and imported.benchmark == "tau2-bench-airline"
    assert imported.models == {"agent": "claude-3-7-sonnet-20250219", "user": "gpt-4.1-mini"}
    good, bad = imported.traces
    assert [good.trace_uid, bad.trace_uid] == ["tau2-airline:task-3-trial-0", "tau2-airline:task-3-trial-1"]
    assert (good.reward, bad.reward, good.task_id) == (1.0, 0.0, "3")
    assert good.messages[0] == {"role": "system", "content": POLICY}
    assert good.messages[3] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "toolu_01",
                "type": "function",
                "function": {"name": "get_reservation_details", "arguments": '{"reservation_id": "Q4ZK8M"}'},
            }
        ],
    }
    assert good.messages[4] == {
        "role": "tool",
        "tool_call_id": "toolu_01",
        "content": json.dumps(RESERVATION),
        "name": "get_reservation_details",
    }
    assert good.num_tool_calls == 2
    assert "Reason for call: You want to cancel reservation Q4ZK8M" in good.question
    assert good.ground_truth is not None and good.ground_truth["actions"][0]["name"] == "cancel_reservation"
    assert good.feedback == "reward 1: the final database matches the expected one"
    assert good.metadata["simulation_id"] == "0b6d3c52-7a51-4c1e-9a0e-2f4f0f3a9d11"
    assert good.metadata["termination_reason"] == "user_stop"


def test_grouped_results_and_missing_ids_are_paired_in_order(tmp_path: Path) -> None:
    bad = import_tau2(write(tmp_path, results())).traces[1]
    calls = bad.messages[3]["tool_calls"]
    assert [c["id"] for c in calls] == ["call-2-0", "call-2-1"]
    assert [(m["tool_call_id"], m["name"]) for m in bad.messages[4:6]] == [
        ("call-2-0", "get_user_details"),
        ("call-2-1", "get_reservation_details"),
    ]
    assert bad.metadata["tool_errors"] == ["call-2-1"]
    assert bad.feedback == (
        "reward 0: the final database differs from the expected one; the agent never told the user '1180'"
    )


def test_user_side_tool_calls_stay_out_of_the_agent_conversation(tmp_path: Path) -> None:
    sim = {
        "id": "sim-telecom-1",
        "task_id": "[mobile_data]airplane_mode_on",
        "trial": 0,
        "reward_info": {"reward": 1.0, "db_check": {"db_match": True, "db_reward": 1.0}},
        "messages": [
            _msg("assistant", "Hi! How can I help you today?"),
            _msg("user", "My phone has no mobile data."),
            _msg("assistant", "Could you check whether airplane mode is on?"),
            _msg("user", None, tool_calls=[_call("u1", "toggle_airplane_mode", {}, requestor="user")]),
            _result("u1", "Airplane mode is now OFF", requestor="user"),
            _msg("user", "It was on; I turned it off and data works now. ###STOP###"),
        ],
    }
    trace = import_tau2(write(tmp_path, results("telecom", [sim]))).traces[0]
    assert trace.source_system == "tau2-telecom"
    assert [m["role"] for m in trace.messages] == ["system", "assistant", "user", "assistant", "user"]
    assert trace.metadata["user_tool_calls"] == [
        {
            "id": "u1",
            "name": "toggle_airplane_mode",
            "arguments": {},
            "result": "Airplane mode is now OFF",
            "error": False,
        }
    ]
    assert trace.question == "My phone has no mobile data."  # the task is not in `tasks`: the first user turn


def test_dir_format_run(tmp_path: Path) -> None:
    payload = results()
    sims = payload.pop("simulations")
    payload["simulations"] = []
    write(tmp_path, payload)
    (tmp_path / "simulations").mkdir()
    for sim in sims:
        write(tmp_path / "simulations", sim, f"{sim['id']}.json")
    imported = import_traces("tau2", tmp_path)
    assert sorted(t.trace_id for t in imported.traces) == ["task-3-trial-0", "task-3-trial-1"]


def test_imported_tau2_traces_round_trip_through_a_collection(tmp_path: Path) -> None:
    imported = import_tau2(write(tmp_path, results()), source_system="my-tau2")
    assert {t.source_system for t in imported.traces} == {"my-tau2"}
    write_collection(tmp_path / "c", imported.traces, source_system=imported.source_system)
    manifest, traces = read_collection(tmp_path / "c")
    assert traces == imported.traces and manifest.counts.successes == 1 and manifest.counts.tasks == 1


def test_tau2_errors_name_the_place(tmp_path: Path) -> None:
    payload = results()
    payload["simulations"][1]["messages"][2]["tool_calls"][0]["arguments"] = "user_id=ines"
    with pytest.raises(CollectionError, match=r"field 'simulations\[1\].messages\[2\].tool_calls\[0\].arguments'"):
        import_tau2(write(tmp_path, payload))
    payload = results()
    payload["simulations"][0]["reward_info"]["reward"] = "high"
    with pytest.raises(CollectionError, match=r"field 'simulations\[0\].reward_info.reward': input should be a valid"):
        import_tau2(write(tmp_path, payload))
    payload = results()
    del payload["simulations"]
    with pytest.raises(CollectionError, match=r"field 'simulations': missing"):
        import_tau2(write(tmp_path, payload))
    with pytest.raises(CollectionError, match=r"use --format tau-bench"):
        import_tau2(write(tmp_path, [{"task_id": 0}]))


def test_tau2_feedback_skips_checks_that_are_not_objects() -> None:
    from ace_eval.collection.importers.tau2 import tau2_feedback

    info: dict[str, Any] = {
        "reward": 0.0,
        "db_check": None,
        "communicate_checks": [None, "odd", {"met": False, "info": "refund 50"}],
        "action_checks": [{"action": "cancel", "action_match": False}],
    }
    assert tau2_feedback(info) == (
        "reward 0: the agent never told the user 'refund 50'; expected action not taken: None({})"
    )
