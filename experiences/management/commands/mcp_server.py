"""`manage.py mcp_server [--http PORT]`: hindsight recall as MCP tools (experiences.mcp.server).

Over stdio by default (stdout carries only MCP messages); with --http, streamable HTTP at
http://HOST:PORT/mcp. The key comes from HINDSIGHT_API_KEY, the site from HINDSIGHT_URL.
"""

import os

from django.core.management.base import BaseCommand, CommandError, CommandParser

from experiences.mcp.server import build_server
from hindsight_client import HindsightClient


class Command(BaseCommand):
    help = "Serve recall, check_tool_call and recall_feedback as MCP tools (stdio or HTTP)."
    requires_system_checks: list[str] = []  # start fast; the server never touches the database

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--http",
            type=int,
            metavar="PORT",
            help="serve streamable HTTP on this port instead of stdio",
        )
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument(
            "--agent",
            default=os.environ.get("HINDSIGHT_AGENT") or None,
            help="agent name sent with every call (default: HINDSIGHT_AGENT)",
        )
        parser.add_argument(
            "--environment",
            action="append",
            default=[],
            metavar="TAG",
            help="default environment tag of every call; repeat for several",
        )

    def handle(self, *args, **options) -> None:
        key = os.environ.get("HINDSIGHT_API_KEY", "").strip()
        if not key:
            raise CommandError("set HINDSIGHT_API_KEY to an API key with the 'recall' scope")
        client = HindsightClient(os.environ.get("HINDSIGHT_URL", "http://localhost:8000"), key)
        server = build_server(client, agent=options["agent"], environment=options["environment"])
        if options["http"]:
            server.run("streamable-http", host=options["host"], port=options["http"])
        else:
            server.run()
