"""Shapes of the experience API."""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import Field, field_validator

from core.inputs import BIGINT_MAX, BodyIn, StrictIn
from experiences.services.warnings import WarningItem  # the API answers it as it is


class SceneOut(Schema):
    task_type: str
    tools: list[str]
    environment: list[str]
    intent: str
    agent: str


class ScopeOut(Schema):
    is_global: bool
    environments: list[str]
    agents: list[str]
    users: list[str]


class EvidenceOut(Schema):
    support_count: int
    success_count: int
    failure_count: int
    upvotes: int
    downvotes: int


class SourceOut(Schema):
    trace_id: int
    external_id: str
    review_id: int | None
    step_indexes: list[int]


class VersionOut(Schema):
    version: int
    advice: str
    scene: dict[str, Any]
    path: list[Any]
    source: str
    reason: str
    created_at: datetime


class ExperienceOut(Schema):
    id: int
    advice: str
    kind: str  # episode (one run), workflow or insight (a task family's)
    # The run with its literal values, served only when the very same case comes again.
    replay: str
    # The step the lesson forbids and why ({} when nothing was blamed): index, tool, evidence,
    # consequence, reason, effect (traces.review.heuristic.blame).
    blame: dict[str, Any]
    scene: SceneOut
    polarity: str
    status: str
    source: str
    scope: ScopeOut
    path: list[Any]
    sources: list[SourceOut]
    evidence: EvidenceOut
    version: int
    embedding_model: str
    last_recalled_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_scene(obj) -> dict[str, Any]:
        return {
            "task_type": obj.task_type,
            "tools": obj.tools,
            "environment": obj.environment,
            "intent": obj.intent,
            "agent": obj.agent,
        }

    @staticmethod
    def resolve_scope(obj) -> dict[str, Any]:
        return {
            "is_global": obj.is_global,
            "environments": obj.scope_environments,
            "agents": obj.scope_agents,
            "users": obj.scope_users,
        }

    @staticmethod
    def resolve_evidence(obj) -> dict[str, int]:
        return {
            "support_count": obj.support_count,
            "success_count": obj.success_count,
            "failure_count": obj.failure_count,
            "upvotes": obj.upvotes,
            "downvotes": obj.downvotes,
        }

    @staticmethod
    def resolve_sources(obj) -> list[dict[str, Any]]:
        return [
            {
                "trace_id": s.trace_id,
                "external_id": s.trace.external_id,
                "review_id": s.review_id,
                "step_indexes": s.step_indexes,
            }
            for s in obj.sources.all()
        ]


class ExperienceDetailOut(ExperienceOut):
    versions: list[VersionOut]

    @staticmethod
    def resolve_versions(obj) -> list[Any]:
        return list(obj.versions.all())


class ExperienceListOut(Schema):
    items: list[ExperienceOut]
    next_cursor: str | None


class FailurePatternOut(Schema):
    id: int
    tool: str
    argument_shape: dict[str, str]
    error_signature: str
    instead: str
    occurrences: int
    environment: list[str]
    agents: list[str]
    sources: list[Any]
    last_seen_at: datetime


class FailurePatternListOut(Schema):
    items: list[FailurePatternOut]
    next_cursor: str | None


# Request bodies derive from core.inputs.BodyIn: `null` in an optional field means absent.
class RecallIn(BodyIn):
    task: str = Field(min_length=1, max_length=20000)
    task_type: Literal["query", "operation", "analysis", "other"] | None = None
    intent: str | None = Field(default=None, max_length=500)
    environment: list[str] = Field(default_factory=list, max_length=20)
    tools: list[str] = Field(default_factory=list, max_length=200)
    agent: str | None = Field(default=None, max_length=200)
    user: str | None = Field(default=None, max_length=200)
    k: int = Field(default=5, ge=1, le=50)
    include_candidates: bool = False
    include_warnings: bool = True

    @field_validator("environment")
    @classmethod
    def lower_case_tags(cls, tags: list[str]) -> list[str]:
        return [t.strip().lower() for t in tags if t.strip()]


class RecallItemOut(Schema):
    experience_id: int
    advice: str  # the strategy: placeholders, never another run's literal values
    kind: Literal["episode", "workflow", "insight"]
    polarity: str
    support: int  # runs it rests on
    # The very same case as the query (it names the item's identifiers, or asks nearly the same):
    # then `replay` is that run with its literal values, and the prompt block serves it.
    same_instance: bool
    replay: str
    sources: list[str]  # external ids of the (first five) runs it came from
    status: str
    score: float
    score_parts: dict[str, float]
    environment_match: bool | None
    environment: list[str]
    tools: list[str]
    path: list[Any]


class RecallOut(Schema):
    id: int
    items: list[RecallItemOut]
    prompt_block: str
    warnings: list[WarningItem]


ExperienceId = Annotated[int, Field(ge=1, le=BIGINT_MAX)]


class RecallFeedbackIn(StrictIn):
    helpful: list[ExperienceId] = Field(default_factory=list)
    unhelpful: list[ExperienceId] = Field(default_factory=list)


class RecallFeedbackOut(Schema):
    id: int
    helpful: list[int]
    unhelpful: list[int]


class WarningsIn(BodyIn):
    tool: str = Field(min_length=1, max_length=200)
    arguments: Any = None
    task: str | None = None
    environment: list[str] = Field(default_factory=list, max_length=20)
    agent: str | None = None


class WarningsOut(Schema):
    warnings: list[WarningItem]
