"""What a reviewer is given and what it must return (also the LLM's JSON schema)."""

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

Label = Literal["necessary", "redundant", "misleading", "failed"]


@dataclass(frozen=True)
class StepView:
    index: int
    kind: str
    tool: str
    arguments: Any
    observation: str  # the stored summary
    observation_raw: str
    is_error: bool
    error_type: str
    content: str
    agent: str
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TraceView:
    id: int
    task: str
    task_type: str
    intent: str
    agent: str
    environment: list[str]
    outcome: str
    feedback: str
    final_answer: str
    duration_ms: int | None


@dataclass(frozen=True)
class Window:
    kind: Literal["full", "local"]
    trigger: str
    start: int  # step index, inclusive
    end: int


@dataclass(frozen=True)
class ReviewRequest:
    trace: TraceView
    steps: list[StepView]  # the window's steps, in order
    window: Window
    prompt: str  # the compressed trajectory the reviewer reads


class StepJudgement(BaseModel):
    index: int = Field(description="the step index, as given in the trajectory")
    label: Label
    reason: str = Field(description="one short sentence: why this label")
    confidence: float = Field(ge=0, le=1)


class ReviewTemplate(BaseModel):
    goal: str = Field(description="the task's goal in one sentence")
    scene_summary: str = Field(
        default="",
        description="the informative request in 100-150 characters: no greetings or "
        "pleasantries, identifiers and entities kept (what a similar future task would say)",
    )
    execution_path: list[str] = Field(description="the steps that mattered, in order, short")
    effective_steps: list[int]
    ineffective_steps: list[int]
    key_decisions: list[str]
    improvements: list[str]
    experience: str = Field(
        description="one reusable experience in the second person: 'When you …, first …'"
    )
    strategy: str = Field(
        default="",
        description="what worked, as tool-usage steps in order (empty if nothing worked)",
    )
    pitfall: str = Field(
        default="",
        description="where it went wrong: the step to avoid and what it led to (empty if "
        "nothing went wrong)",
    )
    worth_reference: bool = Field(description="is this trajectory worth using as a reference?")
    labels: list[StepJudgement]


@dataclass(frozen=True)
class ReviewOutcome:
    request: ReviewRequest
    template: ReviewTemplate
    reviewer: Literal["llm", "heuristic"]
    model: str
    prompt_version: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int


class InvalidReview(Exception):
    """A reviewer's answer that cannot be applied (bad JSON, unknown or missing steps)."""


def check_labels_cover_window(template: ReviewTemplate, request: ReviewRequest) -> None:
    expected = {s.index for s in request.steps}
    given = [j.index for j in template.labels]
    unknown = sorted(set(given) - expected)
    missing = sorted(expected - set(given))
    duplicated = sorted({i for i in given if given.count(i) > 1})
    problems = []
    if unknown:
        problems.append(f"labels for steps that do not exist: {unknown}")
    if missing:
        problems.append(f"no label for steps {missing}")
    if duplicated:
        problems.append(f"several labels for steps {duplicated}")
    if problems:
        raise InvalidReview("; ".join(problems))
