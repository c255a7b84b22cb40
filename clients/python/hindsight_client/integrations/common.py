"""What every framework integration shares, standard library only: recall as a prompt block
and as a tool's answer, and the warning check that runs beside a tool call.

Memory never stops an agent: a recall or a warning check that fails (hindsight unreachable,
a refused key) is logged and answers nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from hindsight_client.client import HindsightClient
from hindsight_client.errors import HindsightError
from hindsight_client.mcp_calls import warning_text
from hindsight_client.models import ToolWarning

logger = logging.getLogger("hindsight_client.integrations")

RECALL_TOOL_NAME = "hindsight_recall"
RECALL_TOOL_DESCRIPTION = (
    "Recall what earlier runs of similar tasks taught: which tools and steps worked, and "
    "which calls failed. Call it once before you start, with the task in your own words."
)
NOTHING_RECALLED = "No experience recorded for this kind of task yet."


@dataclass(frozen=True)
class RecallScope:
    """What a recall asks besides the task: who asks, where, with which tools. None leaves a
    field to the server (`include_candidates`: also experience nobody approved yet)."""

    agent: str | None = None
    environment: Sequence[str] | None = None
    tools: Sequence[str] | None = None
    user: str | None = None
    task_type: str | None = None
    k: int = 5
    include_candidates: bool | None = None


def recall_block(client: HindsightClient, task: str, scope: RecallScope | None = None) -> str:
    """The recall's `prompt_block` for `task`, ready to sit after the tool descriptions in the
    system prompt; "" when nothing is recalled or the recall failed (logged)."""
    scope = scope or RecallScope()
    try:
        recall = client.recall(
            task,
            agent=scope.agent,
            environment=scope.environment,
            tools=scope.tools,
            user=scope.user,
            task_type=scope.task_type,
            k=scope.k,
            include_candidates=scope.include_candidates,
        )
    except HindsightError as error:
        logger.warning("hindsight recall failed, the agent goes on without it: %s", error)
        return ""
    return recall.prompt_block


def recall_tool_answer(client: HindsightClient, task: str, scope: RecallScope | None) -> str:
    """What the recall tool answers the model: the prompt block, or that nothing is known."""
    return recall_block(client, task, scope) or NOTHING_RECALLED


class ToolCallWarnings:
    """Checks each planned tool call against the project's frequent failure patterns in a
    thread, so the tool starts at once, and gives the note to add to the tool's result (as the
    MCP capture proxy does): `pending = warnings.check(tool, args)`, run the tool, then
    `warnings.note(pending)`. A check still unanswered `timeout` seconds after the tool ended
    is dropped."""

    def __init__(
        self,
        client: HindsightClient,
        *,
        environment: Sequence[str] | None = None,
        agent: str | None = None,
        timeout: float = 0.5,
    ) -> None:
        self.client = client
        self.environment = environment
        self.agent = agent
        self.timeout = timeout
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hindsight-warnings")

    def check(self, tool: str, arguments: Any) -> Future[list[ToolWarning]]:
        return self._pool.submit(self._warnings, tool, arguments)

    def found(self, pending: Future[list[ToolWarning]]) -> list[ToolWarning]:
        try:
            return pending.result(timeout=self.timeout)
        except FutureTimeout:
            return []

    def note(self, pending: Future[list[ToolWarning]]) -> str:
        """The text to append to the tool's result ("" when nothing matched in time)."""
        found = self.found(pending)
        return warning_text(found) if found else ""

    def _warnings(self, tool: str, arguments: Any) -> list[ToolWarning]:
        try:
            return self.client.check_tool_call(
                tool,
                arguments,
                environment=self.environment,
                agent=self.agent,
                timeout=self.timeout,
            )
        except HindsightError as error:
            logger.warning("hindsight warning check of %s failed: %s", tool, error)
            return []


def parse_arguments(raw: Any) -> Any:
    """A tool call's arguments as the model sent them: a JSON string decoded, else as given."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def text_of(value: Any) -> str:
    """Text for a step's content: strings as they are, anything else as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str)
