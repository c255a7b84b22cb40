"""`manage.py mcp_server`: recall, check_tool_call and recall_feedback as MCP tools, driven by
the `mcp` package's client over stdio (and once over streamable HTTP), against a live site."""

from __future__ import annotations

import subprocess
import time

import pytest
from mcp import Client

from accounts.services.api_keys import api_key_create
from tests.support.library import make_experience, make_failure_pattern
from tests.support.mcp import ROOT, recall_server_command, run_async, session
from tests.support.ports import free_port

ADVICE = "When a container restarts in a loop, first check `docker inspect` for OOMKilled."


@pytest.fixture
def oom(site):
    return make_experience(
        site.project, task="Find out why the web container keeps restarting", advice=ADVICE
    )


def test_one_session_lists_its_tools_recalls_takes_feedback_and_warns(site, oom):
    """The three tools in one stdio session (each session starts `manage.py mcp_server`)."""
    make_failure_pattern(
        site.project, tool="kubectl_delete", arguments={"namespace": "prod", "force": True},
        error="forbidden: <path>", instead="use a dry run first", occurrences=4,
    )  # fmt: skip

    async def use_every_tool(client):
        names = sorted(tool.name for tool in (await client.list_tools()).tools)
        recall = await client.call_tool(
            "recall", {"task": "The api container keeps restarting", "environment": ["docker"]}
        )
        feedback = await client.call_tool(
            "recall_feedback",
            {"recall_id": recall.structured_content["recall_id"], "helpful": [oom.pk]},
        )
        risky = await client.call_tool(
            "check_tool_call",
            {"tool": "kubectl_delete", "arguments": {"namespace": "dev", "force": True}},
        )
        harmless = await client.call_tool(
            "check_tool_call", {"tool": "ls", "arguments": {"path": "/"}}
        )
        return names, recall, feedback, risky, harmless

    names, recall, feedback, risky, harmless = session(
        recall_server_command(), site.env(), use_every_tool
    )

    assert names == ["check_tool_call", "recall", "recall_feedback"]
    # recall: the prompt block and the items
    assert not recall.is_error
    assert ADVICE in recall.content[0].text
    structured = recall.structured_content
    assert [item["experience_id"] for item in structured["items"]] == [oom.pk]
    assert f"(recall id {structured['recall_id']})" in recall.content[0].text
    # recall_feedback counts a helpful item
    assert not feedback.is_error
    oom.refresh_from_db()
    assert oom.upvotes == 1
    # check_tool_call warns of a frequent failure, and only of it
    assert "failed 4 times" in risky.content[0].text and "dry run" in risky.content[0].text
    assert len(risky.structured_content["warnings"]) == 1
    assert harmless.content[0].text == "No frequent failure pattern matches this call."


def test_a_key_without_the_recall_scope_is_a_tool_error(site):
    key = api_key_create(project=site.project, scopes=["ingest"]).raw

    async def recall(client):
        return await client.call_tool("recall", {"task": "anything"})

    result = session(recall_server_command(), site.env(HINDSIGHT_API_KEY=key), recall)

    assert result.is_error and "HTTP 403" in result.content[0].text


def test_without_a_key_it_refuses_to_start(site):
    done = subprocess.run(
        recall_server_command(), cwd=ROOT, env=site.env(HINDSIGHT_API_KEY=""),
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode != 0 and "HINDSIGHT_API_KEY" in done.stderr


def test_recall_over_streamable_http(site, oom, tmp_path):
    port = free_port()
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        recall_server_command("--http", str(port)), cwd=ROOT, env=site.env(),
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        async def recall():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await client.call_tool("recall", {"task": "The api container restarts"})

        deadline = time.monotonic() + 60
        while True:
            try:
                result = run_async(recall)
                break
            except Exception:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        server.terminate()
        server.wait(15)

    assert ADVICE in result.content[0].text
