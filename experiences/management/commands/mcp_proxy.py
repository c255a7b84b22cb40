"""`manage.py mcp_proxy --agent NAME [--task TEXT] [--warn] -- <MCP server command>`.

A thin shell over `hindsight_client.mcp_proxy` (standard library only, also runnable as
`python -m hindsight_client.mcp_proxy` where Django is not installed). It talks to hindsight
over HTTP (HINDSIGHT_URL, HINDSIGHT_API_KEY) like any agent, so the same key scopes, limits and
audit apply; stdout carries nothing but the MCP messages.
"""

import sys

from django.core.management.base import BaseCommand, CommandParser

from hindsight_client import mcp_proxy


class Command(BaseCommand):
    help = "Record the tool calls of an MCP session as a trajectory, forwarding every message."
    requires_system_checks: list[str] = []  # start fast; the proxy never touches the database

    def add_arguments(self, parser: CommandParser) -> None:
        mcp_proxy.add_arguments(parser)

    def handle(self, *args, **options) -> None:
        sys.exit(mcp_proxy.run(mcp_proxy.options_from(options)))
