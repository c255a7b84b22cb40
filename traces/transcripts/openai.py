"""OpenAI Chat Completions messages (as `ChatCompletionMessage.model_dump()` and the request's
`messages` serialise them) into native steps.

system / developer → kept as the trace's system prompt (metadata), not a step
user               → user_input (text parts joined, media parts as placeholders)
assistant          → `reasoning_content` / `reasoning` (OpenAI-compatible servers) → llm_reasoning;
                     `content` / `refusal` → llm_reasoning, or the final answer when it is the last
                     thing said with no tool call after it; each of `tool_calls` → tool_call
                     (`function.arguments` parsed from its JSON string; kept as text if not JSON);
                     the legacy `function_call` → tool_call
tool               → the observation of the call its `tool_call_id` names
function (legacy)  → the observation of the latest unanswered `function_call` of that name
"""

from typing import Any

from traces.transcripts.common import (
    Conversation,
    Loc,
    TranscriptError,
    as_list,
    as_object,
    parse_arguments,
    parts_text,
    required_text,
)

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def convert(messages: list[Any]) -> Conversation:
    conversation = Conversation()
    legacy: dict[str, list[str]] = {}  # function name -> ids of its unanswered function_calls
    for position, raw in enumerate(messages):
        loc: Loc = (position,)
        message = as_object(raw, loc, "a message")
        role = message.get("role")
        if role not in ROLES:
            raise TranscriptError(
                (*loc, "role"),
                f"unknown role {role!r}; expected one of {', '.join(ROLES)}"
                if role is not None
                else "missing",
            )
        content_loc: Loc = (*loc, "content")
        if role in ("system", "developer"):
            text = parts_text(message.get("content"), content_loc).strip()
            if text:
                conversation.system.append(text)
        elif role == "user":
            conversation.user_text(parts_text(message.get("content"), content_loc), content_loc)
        elif role == "assistant":
            _assistant(conversation, message, loc, legacy)
        elif role == "tool":
            call_id = required_text(message, "tool_call_id", loc)
            conversation.tool_result(
                call_id=call_id,
                output=_output(message.get("content"), content_loc),
                loc=loc,
                id_loc=(*loc, "tool_call_id"),
            )
        else:  # function
            name = required_text(message, "name", loc)
            waiting = legacy.get(name)
            if not waiting:
                raise TranscriptError((*loc, "name"), f"no function call named '{name}' before it")
            conversation.tool_result(
                call_id=waiting.pop(0),
                output=_output(message.get("content"), content_loc),
                loc=loc,
                id_loc=(*loc, "name"),
            )
    return conversation.finish()


def _assistant(
    conversation: Conversation, message: dict[str, Any], loc: Loc, legacy: dict[str, list[str]]
) -> None:
    for key in ("reasoning_content", "reasoning"):
        if isinstance(message.get(key), str):
            conversation.reasoning(message[key], (*loc, key))
    content_loc: Loc = (*loc, "content")
    text = parts_text(message.get("content"), content_loc)
    if isinstance(message.get("refusal"), str) and message["refusal"] not in text:
        text = "\n".join(t for t in (text, f"[refusal] {message['refusal']}") if t)
    conversation.assistant_text(text, content_loc)
    for position, raw in enumerate(
        as_list(message.get("tool_calls"), (*loc, "tool_calls"), "tool calls")
    ):
        call_loc: Loc = (*loc, "tool_calls", position)
        call = as_object(raw, call_loc, "a tool call")
        if call.get("type") == "custom":  # a custom tool: free-form text input
            custom = as_object(call.get("custom"), (*call_loc, "custom"), "the custom tool call")
            tool = required_text(custom, "name", (*call_loc, "custom"))
            arguments = custom.get("input")
        else:
            function = as_object(call.get("function"), (*call_loc, "function"), "the function")
            tool = required_text(function, "name", (*call_loc, "function"))
            arguments = parse_arguments(function.get("arguments"))
        conversation.tool_call(call_id=call.get("id"), tool=tool, arguments=arguments, loc=call_loc)
    if message.get("function_call") is not None:
        call_loc = (*loc, "function_call")
        function = as_object(message["function_call"], call_loc, "the function call")
        tool = required_text(function, "name", call_loc)
        call_id = f"function_call:{len(conversation.steps)}"
        legacy.setdefault(tool, []).append(call_id)
        arguments = parse_arguments(function.get("arguments"))
        conversation.tool_call(call_id=call_id, tool=tool, arguments=arguments, loc=call_loc)


def _output(content: Any, loc: Loc) -> str:
    return parts_text(content, loc)
