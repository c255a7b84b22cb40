"""OpenAI Responses API items (a request's `input` items and a response's `output` items, as
`model_dump()` serialises them) into native steps.

message (user)                 → user_input (input_text parts; media parts as placeholders)
message (system / developer)   → kept as the trace's system prompt (metadata), not a step
message (assistant)            → llm_reasoning (output_text parts, refusals marked), or the final
                                 answer when it is the last one with no call after it
reasoning                      → llm_reasoning from its summary texts (else its reasoning_text
                                 content); encrypted-only reasoning is dropped
function_call / custom_tool_call → tool_call (`arguments` parsed from JSON, kept as text if not
                                 JSON; a custom call's `input` as is)
function_call_output / custom_tool_call_output → the observation of the call its `call_id` names
built-in tool calls (web_search_call, file_search_call, mcp_call, computer_call, …) → tool_call
                                 named by `name` or the item type, the item's own fields as
                                 arguments, its output/results as the observation, failed status or
                                 an error as is_error; `*_call_output` items answer them by call_id
anything else (item_reference, mcp_list_tools, compaction, …) → dropped
"""

from typing import Any

from traces.transcripts.common import (
    Conversation,
    Loc,
    TranscriptError,
    as_list,
    as_object,
    join_texts,
    parse_arguments,
    parts_text,
    required_text,
)

TEXT_PARTS = frozenset({"input_text", "output_text", "text"})
# Fields of a built-in tool call item that describe the item, not what the call was asked to do.
_ITEM_FIELDS = frozenset({"id", "type", "status", "call_id", "name", "arguments", "caller"})
_OUTPUT_FIELDS = ("output", "outputs", "results", "result", "error")


def convert(messages: list[Any]) -> Conversation:
    conversation = Conversation()
    for position, raw in enumerate(messages):
        loc: Loc = (position,)
        item = as_object(raw, loc, "an item")
        kind = item.get("type")
        if kind is None and "role" in item:
            kind = "message"  # an "easy" input message: {"role": ..., "content": ...}
        if not isinstance(kind, str):
            raise TranscriptError((*loc, "type"), "missing")
        if kind == "message":
            _message(conversation, item, loc)
        elif kind == "reasoning":
            conversation.reasoning(_reasoning_text(item, loc), loc)
        elif kind in ("function_call", "custom_tool_call"):
            call_id = required_text(item, "call_id", loc)
            tool = required_text(item, "name", loc)
            if kind == "function_call":
                arguments = parse_arguments(item.get("arguments"))
            else:
                arguments = item.get("input")
            conversation.tool_call(call_id=call_id, tool=tool, arguments=arguments, loc=loc)
        elif kind.endswith("_call_output"):
            call_id = required_text(item, "call_id", loc)
            conversation.tool_result(
                call_id=call_id,
                output=_output(item.get("output"), (*loc, "output")),
                loc=loc,
                id_loc=(*loc, "call_id"),
                what=kind.removesuffix("_output").replace("_", " "),
            )
        elif kind.endswith("_call"):
            _builtin_call(conversation, item, kind, loc)
    return conversation.finish()


def _message(conversation: Conversation, item: dict[str, Any], loc: Loc) -> None:
    role = item.get("role")
    content_loc: Loc = (*loc, "content")
    text = parts_text(item.get("content"), content_loc, text_types=TEXT_PARTS)
    if role == "user":
        conversation.user_text(text, content_loc)
    elif role == "assistant":
        conversation.assistant_text(text, content_loc)
    elif role in ("system", "developer"):
        if text.strip():
            conversation.system.append(text.strip())
    else:
        raise TranscriptError(
            (*loc, "role"),
            "missing"
            if role is None
            else f"unknown role {role!r}; expected user, assistant, system or developer",
        )


def _reasoning_text(item: dict[str, Any], loc: Loc) -> str:
    for key, part_type in (("summary", "summary_text"), ("content", "reasoning_text")):
        parts = as_list(item.get(key), (*loc, key), "parts")
        texts = [
            p["text"]
            for p in parts
            if isinstance(p, dict) and p.get("type") == part_type and isinstance(p.get("text"), str)
        ]
        if any(t.strip() for t in texts):
            return join_texts(texts)
    return ""


def _output(output: Any, loc: Loc) -> Any:
    """A call's output: a string, or a list of input_text / input_image / input_file parts."""
    if isinstance(output, list):
        return parts_text(output, loc, text_types=TEXT_PARTS)
    return output


def _builtin_call(conversation: Conversation, item: dict[str, Any], kind: str, loc: Loc) -> None:
    name = item.get("name")
    tool = name if isinstance(name, str) and name else kind.removesuffix("_call")
    if "arguments" in item:
        arguments = parse_arguments(item["arguments"])
    else:
        arguments = {
            k: v
            for k, v in item.items()
            if k not in _ITEM_FIELDS and k not in _OUTPUT_FIELDS and v is not None
        }
    conversation.tool_call(call_id=item.get("call_id"), tool=tool, arguments=arguments, loc=loc)
    step = conversation.steps[-1]
    output = next((item[k] for k in _OUTPUT_FIELDS if item.get(k) not in (None, [], "")), None)
    if output is not None:
        step["observation"] = output
    step["is_error"] = item.get("status") == "failed" or bool(item.get("error"))
