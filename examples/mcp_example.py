"""hindsight over MCP, with the `mcp` package's client. Runs against a local `make run`.

    .venv/bin/python examples/mcp_example.py

1. The recall server: `manage.py mcp_server` exposes `recall`, `check_tool_call` and
   `recall_feedback` as MCP tools over stdio.
2. The capture proxy: `manage.py mcp_proxy --agent NAME -- <server command>` sits in front of
   any MCP server (here examples/files_server.py); every tools/call becomes a step of a
   trajectory, sent to hindsight when the session ends.

An MCP host (an IDE, a desktop assistant) is configured the same way: the command of the
recall server, and the proxy's command line in place of each server's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def env() -> dict[str, str]:
    key = os.environ.get("HINDSIGHT_API_KEY") or (ROOT / ".hindsight" / "demo-api-key").read_text()
    return {
        **os.environ,
        "HINDSIGHT_URL": os.environ.get("HINDSIGHT_URL", "http://localhost:8000"),
        "HINDSIGHT_API_KEY": key.strip(),
    }


def stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=PYTHON, args=list(args), env=env(), cwd=str(ROOT))


async def main() -> None:
    recall_server = stdio("manage.py", "mcp_server", "--agent", "mcp-example")
    async with Client(recall_server) as hindsight:
        result = await hindsight.call_tool("recall", {"task": "Read the project's settings"})
        print("recall:", result.content[0].text)
        check = await hindsight.call_tool(
            "check_tool_call", {"tool": "read_file", "arguments": {"path": "setup.cfg"}}
        )
        print("check_tool_call:", check.content[0].text)

    proxied_files = stdio(
        "manage.py", "mcp_proxy", "--agent", "mcp-example", "--task", "Read the project's settings",
        "--warn", "--", PYTHON, "examples/files_server.py",
    )  # fmt: skip
    async with Client(proxied_files) as files:
        print("list_dir:", (await files.call_tool("list_dir", {"path": "."})).structured_content)
        missing = await files.call_tool("read_file", {"path": "setup.cfg"})
        print("read_file setup.cfg:", [item.text for item in missing.content])
        found = await files.call_tool("read_file", {"path": "pyproject.toml", "max_chars": 80})
        print("read_file pyproject.toml:", found.content[0].text.splitlines()[0])
    print("the session ended: its three calls are a trajectory in the dashboard (/traces/)")


if __name__ == "__main__":
    anyio.run(main)
