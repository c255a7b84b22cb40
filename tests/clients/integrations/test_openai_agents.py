"""OpenAI Agents SDK end to end, with the real `openai-agents` Runner and its
OpenAIChatCompletionsModel talking to the local OpenAI-compatible server:
docs/integrations/openai-agents.md's example runs as written, twice. The tracing processor
records the first run (model turns, tool calls with arguments, results, the failed call, the
outcome), the site's worker reviews it into an experience, and the second run gets it in its
instructions and from the recall tool; the run hooks record the warning about the call that
failed."""

from __future__ import annotations

import json

import pytest

from tests.clients.integrations.snippets import assert_first_run, run_in_thread, run_python_snippet
from tests.support.fake_openai import AgentTurn
from tests.support.waiting import wait_until

TASK = "Find which Node.js version this project needs"
SCRIPT = [
    AgentTurn("hindsight_recall", {"task": TASK}),
    AgentTurn("read_file", {"path": ".nvmrc"}),
    AgentTurn("list_dir", {"path": "."}),
    AgentTurn("read_file", {"path": "package.json"}),
    AgentTurn(text="Node.js >= 20 (engines.node in package.json)"),
]


def test_a_run_is_traced_reviewed_and_recalled_by_the_next_run(
    live_site, agent_llm, example_project
):
    (example_project / "package.json").write_text(json.dumps({"engines": {"node": ">=20"}}))
    (example_project / "src").mkdir()
    agent_llm.agent = SCRIPT
    client = live_site.client()

    first_run = run_python_snippet("openai-agents.md")

    assert first_run["result"].final_output == SCRIPT[-1].text
    (first,) = live_site.reviewed_traces_of("release-agent", 1)
    assert_first_run(
        first,
        task=TASK,
        answer=SCRIPT[-1].text,
        calls=[(turn.tool, turn.arguments) for turn in SCRIPT[1:-1]],
        found='"node": ">=20"',
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
    run_python_snippet("openai-agents.md")

    requests = agent_llm.chat_requests
    system = requests[0]["messages"][0]
    assert system["role"] == "system" and advice in system["content"]
    tool_answers = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert advice in tool_answers[0]  # the recall tool
    steps = live_site.reviewed_traces_of("release-agent", 2)[1]["steps"]
    warned = [n for n, s in enumerate(steps) if "[hindsight]" in (s["content"] or "")]
    assert warned, steps  # a system step right after each read_file, none after list_dir
    assert {steps[n]["kind"] for n in warned} == {"system"}
    assert {steps[n - 1]["tool"] for n in warned} == {"read_file"}
    assert "Similar calls to read_file failed" in steps[warned[0]]["content"]


def test_a_run_that_raises_is_recorded_as_a_failure(live_site, agent_llm):
    import asyncio

    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, trace
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from hindsight_client.integrations.openai_agents import HindsightTracingProcessor

    task = "Rotate the database password"
    agent_llm.scripts_by_task[task] = [AgentTurn("rotate", {"db": "orders"}), AgentTurn(text="-")]
    processor = HindsightTracingProcessor(live_site.client(), agent="oa-rotator")
    set_trace_processors([processor])

    @function_tool(failure_error_function=None)  # the error stops the run
    def rotate(db: str) -> str:
        """Rotate a database password."""
        raise TimeoutError(f"vault did not answer for {db}")

    client = AsyncOpenAI(base_url=agent_llm.base_url, api_key="test-key")
    agent = Agent(
        name="rotator",
        tools=[rotate],
        model=OpenAIChatCompletionsModel(model="m", openai_client=client),
    )

    async def main() -> None:
        with trace("rotation", group_id="session-7", metadata={"user_id": "ada"}):
            await Runner.run(agent, task)

    with pytest.raises(Exception, match="vault did not answer"):
        run_in_thread(lambda: asyncio.run(main()))

    recorded = live_site.completed_trace_of("oa-rotator")
    assert (recorded["task"], recorded["outcome"]) == (task, "failure")
    assert (recorded["user"], recorded["session_id"]) == ("ada", "session-7")
    tool_step = next(s for s in recorded["steps"] if s["tool"])
    assert (tool_step["tool"], tool_step["arguments"], tool_step["is_error"]) == (
        "rotate",
        {"db": "orders"},
        True,
    )
    assert recorded["steps"][-1]["kind"] == "system" and recorded["steps"][-1]["is_error"]


def test_a_run_on_the_responses_api_is_recorded_from_its_response_spans(live_site, agent_llm):
    import asyncio

    from agents import Agent, OpenAIResponsesModel, Runner, function_tool
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from hindsight_client.integrations.openai_agents import HindsightTracingProcessor

    task = "Find which port the web service listens on"
    agent_llm.scripts_by_task[task] = [
        AgentTurn("read_config", {"service": "web"}),
        AgentTurn(text="port 8080 (web.toml)"),
    ]
    processor = HindsightTracingProcessor(live_site.client(), agent="oa-responses")
    set_trace_processors([processor])

    @function_tool
    def read_config(service: str) -> str:
        """Read a service's configuration."""
        return f"[{service}]\nport = 8080"

    client = AsyncOpenAI(base_url=agent_llm.base_url, api_key="test-key")
    agent = Agent(
        name="ports",
        tools=[read_config],
        model=OpenAIResponsesModel(model="m", openai_client=client),
    )

    result = run_in_thread(lambda: asyncio.run(Runner.run(agent, task)))

    assert result.final_output == "port 8080 (web.toml)"
    recorded = live_site.completed_trace_of("oa-responses")
    assert (recorded["task"], recorded["outcome"]) == (task, "success")
    steps = [(s["kind"], s["tool"] or s["content"]) for s in recorded["steps"]]
    assert steps == [
        ("user_input", task),
        ("llm_reasoning", 'calls read_config {"service": "web"}'),
        ("tool_call", "read_config"),
        ("llm_reasoning", "port 8080 (web.toml)"),
    ]
    assert "port = 8080" in recorded["steps"][2]["observation"]
