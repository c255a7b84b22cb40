"""Request and response shapes of the trajectory API."""

from datetime import datetime
from typing import Any, ClassVar, Literal

from django.conf import settings
from ninja import Schema
from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from core.inputs import BIGINT_MAX, INT_MAX, TOO_LARGE, BodyIn, StrictIn
from traces import transcripts
from traces.models.trajectories import Outcome
from traces.review.tool_effects import declarations_from

StepKind = Literal["user_input", "llm_reasoning", "tool_call", "system", "state_change"]
# Outcome is the model's choices (Trace.Outcome): a field of that type takes and shows their
# values, and its JSON schema lists them (the OpenAPI component "Outcome").
OUTCOMES: tuple[str, ...] = tuple(Outcome.values)
TaskType = Literal["query", "operation", "analysis", "other"]
Name = Field(min_length=1, max_length=200)


# Every request body derives from BodyIn (core/inputs.py): `null` in an optional field = absent.


class StepContextIn(BodyIn):
    model_config = ConfigDict(extra="allow")

    task_goal: str = ""
    subtask: str = ""
    latest_user_input: str = ""


class StepIn(StrictIn):
    index: int = Field(ge=0, le=INT_MAX)
    kind: StepKind
    agent: str | None = Field(default=None, max_length=200)
    tool: str = Field(default="", max_length=200)
    arguments: Any = None
    # The raw observation (text or JSON); a summary is derived unless observation_summary is given.
    observation: Any = None
    observation_summary: str | None = None
    is_error: bool = False
    error_type: str = Field(default="", max_length=200)
    content: str = ""
    context: StepContextIn | None = None
    started_at: datetime | None = None
    duration_ms: int | None = Field(default=None, ge=0, le=BIGINT_MAX)

    @model_validator(mode="after")
    def tool_calls_name_their_tool(self) -> "StepIn":
        if self.kind == "tool_call" and not self.tool:
            raise ValueError("a tool_call step needs a 'tool'")
        return self


def _check_unique_indexes(steps: list[StepIn]) -> list[StepIn]:
    seen: set[int] = set()
    for step in steps:
        if step.index in seen:
            raise ValueError(f"step index {step.index} appears more than once")
        seen.add(step.index)
    return steps


class ToolDeclarationIn(StrictIn):
    """A tool the agent had: what a lesson may forbid depends on whether it only reads
    (traces.review.tool_effects)."""

    name: str = Name
    description: str = Field(default="", max_length=2000)
    # true: it only reads (a look-up, a search); false: it changes state or commits.
    read_only: bool | None = None
    parameters: Any = None


class TraceHeaderIn(StrictIn):
    """The fields of a trajectory known when it starts."""

    external_id: str = Name
    agent: str = Name
    task: str = Field(min_length=1, max_length=20000)
    task_type: TaskType = "other"
    intent: str = Field(default="", max_length=500)
    environment: list[str] = Field(default_factory=list, max_length=20)
    session_id: str = Field(default="", max_length=200)
    user: str = Field(default="", max_length=200)
    started_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tools: list[ToolDeclarationIn] = Field(default_factory=list, max_length=500)

    @field_validator("environment")
    @classmethod
    def environment_tags_are_short_words(cls, tags: list[str]) -> list[str]:
        cleaned = []
        for tag in tags:
            tag = tag.strip().lower()
            if not tag or len(tag) > 100:
                raise ValueError("environment tags must be 1 to 100 characters")
            if tag not in cleaned:
                cleaned.append(tag)
        return cleaned


class TraceIn(TraceHeaderIn):
    """A complete trajectory in one request."""

    outcome: Outcome = Outcome.UNKNOWN
    ended_at: datetime | None = None
    feedback: str = ""
    final_answer: str = ""
    steps: list[StepIn] = Field(default_factory=list)

    @field_validator("steps", mode="before")
    @classmethod
    def steps_within_limit(cls, steps: Any) -> Any:
        # Counted before the steps are validated: an oversize trajectory is refused cheaply,
        # with 413 like an oversize body (hindsight_site/api.py maps TOO_LARGE).
        limit = settings.HINDSIGHT_MAX_STEPS
        if isinstance(steps, list) and len(steps) > limit:
            raise PydanticCustomError(
                TOO_LARGE,
                "at most {limit} steps per trajectory; got {count}",
                {"limit": limit, "count": len(steps)},
            )
        return steps

    @field_validator("steps")
    @classmethod
    def unique_step_indexes(cls, steps: list[StepIn]) -> list[StepIn]:
        return _check_unique_indexes(steps)

    @model_validator(mode="after")
    def ends_after_it_starts(self) -> "TraceIn":
        if self.started_at and self.ended_at and self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        return self


class TraceOpenIn(TraceHeaderIn):
    """Opens a trajectory that will be streamed step by step."""


class StepsAppendIn(StrictIn):
    steps: list[StepIn] = Field(min_length=1)

    @field_validator("steps")
    @classmethod
    def unique_indexes(cls, steps: list[StepIn]) -> list[StepIn]:
        return _check_unique_indexes(steps)


class TraceCompleteIn(StrictIn):
    outcome: Outcome
    ended_at: datetime | None = None
    feedback: str = ""
    final_answer: str = ""


class TraceBatchIn(BodyIn):
    # Items are validated one by one in the service, so one bad item (not even an object, or
    # with text that cannot be stored) does not fail the others.
    traces: list[Any] = Field(min_length=1)
    _unchecked_keys: ClassVar[frozenset[str]] = frozenset({"traces"})

    @field_validator("traces")
    @classmethod
    def within_batch_limit(cls, traces: list[Any]) -> list[Any]:
        limit = settings.HINDSIGHT_MAX_BATCH
        if len(traces) > limit:
            raise ValueError(f"at most {limit} trajectories per batch; got {len(traces)}")
        return traces


class TraceImportIn(StrictIn):
    """A transcript as an SDK logs it (`messages`), with the trace fields around it.

    Validating it converts the transcript (traces/transcripts/) into a native TraceIn; every
    problem is a validation error located in `messages`, so it is answered like any other 422.
    """

    format: transcripts.Format
    external_id: str = Name
    agent: str = Name
    outcome: Outcome
    # The opening user request when not given.
    task: str | None = Field(default=None, min_length=1, max_length=20000)
    task_type: TaskType = "other"
    intent: str = Field(default="", max_length=500)
    environment: list[str] = Field(default_factory=list, max_length=20)
    session_id: str = Field(default="", max_length=200)
    user: str = Field(default="", max_length=200)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    feedback: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    # The tool schemas sent with the conversation, as the SDK takes them (OpenAI Chat
    # Completions / Responses, Anthropic, MCP tools/list entries, or the native shape).
    tools: list[Any] = Field(default_factory=list, max_length=500)
    messages: list[Any] = Field(min_length=1)

    _trace: TraceIn = PrivateAttr()

    @model_validator(mode="after")
    def converts_to_a_trace(self) -> "TraceImportIn":
        try:
            header = self.model_dump(exclude={"format", "messages", "tools"})
            if self.tools:  # the SDK's schemas, as the native declarations
                header["tools"] = [
                    {"name": d.name, "description": d.description, "read_only": d.read_only}
                    for d in declarations_from(self.tools).values()
                ]
            native = transcripts.native_trace(
                format=self.format, messages=self.messages, header=header
            )
        except RecursionError:
            # A JSON string in a message (tool arguments, an output) nested deeper than the JSON
            # reader goes; one nested less deeply is refused by its location (too_deep).
            error = PydanticCustomError(
                "too_deep", "a JSON string in messages is nested too deep to read"
            )
            raise ValidationError.from_exception_data(
                type(self).__name__, [InitErrorDetails(type=error, loc=("messages",), input="...")]
            ) from None
        try:
            self._trace = TraceIn.model_validate(native.body)
        except ValidationError as error:
            raise native.relocate(error) from None
        return self

    @property
    def trace(self) -> TraceIn:
        return self._trace


# ---------------------------------------------------------------------------- responses


class TraceAcceptedOut(Schema):
    id: int
    external_id: str
    review_status: str
    is_complete: bool
    step_count: int


class BatchItemOut(Schema):
    external_id: str | None
    status: Literal["created", "duplicate", "conflict", "invalid"]
    id: int | None = None
    detail: Any = None


class BatchOut(Schema):
    results: list[BatchItemOut]


class StepOut(Schema):
    index: int
    agent: str
    kind: str
    tool: str
    arguments: Any
    content: str
    observation: str
    observation_raw: str
    is_observation_truncated: bool
    is_error: bool
    error_type: str
    started_at: datetime | None
    duration_ms: int | None
    context: dict[str, Any]
    label: str
    label_source: str
    label_reason: str
    label_confidence: float | None
    labelled_at: datetime | None
    label_version: int


class TraceSummaryOut(Schema):
    id: int
    external_id: str
    agent: str
    session_id: str
    user: str = Field(alias="user_ref")
    task: str
    task_type: str
    intent: str
    environment: list[str]
    tools: list[str]
    outcome: Outcome
    feedback: str
    final_answer: str
    started_at: datetime | None
    ended_at: datetime | None
    duration_ms: int | None
    is_complete: bool
    completed_at: datetime | None
    review_status: str
    review_status_reason: str
    step_count: int
    tool_call_count: int
    error_count: int
    metadata: dict[str, Any]
    created_at: datetime


class ReviewOut(Schema):
    id: int
    kind: str
    trigger: str
    window_start: int
    window_end: int
    reviewer: str
    is_heuristic: bool
    model: str
    prompt_version: str
    prompt_chars: int
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    goal: str
    execution_path: list[Any]
    effective_steps: list[int]
    ineffective_steps: list[int]
    key_decisions: list[Any]
    improvements: list[Any]
    experience: str
    is_reference_worthy: bool
    labels: dict[str, Any]
    created_at: datetime

    @staticmethod
    def resolve_is_heuristic(obj) -> bool:
        return obj.reviewer == "heuristic"


class TraceDetailOut(TraceSummaryOut):
    steps: list[StepOut]
    reviews: list[ReviewOut]


class TraceListOut(Schema):
    items: list[TraceSummaryOut]
    next_cursor: str | None
