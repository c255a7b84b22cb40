"""What a transcript looks like, so one sent under the wrong `format` is refused, not misread.

Each converter reads the fields of its own format and drops what it does not know (other
content block types, other fields): an Anthropic transcript sent as `openai` would be stored as
its user text and final answer, its tool calls gone, and answered 201. So before converting,
the messages are scanned for what belongs to one format only and that the named format's
converter would drop or misread: the first such thing is refused (422) with where it is and the
format it belongs to. Text-only transcripts look alike in all three formats and pass.
"""

from collections.abc import Iterator
from typing import Any

from traces.transcripts.common import Loc, TranscriptError

NAMES = {
    "openai": "OpenAI Chat Completions",
    "openai-responses": "OpenAI Responses",
    "anthropic": "Anthropic Messages",
}
# Content blocks only the Anthropic Messages API has (and `*_tool_result`: server tools).
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "mcp_tool_use"}
)
# Content parts only the Responses API has (its text parts: the others read "text" only).
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "summary_text", "reasoning_text"})
# Items only the Responses API has (messages share "role" / "content" with the others).
_RESPONSES_ITEMS = frozenset({"reasoning", "item_reference", "mcp_list_tools", "compaction"})


def _marks(message: dict[str, Any], loc: Loc) -> Iterator[tuple[Loc, str, str]]:
    """(where, format, what) for each part of `message` that only one format has."""
    kind = message.get("type")
    if isinstance(kind, str) and (
        kind in _RESPONSES_ITEMS or kind.endswith(("_call", "_call_output"))
    ):
        yield (*loc, "type"), "openai-responses", f"an item of type '{kind}'"
    role = message.get("role")
    if role in ("tool", "function"):
        yield (*loc, "role"), "openai", f"a message of role '{role}'"
    for key in ("tool_calls", "function_call"):
        if message.get(key) not in (None, []):
            yield (*loc, key), "openai", f"'{key}'"
    content = message.get("content")
    for position, part in enumerate(content if isinstance(content, list) else []):
        part_type = part.get("type") if isinstance(part, dict) else None
        if not isinstance(part_type, str):
            continue
        where = (*loc, "content", position, "type")
        if part_type in _ANTHROPIC_BLOCKS or part_type.endswith("_tool_result"):
            yield where, "anthropic", f"a '{part_type}' block"
        elif part_type in _RESPONSES_PARTS:
            yield where, "openai-responses", f"an '{part_type}' part"


def refuse_foreign_shape(format: str, messages: list[Any]) -> None:
    """Raise a TranscriptError at the first part of `messages` that belongs to another format."""
    for position, message in enumerate(messages):
        if not isinstance(message, dict):
            continue  # the converter names what is wrong with it
        for where, shape, what in _marks(message, (position,)):
            if shape != format:
                raise TranscriptError(
                    where,
                    f"{what} belongs to {NAMES[shape]} transcripts, which format '{format}' "
                    f"({NAMES[format]}) would misread: this transcript looks like format "
                    f"'{shape}'",
                )
