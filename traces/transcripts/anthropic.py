"""Anthropic Messages API messages (the request's `messages`, with each response's
`Message.content` blocks as the assistant turns) into native steps.

user, content a string or text blocks → user_input (image / document blocks as placeholders)
user, tool_result block  → the observation of the tool_use its `tool_use_id` names (`content` a
                           string or text blocks); `is_error` → is_error (else judged by the output)
assistant, text          → llm_reasoning, or the final answer when it is the last thing said with no
                           tool_use after it
assistant, thinking      → llm_reasoning (the thinking text)
assistant, redacted_thinking → dropped (encrypted, nothing to read)
assistant, tool_use / server_tool_use / mcp_tool_use → tool_call (`input` as the arguments)
assistant, *_tool_result (web_search_tool_result, mcp_tool_result, …) → the observation of its
                           server tool call; an `*_error` content or `is_error` → is_error
other blocks (citations, container_upload, …) → dropped
"""

from typing import Any

from traces.transcripts.common import (
    Conversation,
    Loc,
    TranscriptError,
    as_list,
    as_object,
    join_texts,
    media_placeholder,
    optional_bool,
    parse_arguments,
    parts_text,
    required_text,
)

TOOL_USES = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


def convert(messages: list[Any]) -> Conversation:
    conversation = Conversation()
    for position, raw in enumerate(messages):
        loc: Loc = (position,)
        message = as_object(raw, loc, "a message")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise TranscriptError(
                (*loc, "role"),
                "missing"
                if role is None
                else f"unknown role {role!r}; expected user or assistant (the system prompt is "
                "not a message in the Messages API: put it in metadata)",
            )
        content = message.get("content")
        content_loc: Loc = (*loc, "content")
        if isinstance(content, str) or content is None:
            blocks: list[Any] = [{"type": "text", "text": content or ""}]
        else:
            blocks = as_list(content, content_loc, "content blocks")
        if role == "user":
            _user(conversation, blocks, content_loc, whole=isinstance(content, str))
        else:
            _assistant(conversation, blocks, content_loc)
    return conversation.finish()


def _user(conversation: Conversation, blocks: list[Any], loc: Loc, *, whole: bool) -> None:
    texts: list[str] = []
    text_loc: Loc = loc
    for position, raw in enumerate(blocks):
        block_loc: Loc = loc if whole else (*loc, position)
        block = as_object(raw, block_loc, "a content block")
        kind = block.get("type")
        if kind == "tool_result":
            _flush_user(conversation, texts, text_loc)
            texts = []
            conversation.tool_result(
                call_id=required_text(block, "tool_use_id", block_loc),
                output=parts_text(block.get("content"), (*block_loc, "content")),
                loc=block_loc,
                id_loc=(*block_loc, "tool_use_id"),
                is_error=True if optional_bool(block, "is_error", block_loc) else None,
                what="tool_use",
            )
            continue
        if not texts:
            text_loc = block_loc
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif (placeholder := media_placeholder(block)) is not None:
            texts.append(placeholder)
    _flush_user(conversation, texts, text_loc)


def _flush_user(conversation: Conversation, texts: list[str], loc: Loc) -> None:
    if texts:
        conversation.user_text(join_texts(texts), loc)


def _assistant(conversation: Conversation, blocks: list[Any], loc: Loc) -> None:
    texts: list[str] = []
    text_loc: Loc = loc
    for position, raw in enumerate(blocks):
        block_loc: Loc = (*loc, position)
        block = as_object(raw, block_loc, "a content block")
        kind = block.get("type")
        if kind == "text":
            if not texts:
                text_loc = block_loc
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            continue
        # Any other block ends a run of text: what was said so far comes before it.
        conversation.assistant_text(join_texts(texts), text_loc)
        texts = []
        if kind == "thinking" and isinstance(block.get("thinking"), str):
            conversation.reasoning(block["thinking"], block_loc)
        elif kind in TOOL_USES:
            conversation.tool_call(
                call_id=required_text(block, "id", block_loc),
                tool=required_text(block, "name", block_loc),
                arguments=parse_arguments(block.get("input")),
                loc=block_loc,
            )
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            _server_tool_result(conversation, block, block_loc)
    conversation.assistant_text(join_texts(texts), text_loc)


def _server_tool_result(conversation: Conversation, block: dict[str, Any], loc: Loc) -> None:
    """A server tool's result (web search, code execution, MCP) sits in the assistant turn."""
    content = block.get("content")
    failed = optional_bool(block, "is_error", loc) or (
        isinstance(content, dict) and str(content.get("type", "")).endswith("_error")
    )
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" for b in content
    ):
        content = parts_text(content, (*loc, "content"))
    conversation.tool_result(
        call_id=required_text(block, "tool_use_id", loc),
        output=content,
        loc=loc,
        id_loc=(*loc, "tool_use_id"),
        is_error=True if failed else None,
        what="server tool use",
    )
