"""PydanticAI end to end, with the real `pydantic-ai` Agent and its OpenAIChatModel talking to
the local OpenAI-compatible server: docs/integrations/pydantic-ai.md's example runs as
written, twice. The capability records the first run (model turns, tool calls with arguments,
results, the retried call, the outcome), the site's worker reviews it into an experience, and
the second run gets it in its instructions and from the recall tool, and is warned about the
call that failed."""

from __future__ import annotations

import pytest

from tests.clients.integrations.snippets import assert_first_run, run_in_thread, run_python_snippet
from tests.support.fake_openai import AgentTurn
from tests.support.waiting import wait_until

TASK = "Find under which license this project is published"
SCRIPT = [
    AgentTurn("hindsight_recall", {"task": TASK}),
    AgentTurn("read_file", {"path": "LICENSE"}),
    AgentTurn("list_dir", {"path": "."}),
    AgentTurn("read_file", {"path": "COPYING"}),
    AgentTurn(text="MIT (the COPYING file)"),
]


def test_a_run_is_recorded_reviewed_and_recalled_by_the_next_run(
    live_site, agent_llm, example_project
):
    (example_project / "COPYING").write_text("MIT License\n\nCopyright (c) 2026 ACME\n")
    (example_project / "src").mkdir()
    agent_llm.agent = SCRIPT
    client = live_site.client()

    first_run = run_python_snippet("pydantic-ai.md")

    assert first_run["result"].output == SCRIPT[-1].text
    (first,) = live_site.reviewed_traces_of("license-agent", 1)
    assert_first_run(
        first,
        task=TASK,
        answer=SCRIPT[-1].text,
        calls=[(turn.tool, turn.arguments) for turn in SCRIPT[1:-1]],
        found="MIT License",
    )
    learned = wait_until(
        lambda: client.recall(TASK, environment=["bare-metal"], include_candidates=True).items
    )
    # The first run's experience (the advice names no task: the run is its source).
    served = next(
        item.replay or item.advice for item in learned if first["external_id"] in item.sources
    )
    advice = served[:60]  # the prompt block cuts each line to its length

    agent_llm.chat_requests.clear()
    run_python_snippet("pydantic-ai.md")

    requests = agent_llm.chat_requests
    instructions = [m["content"] for m in requests[0]["messages"] if m["role"] == "system"]
    assert instructions[0] == "You inspect code repositories." and advice in instructions[1]
    tool_answers = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert advice in tool_answers[0]  # the recall tool
    assert "[hindsight]" in tool_answers[3] and "read_file" in tool_answers[3]  # the warning
    assert "[hindsight]" not in tool_answers[2]  # list_dir never failed
    assert len(live_site.reviewed_traces_of("license-agent", 2)) == 2


def test_a_run_that_raises_is_recorded_as_a_failure_with_the_history_so_far(live_site, agent_llm):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from hindsight_client.integrations.pydantic_ai import HindsightCapability

    task = "Restart the billing worker"
    agent_llm.scripts_by_task[task] = [
        AgentTurn("restart", {"unit": "billing"}),
        AgentTurn(text="-"),
    ]
    provider = OpenAIProvider(base_url=agent_llm.base_url, api_key="test-key")
    hindsight = HindsightCapability(client=live_site.client(), agent="pa-restarter")
    agent = Agent(OpenAIChatModel("m", provider=provider), capabilities=[hindsight])

    @agent.tool_plain
    def restart(unit: str) -> str:
        """Restart a systemd unit."""
        raise PermissionError(f"not allowed to restart {unit}")

    with pytest.raises(PermissionError):  # in a thread: see run_in_thread
        run_in_thread(lambda: agent.run_sync(task))

    trace = live_site.completed_trace_of("pa-restarter")
    assert (trace["task"], trace["outcome"]) == (task, "failure")
    kinds = [s["kind"] for s in trace["steps"]]
    assert kinds == ["user_input", "llm_reasoning", "system"]
    assert "calls restart" in trace["steps"][1]["content"]
    assert "PermissionError: not allowed to restart billing" in trace["steps"][2]["content"]
