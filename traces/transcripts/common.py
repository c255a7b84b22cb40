"""What every transcript format shares: the step builder, text of content parts, arguments,
failed-output detection, and errors that name the message (and field) they come from."""

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Where something is inside the import body's `messages`: (3, "tool_calls", 0, "id").
Loc = tuple[int | str, ...]


def loc_text(loc: Loc) -> str:
    """`messages[3].tool_calls[0].id`: how people write a path into a JSON body."""
    text = "messages"
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


class TranscriptError(ValueError):
    """A transcript that cannot be read; `loc` is inside `messages`."""

    def __init__(self, loc: Loc, message: str) -> None:
        super().__init__(f"{loc_text(loc)}: {message}")
        self.loc = loc


def as_object(value: Any, loc: Loc, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TranscriptError(loc, f"expected {what} (a JSON object), got {_json_type(value)}")
    return value


def as_list(value: Any, loc: Loc, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TranscriptError(loc, f"expected a list of {what}, got {_json_type(value)}")
    return value


def required_text(item: dict[str, Any], key: str, loc: Loc) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise TranscriptError((*loc, key), "missing" if value in (None, "") else "not a string")
    return value


def optional_bool(item: dict[str, Any], key: str, loc: Loc) -> bool | None:
    """A flag that may be absent (or null); anything but true / false is refused, never read
    as false."""
    value = item.get(key)
    if value is not None and not isinstance(value, bool):
        raise TranscriptError((*loc, key), f"expected true or false, got {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------- content


# Parts that carry no text a reviewer can read become a placeholder, so a reader still sees that
# something was shown (an image, a file) at that point of the conversation.
_MEDIA = {
    "image": "[image]",
    "image_url": "[image]",
    "input_image": "[image]",
    "input_audio": "[audio]",
    "audio": "[audio]",
    "document": "[document]",
    "file": "[file]",
    "input_file": "[file]",
}


def media_placeholder(part: dict[str, Any]) -> str | None:
    """`[image]`, `[file: report.pdf]`, … for media parts; None for anything else."""
    kind = part.get("type")
    placeholder = _MEDIA.get(kind) if isinstance(kind, str) else None
    if placeholder is None:
        return None
    file = part.get("file")
    name = (file if isinstance(file, dict) else part).get("filename") or part.get("title")
    if isinstance(name, str) and name:
        return f"{placeholder[:-1]}: {name}]"
    return placeholder


_PLACEHOLDER_LINE = re.compile(r"\[(?:image|audio|document|file)(?:: [^\n]*)?\]")


def without_placeholders(text: str) -> str:
    """The text a person typed, without the lines standing for media parts."""
    lines = text.split("\n")
    return "\n".join(line for line in lines if not _PLACEHOLDER_LINE.fullmatch(line)).strip()


def join_texts(texts: Sequence[str]) -> str:
    return "\n".join(t for t in texts if t)


def parts_text(content: Any, loc: Loc, *, text_types: frozenset[str] = frozenset({"text"})) -> str:
    """Text of a content that is a string, null or a list of parts (strings or {"type", ...}).

    Text parts give their text, refusals are marked, media parts give a placeholder, other parts
    are dropped.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for position, part in enumerate(as_list(content, loc, "content parts")):
        if isinstance(part, str):
            texts.append(part)
            continue
        part = as_object(part, (*loc, position), "a content part")
        kind = part.get("type")
        if kind in text_types and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(f"[refusal] {part['refusal']}")
        elif (placeholder := media_placeholder(part)) is not None:
            texts.append(placeholder)
    return join_texts(texts)


def parse_arguments(raw: Any) -> Any:
    """Tool arguments as the SDKs log them: a JSON string (kept as text when it is not JSON)."""
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw, parse_constant=_not_json)
    except ValueError:
        return raw


def _not_json(constant: str) -> Any:
    # NaN / Infinity are Python's JSON extensions; PostgreSQL's jsonb refuses them.
    raise ValueError(f"{constant} is not JSON")


# ---------------------------------------------------------------------------- failed output

# The start of a tool output that reports a failure: "Error: …", "ERROR 1045 …", "fatal: …",
# "Traceback (most recent call last)", "ValueError: …". Only the start counts: an output that
# merely mentions an error somewhere (a log excerpt) is not a failed call.
_FAILED_START = re.compile(
    r"\s*(?:\[(?:error|fatal)\]|(?:fatal|exception)\s*:|(?:failed|failure)\b|"
    r"error(?:\s*:|\s+\d|\s+(?:executing|calling|running|while|occurred|during|in|from)\b)|"
    r"traceback \(most recent call last\))",
    re.IGNORECASE,
)
_ERROR_TYPE = re.compile(r"\s*([A-Z][A-Za-z0-9_.]*(?:Error|Exception|Fault)):")


def failure_of(output: Any) -> tuple[bool, str]:
    """(is_error, error_type) for output that obviously reports a failed call."""
    if isinstance(output, str):
        stripped = output.lstrip()
        if stripped.startswith("{"):
            try:
                parsed = json.loads(stripped)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                return _failure_of_object(parsed)
        typed = _ERROR_TYPE.match(output)
        if typed:
            return True, typed.group(1)[:200]
        return bool(_FAILED_START.match(output)), ""
    if isinstance(output, dict):
        return _failure_of_object(output)
    return False, ""


def _failure_of_object(output: dict[str, Any]) -> tuple[bool, str]:
    error = output.get("error")
    failed = (
        bool(error)
        or output.get("is_error") is True
        or output.get("success") is False
        or output.get("ok") is False
        or output.get("status") in ("error", "failed", "failure")
    )
    if not failed:
        return False, ""
    kind = (error.get("type") or error.get("code")) if isinstance(error, dict) else None
    return True, str(kind)[:200] if kind else ""


# ---------------------------------------------------------------------------- the builder


@dataclass
class Call:
    """A tool call waiting for its result."""

    step: dict[str, Any]
    loc: Loc
    result_loc: Loc | None = None


@dataclass
class Conversation:
    """A transcript read into native steps (without indexes yet), with where each came from."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    origins: list[Loc] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    task: str = ""
    task_origin: Loc = ()
    final_answer: str = ""
    _calls: dict[str, Call] = field(default_factory=dict)
    _latest_user_input: str = ""
    _answer_candidate: int | None = None

    def user_text(self, text: str, loc: Loc) -> None:
        text = text.strip()
        if not text:
            return
        if not self.task and (typed := without_placeholders(text)):
            self.task, self.task_origin = typed, loc
        self._latest_user_input = text
        self._add({"kind": "user_input", "content": text}, loc)

    def reasoning(self, text: str, loc: Loc) -> None:
        """The model's thinking (a reasoning summary, a thinking block): never the answer."""
        if text.strip():
            self._add({"kind": "llm_reasoning", "content": text.strip()}, loc)

    def assistant_text(self, text: str, loc: Loc) -> None:
        """What the assistant said; the last of it becomes the final answer if no call follows."""
        if text.strip():
            self._add({"kind": "llm_reasoning", "content": text.strip()}, loc)
            self._answer_candidate = len(self.steps) - 1

    def tool_call(self, *, call_id: Any, tool: str, arguments: Any, loc: Loc) -> None:
        step = {"kind": "tool_call", "tool": tool, "arguments": arguments}
        self._add(step, loc)
        self._answer_candidate = None
        if isinstance(call_id, str) and call_id:
            # A repeated id (some logs reuse them) points later results at the latest call.
            self._calls[call_id] = Call(step=step, loc=loc)

    def tool_result(
        self,
        *,
        call_id: str,
        output: Any,
        loc: Loc,
        id_loc: Loc,
        is_error: bool | None = None,
        what: str = "tool call",
    ) -> None:
        """The output of an earlier call; `is_error` None means: judge by the output."""
        call = self._calls.get(call_id)
        if call is None:
            raise TranscriptError(id_loc, f"no {what} with id '{call_id}' before it")
        if call.result_loc is not None:
            raise TranscriptError(
                id_loc, f"the {what} '{call_id}' already has a result ({loc_text(call.result_loc)})"
            )
        call.result_loc = loc
        detected, error_type = failure_of(output)
        call.step["observation"] = output
        call.step["is_error"] = detected if is_error is None else is_error
        if call.step["is_error"] and error_type:
            call.step["error_type"] = error_type

    def _add(self, step: dict[str, Any], loc: Loc) -> None:
        context = {"latest_user_input": self._latest_user_input} if self._latest_user_input else {}
        step["context"] = context
        self.steps.append(step)
        self.origins.append(loc)

    def finish(self) -> "Conversation":
        """The last thing the assistant said, with no tool call after it, is the final answer."""
        if self._answer_candidate is not None:
            position = self._answer_candidate
            self.final_answer = self.steps[position]["content"]
            del self.steps[position]
            del self.origins[position]
            self._answer_candidate = None
        return self
