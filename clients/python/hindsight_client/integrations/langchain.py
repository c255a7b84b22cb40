"""LangChain / LangGraph: each run of an agent becomes one trajectory; recall is a tool and a
prompt block; warnings are added to a tool's result before the model reads it.

    hindsight = HindsightCallbackHandler(client, agent="repo-agent", environment=["bare-metal"])
    agent.invoke({"messages": [...]}, config={"callbacks": [hindsight]})

The handler follows the run tree: the run without a parent (the agent's graph, a chain, or a
model or tool called alone) opens a trajectory, every model turn (`llm_reasoning`, with the
tool calls it asked for) and tool call (`tool_call`: arguments, result, error) below it is a
step, and the root's end completes it. LangChain has no notion of an outcome: a run that
returns is a `success` and a run that raises a `failure` (with the exception as a last step),
unless `outcome=` decides from the run's output. The user and the session are taken from the
run's metadata (`user_id` / `user`, and LangGraph's `thread_id`), the task from the last user
message of the input unless `task=` is given.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.outputs import LLMResult
from langchain_core.tools import BaseTool, StructuredTool

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

__all__ = [
    "HindsightCallbackHandler",
    "RecallScope",
    "recall_block",
    "recall_tool",
    "tool_call_warnings",
]


def recall_tool(
    client: HindsightClient, scope: RecallScope | None = None, *, name: str = RECALL_TOOL_NAME
) -> BaseTool:
    """A tool the model calls with the task in its own words; it answers the recalled advice."""

    def hindsight_recall(task: str) -> str:
        return recall_tool_answer(client, task, scope)

    return StructuredTool.from_function(
        func=hindsight_recall, name=name, description=RECALL_TOOL_DESCRIPTION
    )


def tool_call_warnings(
    client: HindsightClient,
    *,
    environment: Sequence[str] | None = None,
    agent: str | None = None,
    timeout: float = 0.5,
) -> Callable[[Any, Callable[[Any], Any]], Any]:
    """A `wrap_tool_call` hook: each tool call is checked against the project's frequent
    failure patterns while it runs, and a match is appended to the tool's message, so the model
    reads it before its next move. For `langchain.agents.create_agent`, wrap it:
    `middleware=[wrap_tool_call(tool_call_warnings(client))]`; LangGraph's `ToolNode` takes it
    as `ToolNode(tools, wrap_tool_call=...)`."""
    warnings = ToolCallWarnings(client, environment=environment, agent=agent, timeout=timeout)

    def warn_before_tool_call(request: Any, handler: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        pending = warnings.check(call["name"], call.get("args"))
        result = handler(request)
        note = warnings.note(pending)
        if note and isinstance(result, ToolMessage):
            result.content = f"{result.text}\n\n{note}"
        return result

    return warn_before_tool_call


@dataclass
class _Call:
    """A model turn or tool call between its start and its end."""

    name: str
    arguments: Any = None


class HindsightCallbackHandler(BaseCallbackHandler):
    """Records each root run as one trajectory (see the module's docstring). Thread-safe;
    one handler may serve many runs at once. `ignore_tools` are not recorded (by default the
    recall tool: asking memory is not part of the task's path)."""

    def __init__(
        self,
        client: HindsightClient,
        *,
        agent: str,
        environment: Sequence[str] = (),
        task: str | None = None,
        task_type: str | None = None,
        user: str | None = None,
        outcome: Callable[[Any], str] | None = None,
        ignore_tools: Sequence[str] = (RECALL_TOOL_NAME,),
        **recorder_options: Any,
    ) -> None:
        self.client = client
        self.agent = agent
        self.environment = list(environment)
        self.task = task
        self.task_type = task_type
        self.user = user
        self.outcome = outcome
        self.ignore_tools = set(ignore_tools)
        self.recorder_options = recorder_options
        self.recorders: list[TrajectoryRecorder] = []  # one per root run, oldest first
        self._lock = threading.Lock()
        self._root_of: dict[UUID, UUID] = {}
        self._open: dict[UUID, TrajectoryRecorder] = {}
        self._calls: dict[UUID, _Call] = {}

    # ------------------------------------------------------------------ the run tree

    def _enter(
        self, run_id: UUID, parent_run_id: UUID | None, task: str, metadata: dict | None
    ) -> TrajectoryRecorder | None:
        """The recorder of the run's root; a run without a parent opens one."""
        with self._lock:
            if parent_run_id is not None:
                root = self._root_of.get(parent_run_id, parent_run_id)
                self._root_of[run_id] = root
                return self._open.get(root)
            self._root_of[run_id] = run_id
            recorder = self._open_trajectory(task, metadata or {})
            self._open[run_id] = recorder
            self.recorders.append(recorder)
            return recorder

    def _open_trajectory(self, task: str, metadata: dict[str, Any]) -> TrajectoryRecorder:
        task = self.task or task or "(no task given)"
        user = self.user or metadata.get("user_id") or metadata.get("user")
        thread = metadata.get("thread_id")
        recorder = self.client.recorder(
            agent=self.agent,
            task=task,
            environment=self.environment,
            task_type=self.task_type,
            user=str(user) if user else None,
            session_id=str(thread) if thread else None,
            **self.recorder_options,
        )
        recorder.user_input(task)
        return recorder

    def _recorder(self, run_id: UUID) -> TrajectoryRecorder | None:
        with self._lock:
            root = self._root_of.get(run_id)
            return self._open.get(root) if root is not None else None

    def _leave(self, run_id: UUID, *, output: Any = None, error: BaseException | None = None):
        with self._lock:
            recorder = self._open.pop(run_id, None)
            if recorder is None:
                return  # not a root
            self._root_of = {k: v for k, v in self._root_of.items() if v != run_id}
        if error is not None:
            recorder.record_event(
                "system",
                content=f"the run stopped with {type(error).__name__}: {error}",
                is_error=True,
                error_type=type(error).__name__,
            )
            recorder.finish("failure")
            return
        outcome = self.outcome(output) if self.outcome is not None else "success"
        recorder.finish(outcome, final_answer=final_answer(output) or None)

    # ------------------------------------------------------------------ chains

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._enter(run_id, parent_run_id, task_of(inputs), metadata)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._leave(run_id, output=outputs)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._leave(run_id, error=error)

    # ------------------------------------------------------------------ model turns

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        prompt = messages[0] if messages else []
        self._enter(run_id, parent_run_id, task_of({"messages": prompt}), metadata)
        model = (metadata or {}).get("ls_model_name") or _name(serialized, kwargs)
        with self._lock:
            self._calls[run_id] = _Call(name=str(model or "model"))

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._enter(run_id, parent_run_id, prompts[-1] if prompts else "", metadata)
        with self._lock:
            self._calls[run_id] = _Call(name=_name(serialized, kwargs) or "model")

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        recorder, call = self._recorder(run_id), self._pop_call(run_id)
        if recorder is not None:
            recorder.record_event(
                "llm_reasoning", content=turn_text(response), context={"model": call.name}
            )
        self._leave(run_id, output=response)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        recorder, call = self._recorder(run_id), self._pop_call(run_id)
        if recorder is not None:
            recorder.record_event(
                "llm_reasoning",
                content=f"the model call failed: {type(error).__name__}: {error}",
                is_error=True,
                error_type=type(error).__name__,
                context={"model": call.name},
            )
        self._leave(run_id, error=error)

    # ------------------------------------------------------------------ tool calls

    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._enter(run_id, parent_run_id, input_str, metadata)
        arguments = inputs if inputs is not None else _decoded(input_str)
        with self._lock:
            self._calls[run_id] = _Call(
                name=_name(serialized, kwargs) or "tool", arguments=arguments
            )

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        recorder, call = self._recorder(run_id), self._pop_call(run_id)
        if recorder is not None and call.name not in self.ignore_tools:
            is_error = isinstance(output, ToolMessage) and output.status == "error"
            recorder.record_event(
                "tool_call",
                tool=call.name,
                arguments=call.arguments,
                observation=tool_output_text(output),
                is_error=is_error,
            )
        self._leave(run_id, output=output)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        recorder, call = self._recorder(run_id), self._pop_call(run_id)
        if recorder is not None and call.name not in self.ignore_tools:
            recorder.record_event(
                "tool_call",
                tool=call.name,
                arguments=call.arguments,
                observation=f"{type(error).__name__}: {error}",
                is_error=True,
                error_type=type(error).__name__,
            )
        self._leave(run_id, error=error)

    def _pop_call(self, run_id: UUID) -> _Call:
        with self._lock:
            return self._calls.pop(run_id, None) or _Call(name="unknown")

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every trajectory recorded so far is stored (False on timeout)."""
        return all(recorder.flush(timeout) for recorder in list(self.recorders))


# ---------------------------------------------------------------------- what a run holds


def task_of(inputs: Any) -> str:
    """The task of a run's input: the last user message of `{"messages": [...]}` (messages,
    dicts or (role, text) pairs), a plain string, or an `input` / `question` field."""
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, dict):
        messages = inputs.get("messages")
        if isinstance(messages, list):
            for message in reversed(messages):
                role, content = _role_and_content(message)
                if role in ("human", "user"):
                    return content
        for field in ("input", "question", "query", "task"):
            if isinstance(inputs.get(field), str):
                return inputs[field]
    return ""


def _role_and_content(message: Any) -> tuple[str, str]:
    if isinstance(message, BaseMessage):
        return message.type, message.text
    if isinstance(message, dict):
        return str(message.get("role") or message.get("type") or ""), text_of(
            message.get("content")
        )
    if isinstance(message, (tuple, list)) and len(message) == 2:
        return str(message[0]), text_of(message[1])
    return "", ""


def final_answer(output: Any) -> str:
    """The last AI message of a run's output (`{"messages": [...]}`), or a string output."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and isinstance(output.get("messages"), list):
        for message in reversed(output["messages"]):
            role, content = _role_and_content(message)
            if role in ("ai", "assistant") and content:
                return content
    return ""


def turn_text(response: LLMResult) -> str:
    """A model turn as a step's content: its text, then each tool call it asked for."""
    lines = []
    for generations in response.generations:
        for generation in generations:
            message = getattr(generation, "message", None)
            if message is None:
                lines.append(generation.text)
                continue
            if message.text:
                lines.append(message.text)
            for call in getattr(message, "tool_calls", None) or []:
                lines.append(f"calls {call['name']} {json.dumps(call.get('args'), default=str)}")
    return "\n".join(line for line in lines if line) or "(empty answer)"


def tool_output_text(output: Any) -> Any:
    if isinstance(output, ToolMessage):
        return output.text
    if isinstance(output, BaseMessage):
        return output.text
    return output


def _name(serialized: dict[str, Any] | None, kwargs: dict[str, Any]) -> str:
    return str(kwargs.get("name") or (serialized or {}).get("name") or "")


def _decoded(input_str: str) -> Any:
    try:
        return json.loads(input_str)
    except ValueError:
        return input_str
