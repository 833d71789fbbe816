"""The tau-bench importer (on the real 120 GPT-4o runs) and the plain OpenAI-style JSONL importer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ace_eval.collection import CollectionError, read_collection, write_collection
from ace_eval.collection.importers import import_openai_jsonl, import_tau_bench, import_traces
from ace_eval.collection.importers.tau_bench import tau_bench_feedback

TRAJECTORIES = "trajectories-gpt-4o-tasks-0-29.json"


# --- tau-bench ------------------------------------------------------------------------------------------------


def test_real_tau_bench_runs(airline_data: Path, tmp_path: Path) -> None:
    source = airline_data / TRAJECTORIES
    raw = json.loads(source.read_text())
    imported = import_tau_bench(source)
    traces = imported.traces
    assert imported.source_system == imported.benchmark == "tau-bench-airline"
    assert len(traces) == 120
    assert sum(t.is_success() for t in traces) == 36
    assert len({t.trace_uid for t in traces}) == 120
    assert len({t.task_id for t in traces}) == 30
    first = raw[0]
    trace = next(t for t in traces if t.trace_id == f"task-{first['task_id']}-trial-{first['trial']}")
    assert trace.question == first["info"]["task"]["instruction"]
    assert trace.messages == first["traj"]
    assert trace.ground_truth == {
        "actions": first["info"]["task"]["actions"],
        "outputs": first["info"]["task"]["outputs"],
    }
    assert trace.metadata["user_id"] == first["info"]["task"]["user_id"]
    assert "actions" not in trace.metadata["reward_info"]
    assert sum(t.metadata["reward_info"] is None for t in traces) == 3
    assert sum(t.num_tool_calls for t in traces) == 810

    manifest = write_collection(tmp_path, traces, source_system=imported.source_system)
    assert manifest.counts.model_dump() == {"traces": 120, "with_reward": 120, "successes": 36, "tasks": 30}
    assert read_collection(tmp_path)[1] == traces


@pytest.mark.parametrize(
    ("reward", "reward_info", "expected"),
    [
        (1.0, {"reward": 1.0, "info": {"r_actions": 1.0}}, "reward 1: the final database matches"),
        (0.0, {"reward": 0.0, "info": {"r_actions": 0.0}}, "reward 0: the final database differs"),
        (
            0.0,
            {"reward": 0.0, "info": {"r_outputs": 0.0, "outputs": {"327": True, "1000": False}}},
            "reward 0: the agent never told the user: '1000'",
        ),
        (
            0.0,
            {"reward": 0.0, "info": {"r_outputs": 1.0, "outputs": {"327": True}}},
            "reward 0: the final database differs from the one the gold actions produce; the agent told the user",
        ),
        (
            1.0,
            {"reward": 1.0, "info": {"r_outputs": 1.0, "outputs": {"327": True}}},
            "reward 1: the final database matches the one the gold actions produce; the agent told the user",
        ),
        (0.0, None, "no grading details recorded"),
    ],
)
def test_tau_bench_feedback(reward: float, reward_info: dict[str, Any] | None, expected: str) -> None:
    assert expected in tau_bench_feedback(reward, reward_info)


def _run(task_id: int, trial: int, system: str = "# Retail agent policy\n\nBe helpful.") -> dict[str, Any]:
    return {
        "task_id": task_id,
        "reward": 0.0,
        "info": {
            "task": {
                "user_id": "yusuf_rossi_9620",
                "instruction": "Exchange your keyboard.",
                "actions": [],
                "outputs": [],
            },
            "source": "user",
            "user_cost": 0.001,
            "reward_info": {"reward": 0.0, "info": {"r_actions": 0.0}, "actions": []},
        },
        "traj": [
            {"role": "system", "content": system},
            {"role": "user", "content": "I want to exchange a keyboard."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "find_user_id_by_email", "arguments": '{"email": "y@example.com"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "name": "find_user_id_by_email", "content": "yusuf_rossi_9620"},
        ],
        "trial": trial,
    }


def test_tau_bench_domain_and_source_system(tmp_path: Path) -> None:
    path = tmp_path / "retail.json"
    path.write_text(json.dumps([_run(0, 0), _run(0, 1)]))
    assert import_tau_bench(path).source_system == "tau-bench-retail"
    assert import_traces("tau-bench", path, source_system="mine").traces[1].trace_uid == "mine:task-0-trial-1"
    path.write_text(json.dumps([_run(0, 0, system="You help customers.")]))
    assert import_tau_bench(path).source_system == "tau-bench"


def test_tau_bench_errors_name_the_entry_and_field(tmp_path: Path) -> None:
    path = tmp_path / "runs.json"
    bad = _run(1, 0)
    bad["traj"][2]["tool_calls"][0]["function"]["arguments"] = "{'email': 'y@example.com'}"
    path.write_text(json.dumps([_run(0, 0), bad]))
    with pytest.raises(
        CollectionError, match=r"runs.json: field '\[1\].traj\[2\].tool_calls\[0\].function.arguments': not valid JSON"
    ):
        import_tau_bench(path)
    bad = _run(1, 0)
    bad["reward"] = "0"
    path.write_text(json.dumps([bad]))
    with pytest.raises(CollectionError, match=r"field '\[0\].reward': input should be a valid number"):
        import_tau_bench(path)
    bad = _run(1, 0)
    del bad["info"]["task"]["instruction"]
    path.write_text(json.dumps([bad]))
    with pytest.raises(CollectionError, match=r"field '\[0\].info.task.instruction': missing"):
        import_tau_bench(path)
    path.write_text(json.dumps({"simulations": []}))
    with pytest.raises(CollectionError, match="use --format tau2"):
        import_tau_bench(path)
    path.write_text('[{"task_id": 0,\n "reward": }]')
    with pytest.raises(CollectionError, match=r"runs.json, line 2, column 12: not valid JSON"):
        import_tau_bench(path)
    with pytest.raises(CollectionError, match="no such file"):
        import_tau_bench(tmp_path / "missing.json")


# --- OpenAI-style JSONL ---------------------------------------------------------------------------------------

CHAT = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": [{"type": "text", "text": "Where is order #4417?"}]},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"order_id": "4417"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
    {"role": "assistant", "content": "It shipped yesterday."},
]


def _jsonl(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "chats.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_openai_jsonl_lines(tmp_path: Path) -> None:
    path = _jsonl(
        tmp_path,
        CHAT,
        "",
        {"messages": CHAT, "id": 42, "task_id": 7, "reward": 1, "feedback": "correct", "metadata": {"split": "dev"}},
        {"messages": CHAT[:2], "id": "conv-b", "question": "Find order 4417", "ground_truth": {"status": "shipped"}},
    )
    imported = import_openai_jsonl(path)
    first, second, third = imported.traces
    assert imported.source_system == "openai-jsonl" and imported.metadata["source_file"] == "chats.jsonl"
    assert (first.trace_uid, first.question, first.reward, first.task_id) == (
        "openai-jsonl:line-1",
        "Where is order #4417?",
        None,
        None,
    )
    assert first.messages == CHAT
    assert (second.trace_id, second.task_id, second.reward, second.feedback) == ("42", "7", 1.0, "correct")
    assert second.metadata == {"split": "dev"}
    assert (third.trace_id, third.question, third.ground_truth) == ("conv-b", "Find order 4417", {"status": "shipped"})
    assert import_traces("openai-jsonl", path, source_system="support").source_system == "support"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"messages": [', r"chats.jsonl, line 2, column 15: not valid JSON"),
        ('"hello"', r"line 2: a line is a list of messages or an object with `messages`, got str"),
        ({"messages": CHAT, "score": 1}, r"line 2: field 'score': unknown key \(accepted: messages, id"),
        ({"id": "x"}, r"line 2: field 'messages': missing"),
        ([{"role": "system", "content": "x"}], r"line 2: field 'question': no user message"),
        ({"messages": CHAT, "reward": "high"}, r"line 2: field 'reward': input should be a valid number"),
        ({"messages": CHAT, "id": ""}, r"line 2: field 'id': string should have at least 1 character"),
        (
            [CHAT[1], {"role": "tool", "tool_call_id": "zz", "content": "x"}],
            r"line 2: field 'messages\[1\].tool_call_id': 'zz' answers no tool call",
        ),
        ([CHAT[1], {"role": "assistant"}], r"line 2: field 'messages\[1\]': an assistant message needs"),
    ],
)
def test_openai_jsonl_refusals(tmp_path: Path, line: Any, message: str) -> None:
    with pytest.raises(CollectionError, match=message):
        import_openai_jsonl(_jsonl(tmp_path, CHAT, line))


def test_tau_bench_feedback_reads_a_breakdown_of_another_shape_without_crashing() -> None:
    # JSON the importer does not expect (a string score, outputs as a list) says nothing rather than crashing
    none = "reward 0: the breakdown holds no verdict this importer reads"
    assert tau_bench_feedback(0.0, {"info": {"r_actions": "n/a"}}) == none
    assert tau_bench_feedback(0.0, {"info": "not an object"}) == "reward 0: no breakdown recorded"
    odd = tau_bench_feedback(0.0, {"info": {"r_outputs": 0.0, "outputs": ["327"]}})
    assert odd == none
