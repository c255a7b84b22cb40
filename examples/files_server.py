"""A tiny real MCP server (the `mcp` package's MCPServer, stdio) for examples/mcp_example.py:
lists and reads files under the current directory."""

from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("files")


@server.tool()
def list_dir(path: str = ".") -> list[str]:
    """List a directory."""
    return sorted(entry.name for entry in Path(path).iterdir())


@server.tool()
def read_file(path: str, max_chars: int = 2000) -> str:
    """Read a text file."""
    try:
        return Path(path).read_text()[:max_chars]
    except OSError as error:
        raise ToolError(f"cannot read {path}: {error.strerror}") from None


if __name__ == "__main__":
    server.run()
