"""The recall MCP server: `recall`, `check_tool_call` and `recall_feedback` as MCP tools.

It calls hindsight's HTTP API with the key in HINDSIGHT_API_KEY (HINDSIGHT_URL, default
http://localhost:8000) rather than the Django services directly: the key alone decides the
project, scopes, rate limit and the recall log, exactly as for any other agent; the process an
IDE or agent spawns needs no database access (it may run on another machine than the site);
and it holds no database connection for the life of a stdio session.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from hindsight_client import HindsightClient, HindsightError

NOTHING_RECALLED = "No stored experience matches this task yet."
NO_WARNING = "No frequent failure pattern matches this call."


def build_server(
    client: HindsightClient, *, agent: str | None = None, environment: list[str] | None = None
) -> MCPServer:
    """An MCPServer whose tools answer through `client`; `agent` and `environment` are the
    defaults of every call (the agent may override the environment per call)."""
    environment_default = environment or None
    server = MCPServer(
        "hindsight",
        instructions=(
            "Call `recall` with the task before starting it and follow the advice it returns; "
            "call `check_tool_call` before a risky tool call; after the task, call "
            "`recall_feedback` with the ids of the items that helped."
        ),
    )

    @server.tool()
    def recall(
        task: str,
        task_type: str | None = None,
        intent: str | None = None,
        environment: list[str] | None = None,
        tools: list[str] | None = None,
        k: int = 5,
    ) -> CallToolResult:
        """Experience from earlier runs that fits this task, as advice to follow.

        task: what you are about to do. task_type: query, operation, analysis or other.
        environment: tags such as docker, k8s, bare-metal. tools: the tools you can use.
        """
        try:
            answer = client.recall(
                task,
                task_type=task_type,
                intent=intent,
                tools=tools,
                k=k,
                agent=agent,
                environment=environment if environment is not None else environment_default,
            )
        except HindsightError as error:
            raise ToolError(f"hindsight recall failed: {error}") from error
        items = [
            {
                "experience_id": item.experience_id,
                "advice": item.advice,
                "score": item.score,
                "environment_match": item.environment_match,
            }
            for item in answer.items
        ]
        text = answer.prompt_block or NOTHING_RECALLED
        return CallToolResult(
            content=[TextContent(type="text", text=f"{text}\n\n(recall id {answer.id})")],
            structured_content={
                "recall_id": answer.id,
                "items": items,
                "warnings": [w.raw for w in answer.warnings],
                "prompt_block": answer.prompt_block,
            },
        )

    @server.tool()
    def check_tool_call(
        tool: str, arguments: dict[str, Any] | None = None, task: str | None = None
    ) -> CallToolResult:
        """Before a tool call: frequent failures of similar calls and what to do instead."""
        try:
            warnings = client.check_tool_call(
                tool, arguments or {}, task=task, environment=environment_default, agent=agent
            )
        except HindsightError as error:
            raise ToolError(f"hindsight check failed: {error}") from error
        text = "\n".join(f"- {w.text}" for w in warnings) if warnings else NO_WARNING
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content={"warnings": [w.raw for w in warnings]},
        )

    @server.tool()
    def recall_feedback(
        recall_id: int, helpful: list[int] | None = None, unhelpful: list[int] | None = None
    ) -> str:
        """After the task: which recalled experience ids helped and which did not."""
        try:
            client.recall_feedback(recall_id, helpful=helpful or [], unhelpful=unhelpful or [])
        except HindsightError as error:
            raise ToolError(f"hindsight feedback failed: {error}") from error
        return "Thanks: the feedback is recorded."

    return server
