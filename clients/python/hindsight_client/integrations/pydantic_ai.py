"""PydanticAI: one capability records each run as a trajectory, puts the recall's prompt
block in the instructions, gives the model a recall tool, and adds warnings to tool results.

    agent = Agent(model, tools=[...], capabilities=[HindsightCapability(client, agent="...")])

The trajectory is the run's message history, sent when the run ends: the user prompt
(`user_input`), each model response (`llm_reasoning`: its text and the tool calls it asked
for) and each tool return (`tool_call`: the call's arguments and the returned content; a
return whose outcome is not `success`, e.g. a `ModelRetry`, is a failed step). A run that
returns is a `success`, one that raises a `failure` with the history up to the error (its
exception the last step): PydanticAI has no outcome of its own. The task is the run's user
prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.toolsets import FunctionToolset

from hindsight_client.client import HindsightClient
from hindsight_client.integrations.common import (
    RECALL_TOOL_DESCRIPTION,
    RECALL_TOOL_NAME,
    RecallScope,
    ToolCallWarnings,
    recall_block,
    recall_tool_answer,
    text_of,
)
from hindsight_client.recorder import TrajectoryRecorder

__all__ = ["HindsightCapability", "RecallScope", "steps_of"]


@dataclass(kw_only=True)
class HindsightCapability(AbstractCapability[Any]):
    """See the module's docstring. `scope` is what recall asks besides the task (by default
    this agent and environment); `recall_tool`, `recall_in_instructions` and `warn` turn each
    part off; `ignore_tools` are not recorded (by default the recall tool)."""

    client: HindsightClient
    agent: str
    environment: Sequence[str] = ()
    task_type: str | None = None
    scope: RecallScope | None = None
    recall_in_instructions: bool = True
    recall_tool: bool = True
    warn: bool = True
    warn_timeout: float = 0.5
    ignore_tools: Sequence[str] = (RECALL_TOOL_NAME,)
    recorder_options: dict[str, Any] = field(default_factory=dict)
    recorders: list[TrajectoryRecorder] = field(default_factory=list, init=False, repr=False)
    # Each run's history as its hooks see it (by run id): the context a run error is reported
    # with does not hold it.
    _histories: dict[str, list[ModelMessage]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.scope is None:
            self.scope = RecallScope(agent=self.agent, environment=list(self.environment))
        self._warnings = ToolCallWarnings(
            self.client,
            environment=list(self.environment),
            agent=self.agent,
            timeout=self.warn_timeout,
        )

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a client: not spec-serializable

    # ------------------------------------------------------------------ recall

    def get_instructions(self) -> Any:
        if not self.recall_in_instructions:
            return None

        async def recalled_experience(ctx: RunContext[Any]) -> str:
            task = prompt_text(ctx.prompt)
            return (
                await asyncio.to_thread(recall_block, self.client, task, self.scope) if task else ""
            )

        return recalled_experience

    def get_toolset(self) -> Any:
        if not self.recall_tool:
            return None
        client, scope = self.client, self.scope

        async def hindsight_recall(task: str) -> str:
            return await asyncio.to_thread(recall_tool_answer, client, task, scope)

        toolset: FunctionToolset[Any] = FunctionToolset()
        toolset.add_function(
            hindsight_recall, name=RECALL_TOOL_NAME, description=RECALL_TOOL_DESCRIPTION
        )
        return toolset

    # ------------------------------------------------------------------ warnings

    async def wrap_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: Any, args: Any, handler: Any
    ) -> Any:
        self._remember_history(ctx)
        if not self.warn or call.tool_name in self.ignore_tools:
            return await handler(args)
        pending = self._warnings.check(call.tool_name, call.args_as_dict())
        result = await handler(args)
        note = await asyncio.to_thread(self._warnings.note, pending)
        if note and isinstance(result, str):
            return f"{result}\n\n{note}"
        return result

    # ------------------------------------------------------------------ the trajectory

    async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
        self._remember_history(ctx)
        return request_context

    def _remember_history(self, ctx: RunContext[Any]) -> None:
        if ctx.run_id is not None:
            self._histories[ctx.run_id] = ctx.messages

    async def after_run(self, ctx: RunContext[Any], *, result: Any) -> Any:
        self._histories.pop(ctx.run_id or "", None)
        self._record(ctx, result.all_messages(), "success", final_answer=text_of(result.output))
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> Any:
        history = self._histories.pop(ctx.run_id or "", None) or ctx.messages
        self._record(ctx, history, "failure", error=error)
        raise error

    def _record(
        self,
        ctx: RunContext[Any],
        messages: list[ModelMessage],
        outcome: str,
        *,
        final_answer: str = "",
        error: BaseException | None = None,
    ) -> None:
        task = prompt_text(ctx.prompt) or "(no task given)"
        recorder = self.client.recorder(
            agent=self.agent,
            task=task,
            environment=list(self.environment),
            task_type=self.task_type,
            metadata={"pydantic_ai_run_id": ctx.run_id} if ctx.run_id else None,
            **self.recorder_options,
        )
        self.recorders.append(recorder)
        for step in steps_of(messages, ignore_tools=set(self.ignore_tools)):
            recorder.record_event(**step)
        if error is not None:
            recorder.record_event(
                "system",
                content=f"the run stopped with {type(error).__name__}: {error}",
                is_error=True,
                error_type=type(error).__name__,
            )
        recorder.finish(outcome, final_answer=final_answer or None)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every run recorded so far is stored (False on timeout)."""
        return all(recorder.flush(timeout) for recorder in list(self.recorders))


def steps_of(messages: list[ModelMessage], *, ignore_tools: set[str]) -> list[dict[str, Any]]:
    """A run's message history as recorder events, in order."""
    calls: dict[str, ToolCallPart] = {}  # by tool_call_id, for the returns' arguments
    steps: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            steps.append(_response_step(message, calls))
        elif isinstance(message, ModelRequest):
            steps.extend(_request_steps(message, calls, ignore_tools))
    return steps


def _response_step(message: ModelResponse, calls: dict[str, ToolCallPart]) -> dict[str, Any]:
    lines = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.content:
            lines.append(part.content)
        elif isinstance(part, ToolCallPart):
            calls[part.tool_call_id] = part
            lines.append(f"calls {part.tool_name} {part.args_as_json_str()}")
    return {
        "kind": "llm_reasoning",
        "content": "\n".join(lines) or "(empty answer)",
        "started_at": message.timestamp,
        "context": {"model": message.model_name} if message.model_name else None,
    }


def _request_steps(
    message: ModelRequest, calls: dict[str, ToolCallPart], ignore_tools: set[str]
) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, UserPromptPart):
            steps.append({"kind": "user_input", "content": prompt_text(part.content)})
        elif isinstance(part, ToolReturnPart) and part.tool_name not in ignore_tools:
            call = calls.get(part.tool_call_id)
            steps.append(
                {
                    "kind": "tool_call",
                    "tool": part.tool_name,
                    "arguments": call.args_as_dict() if call is not None else None,
                    "observation": part.model_response_str(wrap_if_error=False),
                    "is_error": part.outcome != "success",
                    "started_at": part.timestamp,
                }
            )
    return steps


def prompt_text(prompt: Any) -> str:
    """A user prompt's text (its text parts when it is a sequence of contents)."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(part for part in prompt if isinstance(part, str))
