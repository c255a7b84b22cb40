"""A small real MCP server for the tests, on the `mcp` package's MCPServer over stdio.

    python tests/experiences/mcp/toy_server.py

Tools: `add` (succeeds), `read_config` (a tool error: the result has isError), `deploy`
(answers with a JSON-RPC error), `slow` (sleeps).
"""

import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

server = MCPServer("toy")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def read_config(path: str) -> str:
    """Read a configuration file."""
    raise ToolError(f"permission denied: {path}")


@server.tool()
def deploy(service: str) -> str:
    """Deploy a service."""
    raise MCPError(code=-32001, message=f"deploy of {service} refused: cluster is locked")


@server.tool()
def slow(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "done"


if __name__ == "__main__":
    server.run()
