"""What a reviewer is given and what it must return (also the LLM's JSON schema)."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from traces.review.command_effects import call_verdict
from traces.review.tool_effects import ToolEffect, tool_effect

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


# A run's outcomes that count as its task done: a partial result is still a result to learn a
# strategy from. The one definition; the review and the distillation read it.
SUCCEEDED_OUTCOMES = frozenset({"success", "partial"})


def counts_as_success(outcome: str) -> bool:
    """Whether a run with this outcome counts as a success (an unknown outcome proves none)."""
    return outcome in SUCCEEDED_OUTCOMES


# A run's outcomes that say something went wrong: a partial result has a lesson as well as a
# strategy. The one definition; the review's triggers and its blame read it.
WENT_WRONG_OUTCOMES = frozenset({"failure", "partial"})


def went_wrong(outcome: str) -> bool:
    """Whether a run with this outcome has a lesson to teach (an unknown outcome proves none)."""
    return outcome in WENT_WRONG_OUTCOMES


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
    # What the project knows of each tool of the run (traces.services.tool_profiles); a tool
    # missing here is judged by its name.
    tool_effects: Mapping[str, ToolEffect] = field(default_factory=dict)
    # Every tool the project knows, the run's or not (what the agent could have done).
    project_tools: Mapping[str, ToolEffect] = field(default_factory=dict)

    def effect(self, tool: str) -> ToolEffect:
        return self.tool_effects.get(tool) or tool_effect(tool)

    def call_effect(self, step: "StepView") -> ToolEffect:
        """The effect of one call (a tool that commits with one argument navigates with the
        others: tool_effects.ToolEffect.of_call; a command line or a SQL statement is judged by
        what it ran, traces.review.command_effects)."""
        from traces.review.scene import argument_summary  # scene reads StepView from here

        effect = self.effect(step.tool).of_call(argument_summary(step.arguments))
        return effect.of_command(*call_verdict(step.tool, step.arguments))


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
    replay: str = Field(
        default="",
        description="the same run with its literal values (ids, names), for when the very same "
        "case comes again: its calls in order and what went wrong",
    )
    blamed_step: int | None = Field(
        default=None,
        description="the step index the lesson forbids (null when nothing went wrong); never a "
        "read-only look-up whose result the run used",
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
