"""What one span means to a trajectory, read from its attributes by a small table per convention.

Two conventions are understood, tried in this order:

* OpenTelemetry GenAI semantic conventions: `gen_ai.operation.name` says what the span is;
  `gen_ai.input.messages` / `gen_ai.output.messages` hold the chat (a JSON string or a structured
  value), `gen_ai.tool.*` the tool call.
* OpenInference (Arize; the LangChain / LlamaIndex / OpenAI Agents instrumentors):
  `openinference.span.kind`; `input.value` / `output.value`, `tool.name`, and the chat flattened
  as `llm.input_messages.<i>.message.role|content`.

A span of neither kind (HTTP client, database, plain function spans) maps to None: it is ignored.
Values are plain JSON-able Python (no NUL characters, no NaN): they go to jsonb and text columns.
"""

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from traces.schemas import OUTCOMES

Role = Literal["agent", "llm", "tool", "root"]
Attributes = Mapping[str, Any]

# Nesting kept when attribute values are turned into Python (deeper parts become text).
MAX_DEPTH = 32


@dataclass
class SpanFacts:
    """What a trajectory needs from one span; stored as JSON in the receive buffer."""

    role: Role
    convention: str
    agent: str = ""  # the agent that runs (agent spans)
    tool: str = ""
    arguments: Any = None
    result: Any = None  # a tool's result
    output_text: str = ""  # an LLM's answer; an agent's final answer
    requested_tools: list[str] = field(default_factory=list)  # tool calls an LLM asked for
    first_user_text: str = ""  # the opening user request seen by this span
    last_user_text: str = ""
    model: str = ""
    conversation_id: str = ""
    user: str = ""
    # hindsight.* attributes, any convention: an explicit outcome and environment tags
    outcome: str = ""
    environment: list[str] = field(default_factory=list)
    # from the span's status and exception events (filled by the receiver, not the convention)
    is_error: bool = False
    error_text: str = ""
    error_type: str = ""

    def as_json(self) -> dict[str, Any]:
        # vars, not asdict: clean copies every value already (asdict's deep copy doubled it).
        return clean(vars(self))


def storable_json(value: dict[str, Any]) -> str:
    """`value` as JSON text PostgreSQL stores: as it is when it has no NUL and no NaN (nearly
    always: one serialisation, no copy), else through `clean`."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(clean(value))
    return json.dumps(clean(value)) if "\\u0000" in text else text


# ---------------------------------------------------------------------------- attribute values


def clean(value: Any, depth: int = 0) -> Any:
    """JSON-able and storable: PostgreSQL refuses NUL in text and jsonb, and NaN in jsonb."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth >= MAX_DEPTH:
        return clean(json.dumps(value, default=str)[:10000])
    if isinstance(value, Mapping):
        return {clean(str(k)): clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v, depth + 1) for v in value]
    return clean(str(value))


def any_value(value: AnyValue, depth: int = 0) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        if depth >= MAX_DEPTH:
            return "[...]"
        return [any_value(v, depth + 1) for v in value.array_value.values]
    if kind == "kvlist_value":
        if depth >= MAX_DEPTH:
            return "{...}"
        return {kv.key: any_value(kv.value, depth + 1) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return f"<{len(value.bytes_value)} bytes>"
    return getattr(value, kind)


def attributes_dict(attributes: list[KeyValue] | Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in attributes}


def parsed(value: Any) -> Any:
    """A JSON string as what it encodes (instrumentations often send JSON as text); kept as the
    string when it nests deeper than MAX_DEPTH: later steps walk it recursively."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return value
        return value if _depth_over(decoded, MAX_DEPTH) else decoded
    return value


def _depth_over(value: Any, limit: int) -> bool:
    level = [value]
    for _ in range(limit + 1):
        level = [
            child
            for item in level
            if isinstance(item, dict | list)
            for child in (item.values() if isinstance(item, dict) else item)
        ]
        if not level:
            return False
    return True


def text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _string(attrs: Attributes, *keys: str) -> str:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
    return ""


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return []
    return [t.strip().lower() for t in value if isinstance(t, str) and t.strip()]


def _common(attrs: Attributes) -> dict[str, Any]:
    """hindsight.* attributes, read whatever the convention."""
    outcome = _string(attrs, "hindsight.outcome").lower()
    return {
        "outcome": outcome if outcome in OUTCOMES else "",
        "environment": _tags(attrs.get("hindsight.environment")),
    }


# ---------------------------------------------------------------------------- messages


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, Mapping):
        return ""
    if part.get("type", "text") in ("text", "output_text", "input_text"):
        return text(part.get("content", part.get("text", "")))
    return ""


def _message_text(message: Mapping[str, Any]) -> str:
    """A GenAI message's text parts (or its plain `content`, as older instrumentations send)."""
    parts = message.get("parts")
    if isinstance(parts, list):
        return "\n".join(t for t in (_part_text(p) for p in parts) if t)
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(t for t in (_part_text(p) for p in content) if t)
    return text(content)


def _messages(value: Any) -> list[Mapping[str, Any]]:
    value = parsed(value)
    if isinstance(value, Mapping):  # a single message, or {"messages": [...]}
        value = value.get("messages", [value])
    if not isinstance(value, list):
        return []
    return [m for m in value if isinstance(m, Mapping)]


def _user_texts(messages: list[Mapping[str, Any]]) -> list[str]:
    return [t for m in messages if m.get("role") == "user" and (t := _message_text(m).strip())]


def _tool_requests(messages: list[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for message in messages:
        for part in message.get("parts") or []:
            if isinstance(part, Mapping) and part.get("type") == "tool_call" and part.get("name"):
                names.append(text(part["name"]))
    return names


def _input_text(value: Any) -> str:
    """A task from an `input.value`: the text itself, or the usual fields of a JSON input."""
    value = parsed(value)
    if isinstance(value, Mapping):
        for key in ("input", "query", "question", "task", "prompt", "message"):
            if isinstance(value.get(key), str):
                return value[key]
        users = _user_texts(_messages(value))
        if users:
            return users[0]
    if isinstance(value, list):
        users = _user_texts(_messages(value))
        if users:
            return users[0]
    return text(value)


def _output_text(value: Any) -> str:
    value = parsed(value)
    if isinstance(value, Mapping):
        for key in ("output", "answer", "result", "content", "text"):
            if isinstance(value.get(key), str):
                return value[key]
    return text(value)


# ---------------------------------------------------------------------------- GenAI


# gen_ai.operation.name -> role. invoke_workflow counts only as the run of a whole trace (root).
GEN_AI_ROLES: dict[str, Role] = {
    "invoke_agent": "agent",
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "execute_tool": "tool",
}
GEN_AI_ROOT_ONLY: dict[str, Role] = {"invoke_workflow": "agent"}


def _strip_operation(name: str, operation: str) -> str:
    return name[len(operation) :].strip() if name.startswith(operation) else ""


def gen_ai_facts(name: str, attrs: Attributes, *, is_root: bool) -> SpanFacts | None:
    operation = _string(attrs, "gen_ai.operation.name")
    role = GEN_AI_ROLES.get(operation) or (GEN_AI_ROOT_ONLY.get(operation) if is_root else None)
    if role is None:
        return None
    inputs = _messages(attrs.get("gen_ai.input.messages"))
    outputs = _messages(attrs.get("gen_ai.output.messages"))
    users = _user_texts(inputs)
    facts = SpanFacts(
        role=role,
        convention="gen_ai",
        agent=_string(attrs, "gen_ai.agent.name", "gen_ai.workflow.name")
        or (_strip_operation(name, operation) if role == "agent" else ""),
        model=_string(attrs, "gen_ai.response.model", "gen_ai.request.model"),
        conversation_id=_string(attrs, "gen_ai.conversation.id"),
        first_user_text=users[0] if users else "",
        last_user_text=users[-1] if users else "",
        output_text="\n".join(t for t in (_message_text(m) for m in outputs) if t),
        requested_tools=_tool_requests(outputs),
        user=_string(attrs, "user.id", "enduser.id"),
        **_common(attrs),
    )
    if role == "tool":
        facts.tool = _string(attrs, "gen_ai.tool.name") or _strip_operation(name, operation)
        facts.arguments = parsed(attrs.get("gen_ai.tool.call.arguments"))
        facts.result = parsed(attrs.get("gen_ai.tool.call.result"))
    return facts


# ---------------------------------------------------------------------------- OpenInference


OPENINFERENCE_ROLES: dict[str, Role] = {"AGENT": "agent", "LLM": "llm", "TOOL": "tool"}
# A CHAIN is glue code, except as the root of a trace (LangChain's agent executor, a graph).
OPENINFERENCE_ROOT_ONLY: dict[str, Role] = {"CHAIN": "agent"}
_INDEXED = re.compile(r"^(\d+)\.(.+)$")


def indexed(attrs: Attributes, prefix: str) -> list[dict[str, Any]]:
    """A flattened list (`<prefix>.<i>.<suffix>`) as dicts keyed by suffix, in index order."""
    items: dict[int, dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attrs.items():
        if key.startswith(start) and (match := _INDEXED.match(key[len(start) :])):
            items.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [items[i] for i in sorted(items)]


def _oi_message_text(message: Mapping[str, Any]) -> str:
    if isinstance(message.get("message.content"), str):
        return message["message.content"]
    contents = sorted(
        (k, v)
        for k, v in message.items()
        if k.startswith("message.contents.") and k.endswith(".message_content.text")
    )
    return "\n".join(text(v) for _, v in contents)


def openinference_facts(name: str, attrs: Attributes, *, is_root: bool) -> SpanFacts | None:
    kind = _string(attrs, "openinference.span.kind").upper()
    role = OPENINFERENCE_ROLES.get(kind) or (OPENINFERENCE_ROOT_ONLY.get(kind) if is_root else None)
    if role is None:
        return None
    inputs = indexed(attrs, "llm.input_messages")
    outputs = indexed(attrs, "llm.output_messages")
    users = [t for m in inputs if m.get("message.role") == "user" and (t := _oi_message_text(m))]
    facts = SpanFacts(
        role=role,
        convention="openinference",
        agent=_string(attrs, "agent.name") or (name if role == "agent" else ""),
        model=_string(attrs, "llm.model_name"),
        conversation_id=_string(attrs, "session.id"),
        user=_string(attrs, "user.id"),
        **_common(attrs),
    )
    if role == "agent":
        facts.first_user_text = _input_text(attrs.get("input.value"))
        facts.output_text = _output_text(attrs.get("output.value"))
    elif role == "llm":
        facts.first_user_text = users[0] if users else ""
        facts.last_user_text = users[-1] if users else ""
        texts = [_oi_message_text(m) for m in outputs]
        facts.output_text = "\n".join(t for t in texts if t) or _output_text(
            attrs.get("output.value")
        )
        facts.requested_tools = [
            text(v)
            for m in outputs
            for k, v in sorted(m.items())
            if k.startswith("message.tool_calls.") and k.endswith(".tool_call.function.name")
        ]
    else:
        facts.tool = _string(attrs, "tool.name") or name
        facts.arguments = parsed(attrs.get("input.value", attrs.get("tool.parameters")))
        facts.result = parsed(attrs.get("output.value"))
    return facts


# ---------------------------------------------------------------------------- the seam


def root_facts(attrs: Attributes) -> SpanFacts:
    """A trace's root of no GenAI kind (e.g. the server span around an agent run)."""
    return SpanFacts(role="root", convention="", **_common(attrs))


Mapper = Callable[..., SpanFacts | None]
# Tried in order; the first that recognises the span wins.
CONVENTIONS: list[Mapper] = [gen_ai_facts, openinference_facts]


def span_facts(name: str, attrs: Attributes, *, is_root: bool) -> SpanFacts | None:
    """The span's meaning for a trajectory, or None for a span of no GenAI kind."""
    for mapper in CONVENTIONS:
        facts = mapper(name, attrs, is_root=is_root)
        if facts is not None:
            return facts
    return None
