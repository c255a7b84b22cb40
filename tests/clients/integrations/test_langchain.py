"""LangChain end to end, with the real `langchain` agent and `langchain-openai`'s ChatOpenAI
talking to the local OpenAI-compatible server: docs/integrations/langchain.md's example runs
as written, twice. The first run is recorded (model turns, tool calls with arguments, results,
the failed call, the outcome) and reviewed into an experience by the site's worker; the second
gets it through the prompt block and the recall tool, and is warned about the call that
failed."""

from __future__ import annotations

import pytest

from tests.clients.integrations.snippets import assert_first_run, run_python_snippet
from tests.support.fake_openai import AgentTurn
from tests.support.waiting import wait_until

TASK = "Find which Python version this project needs"
SCRIPT = [
    AgentTurn("hindsight_recall", {"task": TASK}),
    AgentTurn("read_file", {"path": "setup.cfg"}),
    AgentTurn("list_dir", {"path": "."}),
    AgentTurn("read_file", {"path": "pyproject.toml"}),
    AgentTurn(text="Python >= 3.11 (requires-python in pyproject.toml)"),
]


def test_a_run_is_recorded_reviewed_and_recalled_by_the_next_run(
    live_site, agent_llm, example_project
):
    (example_project / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.11"\n')
    (example_project / "src").mkdir()
    agent_llm.agent = SCRIPT
    client = live_site.client()

    first_run = run_python_snippet("langchain.md")

    assert first_run["result"]["messages"][-1].content == SCRIPT[-1].text
    (first,) = live_site.reviewed_traces_of("repo-agent", 1)
    assert_first_run(
        first,
        task=TASK,
        answer=SCRIPT[-1].text,
        calls=[(turn.tool, turn.arguments) for turn in SCRIPT[1:-1]],
        found='requires-python = ">=3.11"',
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
    run_python_snippet("langchain.md")

    requests = agent_llm.chat_requests
    system = requests[0]["messages"][0]
    assert system["role"] == "system" and advice in system["content"]
    tool_answers = [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]
    assert advice in tool_answers[0]  # the recall tool
    assert "[hindsight]" in tool_answers[1] and "read_file" in tool_answers[1]  # the warning
    assert "[hindsight]" not in tool_answers[2]  # list_dir never failed
    assert len(live_site.reviewed_traces_of("repo-agent", 2)) == 2


def test_a_run_that_raises_is_recorded_as_a_failure_with_its_exception(live_site, agent_llm):
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    from hindsight_client.integrations.langchain import HindsightCallbackHandler

    @tool
    def deploy(service: str) -> str:
        """Deploy a service."""
        raise RuntimeError(f"registry unreachable while pushing {service}")

    task = "Deploy the web service"
    agent_llm.scripts_by_task[task] = [AgentTurn("deploy", {"service": "web"}), AgentTurn(text="-")]
    model = ChatOpenAI(model="m", base_url=agent_llm.base_url, api_key="test-key")
    handler = HindsightCallbackHandler(live_site.client(), agent="lc-deployer")

    with pytest.raises(RuntimeError):
        create_agent(model, tools=[deploy]).invoke(
            {"messages": [{"role": "user", "content": task}]},
            config={"callbacks": [handler], "metadata": {"user_id": "ada"}},
        )

    trace = live_site.completed_trace_of("lc-deployer")
    assert (trace["task"], trace["outcome"], trace["user"]) == (task, "failure", "ada")
    *_, failed, last = trace["steps"]
    assert (failed["tool"], failed["arguments"], failed["is_error"]) == (
        "deploy",
        {"service": "web"},
        True,
    )
    assert "registry unreachable" in failed["observation"]
    assert last["kind"] == "system" and "RuntimeError" in last["content"]
