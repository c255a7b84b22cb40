"""Agent transcripts (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) read into
the native trace body that POST /api/v1/traces takes, so a logged conversation imports as is.

One module per format turns the `messages` into steps (`Conversation`); this module adds the
trace's fields around them and reports every problem at the message (and field) it comes from,
as pydantic validation errors, so the API answers them like any other 422.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from traces.transcripts import anthropic, openai, openai_responses, shapes
from traces.transcripts.common import Conversation, Loc, TranscriptError, loc_text

Format = Literal["openai", "openai-responses", "anthropic"]
CONVERTERS: dict[str, Callable[[list[Any]], Conversation]] = {
    "openai": openai.convert,
    "openai-responses": openai_responses.convert,
    "anthropic": anthropic.convert,
}
# TraceIn's limit on `task`; a task taken from a long opening message is cut to it (the whole
# message stays in the first step).
TASK_MAX_CHARS = 20000


@dataclass(frozen=True)
class NativeTrace:
    """The native body and, for each of its steps, where in `messages` it came from."""

    body: dict[str, Any]
    origins: Sequence[Loc]
    task_origin: Loc | None

    def relocate(self, error: ValidationError) -> ValidationError:
        """Errors of the native body, pointed at the messages (and fields) they come from."""
        details: list[InitErrorDetails] = []
        for e in error.errors(include_url=False):
            loc, msg = tuple(e["loc"]), e["msg"]
            if loc[:1] == ("steps",) and len(loc) > 1 and isinstance(loc[1], int):
                origin = self.origins[loc[1]]
                field = ".".join(str(p) for p in loc[2:])
                msg = f"{loc_text(origin)}: {field + ': ' if field else ''}{msg}"
                loc = ("messages", *origin)
            elif loc == ("steps",):
                loc, msg = ("messages",), f"messages: {msg} (counting the steps they convert to)"
            elif loc == ("task",) and self.task_origin is not None:
                msg = f"{loc_text(self.task_origin)}: task (taken from it): {msg}"
                loc = ("messages", *self.task_origin)
            details.append(_error(loc, msg, e["type"], e.get("input")))
        return ValidationError.from_exception_data(error.title, details)


def native_trace(*, format: str, messages: list[Any], header: dict[str, Any]) -> NativeTrace:
    """The native trace body of a transcript; `header` holds the trace fields given with it.

    Raises a ValidationError located in `messages` when the transcript cannot be read.
    """
    try:
        shapes.refuse_foreign_shape(format, messages)
        conversation = CONVERTERS[format](messages)
    except TranscriptError as error:
        raise ValidationError.from_exception_data(
            "TraceImportIn", [_error(("messages", *error.loc), str(error), "transcript", None)]
        ) from None
    task, task_origin = header.get("task"), None
    if task is None:
        if not conversation.task:
            raise ValidationError.from_exception_data(
                "TraceImportIn",
                [_error(("task",), "no task given and no user text in messages to take it from")],
            )
        task, task_origin = _cut(conversation.task), conversation.task_origin
    steps = []
    for index, step in enumerate(conversation.steps):
        step["index"] = index
        step["context"] = {"task_goal": task, **step["context"]}
        steps.append(step)
    metadata: dict[str, Any] = {"transcript_format": format}
    if conversation.system:
        metadata["system_prompt"] = "\n\n".join(conversation.system)
    body = {
        **header,
        "task": task,
        "metadata": {**metadata, **header.get("metadata", {})},
        "steps": steps,
    }
    if conversation.final_answer:
        body["final_answer"] = conversation.final_answer
    return NativeTrace(body=body, origins=conversation.origins, task_origin=task_origin)


def _cut(task: str) -> str:
    return task if len(task) <= TASK_MAX_CHARS else task[: TASK_MAX_CHARS - 1] + "…"


def _error(loc: Loc, msg: str, kind: str = "transcript", value: Any = None) -> InitErrorDetails:
    return InitErrorDetails(type=PydanticCustomError(kind, msg), loc=loc, input=value)


__all__ = ["CONVERTERS", "Format", "NativeTrace", "TranscriptError", "native_trace"]
