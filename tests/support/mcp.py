"""The MCP tests' command lines and sessions: the capture proxy (and wiretaps) between the `mcp`
package's stdio client and the toy server (tests/experiences/mcp/toy_server.py), the recall
server, and the live site they report to."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anyio
from django.conf import settings
from mcp import Client, StdioServerParameters

from accounts.models import Project
from tests.support.worker import worker_database_url

ROOT = Path(__file__).resolve().parents[2]
# The toy MCP server and the wiretap are scripts of the MCP tests.
HERE = ROOT / "tests" / "experiences" / "mcp"
TOY_SERVER = [sys.executable, str(HERE / "toy_server.py")]


@dataclass
class Site:
    url: str
    key: str
    project: Project

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a proxy or MCP server run against this site. DATABASE_URL and
        REDIS_URL are the suite's, so manage.py starts no embedded service of its own."""
        return {
            **os.environ,
            "HINDSIGHT_URL": self.url,
            "HINDSIGHT_API_KEY": self.key,
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            **extra,
        }


def proxy_command(
    *options: str, server: list[str] = TOY_SERVER, via_manage_py: bool = False
) -> list[str]:
    """The proxy's command line: `manage.py mcp_proxy`, or (quicker to start, no Django) the
    same code as `python -m hindsight_client.mcp_proxy`."""
    entry = ["manage.py", "mcp_proxy"] if via_manage_py else ["-m", "hindsight_client.mcp_proxy"]
    return [sys.executable, *entry, *options, "--", *server]


def recall_server_command(*options: str) -> list[str]:
    return [sys.executable, "manage.py", "mcp_server", *options]


def tapped(log: Path, command: list[str]) -> list[str]:
    return [sys.executable, str(HERE / "wiretap.py"), str(log), "--", *command]


def stdio(command: list[str], env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(ROOT))


def session[T](
    command: list[str], env: dict[str, str], body: Callable[[Client], Awaitable[T]]
) -> T:
    """Run `body` with an MCP client connected over stdio to `command`, then hang up."""

    async def main() -> T:
        async with Client(stdio(command, env), read_timeout_seconds=30) as client:
            return await body(client)

    return run_async(main)


def run_async[T](main: Callable[[], Awaitable[T]]) -> T:
    """anyio.run in its own thread: Playwright's sync API (the browser tests, earlier in the same
    session) keeps an event loop in the main thread, where a second loop cannot run."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, main).result()


def lines(log: Path, direction: str) -> list[bytes]:
    prefix = direction.encode() + b" "
    return [
        line[2:] for line in log.read_bytes().splitlines(keepends=True) if line.startswith(prefix)
    ]
