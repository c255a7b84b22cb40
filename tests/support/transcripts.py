"""Transcripts as the official SDKs serialise them, for the import tests.

OpenAI: built from the `openai` package's own models and dumped the way agents log them.
Anthropic: the `anthropic` package is not installed here, so its blocks are written out in the
shapes its Messages API documents (what `Message.model_dump()` gives for each block type).
"""

import json
from dataclasses import dataclass
from typing import Any

from openai.types.chat import ChatCompletionMessage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseFunctionToolCallOutputItem,
    ResponseOutputMessage,
    ResponseReasoningItem,
)


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: dict[str, Any]
    output: str
    is_error: bool = False


# ---------------------------------------------------------------------------- OpenAI chat


def chat_assistant(
    content: str | None = None, calls: list[tuple[str, str, str]] = (), *, exclude_none=True
) -> dict[str, Any]:
    """An assistant turn as `ChatCompletion.choices[0].message.model_dump()` gives it.

    `calls` are (id, name, arguments as the JSON string the API returns).
    """
    message = ChatCompletionMessage(
        role="assistant",
        content=content,
        tool_calls=[
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in calls
        ]
        or None,
    )
    return message.model_dump(exclude_none=exclude_none)


def chat_tool(call_id: str, content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def chat_transcript(task: str, calls: list[Call], answer: str) -> list[dict[str, Any]]:
    """One assistant turn per call (a thought, then the call), each answered by a tool message."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful operations agent."},
        {"role": "user", "content": task},
    ]
    for n, call in enumerate(calls):
        call_id = f"call_{n}"
        thought = f"Next I run {call.tool}."
        messages.append(chat_assistant(thought, [(call_id, call.tool, json.dumps(call.arguments))]))
        messages.append(chat_tool(call_id, call.output))
    messages.append(chat_assistant(answer))
    return messages


# ---------------------------------------------------------------------------- OpenAI responses


def responses_message(text: str) -> dict[str, Any]:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[{"type": "output_text", "text": text, "annotations": []}],
    ).model_dump()


def responses_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return ResponseFunctionToolCall(
        type="function_call", id=f"fc_{call_id}", call_id=call_id, name=name, arguments=arguments
    ).model_dump()


def responses_output(call_id: str, output: str, *, sdk_item: bool = False) -> dict[str, Any]:
    if sdk_item:  # as `client.responses.input_items.list()` returns it
        return ResponseFunctionToolCallOutputItem(
            id=f"fco_{call_id}",
            type="function_call_output",
            call_id=call_id,
            output=output,
            status="completed",
        ).model_dump()
    # as the agent sends it back in the next request's `input`
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def responses_reasoning(summary: str) -> dict[str, Any]:
    return ResponseReasoningItem(
        id="rs_1", type="reasoning", summary=[{"type": "summary_text", "text": summary}]
    ).model_dump()


def responses_transcript(task: str, calls: list[Call], answer: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"role": "developer", "content": "You are a careful operations agent."},
        {"role": "user", "content": task},
    ]
    for n, call in enumerate(calls):
        items.append(responses_reasoning(f"Next I run {call.tool}."))
        items.append(responses_call(f"call_{n}", call.tool, json.dumps(call.arguments)))
        items.append(responses_output(f"call_{n}", call.output, sdk_item=n % 2 == 1))
    items.append(responses_message(answer))
    return items


# ---------------------------------------------------------------------------- Anthropic


def anthropic_text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "citations": None}


def anthropic_tool_use(tool_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": arguments}


def anthropic_thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3h"}


def anthropic_result(tool_id: str, content: Any, *, is_error: bool | None = None):
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


def anthropic_transcript(task: str, calls: list[Call], answer: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for n, call in enumerate(calls):
        tool_id = f"toolu_{n:02d}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    anthropic_thinking(f"Next I run {call.tool}."),
                    anthropic_tool_use(tool_id, call.tool, call.arguments),
                ],
            }
        )
        result = anthropic_result(tool_id, call.output, is_error=call.is_error or None)
        messages.append({"role": "user", "content": [result]})
    messages.append({"role": "assistant", "content": [anthropic_text(answer)]})
    return messages


BUILDERS = {
    "openai": chat_transcript,
    "openai-responses": responses_transcript,
    "anthropic": anthropic_transcript,
}


def import_body(
    format: str, external_id: str = "chat-1", *, messages: list[Any], **fields: Any
) -> dict[str, Any]:
    return {
        "format": format,
        "external_id": external_id,
        "agent": "ops-bot",
        "outcome": "success",
        "environment": ["k8s"],
        "messages": messages,
        **fields,
    }
