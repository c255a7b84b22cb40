"""The capture proxy end to end: the `mcp` package's stdio client -> `manage.py mcp_proxy` ->
a real MCP server (tests/experiences/mcp/toy_server.py, on the `mcp` package's MCPServer), with
the trajectory arriving at the ingest API of a live site."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from mcp.shared.exceptions import MCPError

from tests.support.library import make_failure_pattern
from tests.support.mcp import ROOT, TOY_SERVER, lines, proxy_command, session, tapped
from tests.support.waiting import wait_for
from traces.models import Trace


async def three_calls(client) -> dict:
    results = {
        "tools": [tool.name for tool in (await client.list_tools()).tools],
        "add": await client.call_tool("add", {"a": 2, "b": 3}),
        "read_config": await client.call_tool("read_config", {"path": "/etc/app.yaml"}),
    }
    try:
        await client.call_tool("deploy", {"service": "web"})
    except MCPError as error:
        results["deploy"] = error
    return results


def completed_trace() -> Trace:
    wait_for(lambda: Trace.objects.filter(completed_at__isnull=False).exists(), timeout=20)
    return Trace.objects.get()


def test_messages_pass_through_the_proxy_unchanged(site, tmp_path):
    client_side, server_side = tmp_path / "client.log", tmp_path / "server.log"
    command = tapped(
        client_side, proxy_command("--agent", "ide", server=tapped(server_side, TOY_SERVER))
    )

    session(command, site.env(), three_calls)

    sent, received = lines(client_side, ">"), lines(server_side, ">")
    answered, returned = lines(server_side, "<"), lines(client_side, "<")
    assert sent == received and len(sent) >= 5  # discover/initialize, list, three calls
    assert answered == returned and len(answered) >= 5


def test_each_tool_call_becomes_a_step_and_the_trajectory_arrives_when_the_session_ends(site):
    command = proxy_command(
        "--agent", "ide-agent", "--task", "set up the web service", "--environment", "docker",
        via_manage_py=True,
    )  # fmt: skip

    results = session(command, site.env(), three_calls)

    assert results["tools"] == ["add", "read_config", "deploy", "slow"]
    assert results["add"].structured_content == {"result": 5}
    assert results["read_config"].is_error
    assert "cluster is locked" in str(results["deploy"])

    trace = completed_trace()
    steps = list(trace.steps.order_by("index"))
    assert (trace.agent, trace.task, trace.environment) == (
        "ide-agent",
        "set up the web service",
        ["docker"],
    )
    assert trace.outcome == "unknown" and trace.metadata["source"] == "mcp_proxy"
    assert [(s.kind, s.tool, s.is_error) for s in steps] == [
        ("tool_call", "add", False),
        ("tool_call", "read_config", True),
        ("tool_call", "deploy", True),
    ]
    assert [s.arguments for s in steps] == [
        {"a": 2, "b": 3},
        {"path": "/etc/app.yaml"},
        {"service": "web"},
    ]
    assert steps[0].observation == "5"
    assert "permission denied: /etc/app.yaml" in steps[1].observation
    assert "JSON-RPC error -32001" in steps[2].observation
    assert "cluster is locked" in steps[2].observation
    assert steps[2].error_type == "jsonrpc -32001"


def test_a_session_without_tool_calls_sends_nothing(site):
    async def only_list(client):
        return await client.list_tools()

    session(proxy_command("--agent", "ide"), site.env(), only_list)

    assert not Trace.objects.exists()


def test_without_an_api_key_the_proxy_only_forwards(site):
    async def add(client):
        return await client.call_tool("add", {"a": 1, "b": 1})

    result = session(proxy_command("--agent", "ide"), site.env(HINDSIGHT_API_KEY=""), add)

    assert result.structured_content == {"result": 2}
    assert not Trace.objects.exists()


# The 2026-07-28 protocol carries its envelope on every request (no initialize handshake).
META = {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
}


def raw_call(request_id, name: str, arguments: dict) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, **META},
    }
    return json.dumps(message).encode() + b"\n"


def test_a_call_left_unanswered_when_the_client_hangs_up_is_a_failed_step(site):
    # Raw JSON-RPC over pipes: two calls, the client hangs up before the slow one answers.
    proxy = subprocess.Popen(
        proxy_command("--agent", "ide"),
        cwd=ROOT,
        env=site.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    discover = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": META}
    assert proxy.stdin and proxy.stdout
    proxy.stdin.write(
        json.dumps(discover).encode() + b"\n" + raw_call("a", "add", {"a": 1, "b": 2})
    )
    proxy.stdin.flush()
    answers = [json.loads(proxy.stdout.readline()) for _ in range(2)]
    proxy.stdin.write(raw_call("b", "slow", {"seconds": 30}))
    proxy.stdin.close()  # hang up with "b" in flight
    proxy.wait(60)

    assert [a["id"] for a in answers] == [0, "a"] and answers[1]["result"]["isError"] is False
    trace = completed_trace()
    steps = list(trace.steps.order_by("index"))
    assert [(s.tool, s.is_error) for s in steps] == [("add", False), ("slow", True)]
    assert steps[1].error_type == "no_response"


@pytest.mark.parametrize("argv", [["--agent", "x"], ["--agent", "x", "--"]])
def test_it_asks_for_the_server_command(argv):
    done = subprocess.run(
        [sys.executable, "-m", "hindsight_client.mcp_proxy", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and "command after --" in done.stderr


def test_with_warn_a_frequent_failure_pattern_is_appended_to_the_tool_result(site):
    make_failure_pattern(
        site.project, tool="read_config", arguments={"path": "/etc/x.yaml"},
        error="permission denied: <path>", instead="read it with sudo_read", occurrences=3,
    )  # fmt: skip

    async def calls(client):
        return (
            await client.call_tool("read_config", {"path": "/etc/app.yaml"}),
            await client.call_tool("add", {"a": 1, "b": 2}),
        )

    warned, plain = session(
        proxy_command("--agent", "ide", "--warn", "--warn-timeout", "10"), site.env(), calls
    )

    *original, warning = warned.content
    assert len(original) == 1 and "permission denied: /etc/app.yaml" in original[0].text
    assert warning.text.startswith("[hindsight]")
    assert "failed 3 times" in warning.text and "sudo_read" in warning.text
    assert [item.text for item in plain.content] == ["3"]  # no pattern: untouched
    step = completed_trace().steps.get(tool="read_config")
    assert "[hindsight]" not in step.observation  # the step keeps what the server said


def test_without_warn_no_warning_is_added(site):
    make_failure_pattern(
        site.project, tool="read_config", arguments={"path": "/etc/x.yaml"},
        error="permission denied: <path>", occurrences=3,
    )  # fmt: skip

    async def call(client):
        return await client.call_tool("read_config", {"path": "/etc/app.yaml"})

    result = session(proxy_command("--agent", "ide"), site.env(), call)

    (only,) = result.content
    assert "permission denied: /etc/app.yaml" in only.text and "[hindsight]" not in only.text


def test_a_refused_key_does_not_disturb_the_session(site):
    async def add(client):
        return await client.call_tool("add", {"a": 2, "b": 2})

    result = session(proxy_command("--agent", "ide"), site.env(HINDSIGHT_API_KEY="hs_wrong"), add)

    assert result.structured_content == {"result": 4}
    assert not Trace.objects.exists()
