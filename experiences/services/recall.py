"""Hybrid recall: rule pre-filter in SQL, vector ranking in pgvector, then explainable scoring.

score = similarity × decay × environment × evidence, each part returned to the caller:

* similarity — cosine similarity between the query (task + intent) and the experience (its
  source task + advice), from the HNSW index (iterative scan keeps filtered results full).
* decay — 0.5 ** (age / half-life), age since the last evidence; half-life 30 days for success
  strategies, 90 for failure lessons (settings).
* environment — 1 when the environments overlap or either is unknown; HINDSIGHT_RECALL_ENV_MISMATCH
  (0.6) when both are known and disjoint; such items are flagged `environment_match: false`.
* evidence — human status (approved ×1.1, promoted ×1.2) × votes (1 + 0.05 per net vote, within
  0.5–1.5) × support (1 + 0.1·log2(support count)).
"""

import math
import time
from dataclasses import dataclass, field
from functools import lru_cache

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from pgvector.django import CosineDistance

from experiences.embeddings import get_embedder
from experiences.models import Experience, RecallLog
from experiences.services.warnings import WarningItem, warnings_for_tools
from traces.errors import InvalidInput, NotFound
from traces.models import ApiKey, Project

STATUS_BONUS = {"approved": 1.1, "promoted": 1.2}


@dataclass(frozen=True)
class RecallQuery:
    task: str
    task_type: str | None = None
    intent: str | None = None
    environment: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    agent: str | None = None
    user: str | None = None
    k: int = 5
    include_candidates: bool = False
    include_warnings: bool = True


@dataclass(frozen=True)
class RecallItem:
    experience: Experience
    score: float
    score_parts: dict[str, float]
    environment_match: bool | None


@dataclass(frozen=True)
class RecallResult:
    log: RecallLog
    items: list[RecallItem]
    prompt_block: str
    warnings: list[WarningItem]


def decay_factor(*, age_days: float, polarity: str) -> float:
    half_life = (
        settings.HINDSIGHT_RECALL_FAILURE_HALF_LIFE_DAYS
        if polarity == Experience.Polarity.FAILURE
        else settings.HINDSIGHT_RECALL_HALF_LIFE_DAYS
    )
    return 0.5 ** (max(age_days, 0.0) / half_life)


def environment_match(asked: list[str], experience_env: list[str]) -> bool | None:
    if not asked or not experience_env:
        return None  # unknown on one side: neither confirmed nor contradicted
    return bool(set(asked) & set(experience_env))


def evidence_factor(experience: Experience) -> float:
    votes = min(1.5, max(0.5, 1 + 0.05 * (experience.upvotes - experience.downvotes)))
    support = 1 + 0.1 * math.log2(max(experience.support_count, 1))
    return STATUS_BONUS.get(experience.status, 1.0) * votes * support


def score_parts(
    experience: Experience, *, similarity: float, asked_env: list[str], now
) -> tuple[dict[str, float], bool | None]:
    match = environment_match(asked_env, experience.environment)
    age_days = (now - experience.evidence_at).total_seconds() / 86400
    parts = {
        "similarity": round(similarity, 4),
        "decay": round(decay_factor(age_days=age_days, polarity=experience.polarity), 4),
        "environment": settings.HINDSIGHT_RECALL_ENV_MISMATCH if match is False else 1.0,
        "evidence": round(evidence_factor(experience), 4),
    }
    return parts, match


def entitled(queryset: QuerySet[Experience], query: RecallQuery) -> QuerySet[Experience]:
    """Scope entitlement: an unrestricted dimension, or one the asker's context matches."""
    env_ok = Q(scope_environments=[])
    if query.environment:
        env_ok |= Q(scope_environments__overlap=query.environment)
    agent_ok = Q(scope_agents=[])
    if query.agent:
        agent_ok |= Q(scope_agents__contains=[query.agent])
    user_ok = Q(scope_users=[])
    if query.user:
        user_ok |= Q(scope_users__contains=[query.user])
    return queryset.filter(env_ok, agent_ok, user_ok)


def recall_candidates(*, project: Project, query: RecallQuery) -> QuerySet[Experience]:
    statuses = [Experience.Status.APPROVED, Experience.Status.PROMOTED]
    if query.include_candidates:
        statuses.append(Experience.Status.CANDIDATE)
    queryset = Experience.objects.filter(
        project=project, status__in=statuses, embedding__isnull=False, merged_into__isnull=True
    )
    queryset = entitled(queryset, query)
    if query.tools:
        queryset = queryset.filter(tools__overlap=query.tools)
    if query.task_type:
        queryset = queryset.filter(task_type=query.task_type)
    return queryset


def _query_text(query: RecallQuery) -> str:
    return f"{query.task}\n{query.intent}" if query.intent else query.task


@lru_cache(maxsize=2048)
def _query_vector(text: str, model_name: str) -> tuple[float, ...]:
    # An agent recalls for the same task at every step of a session; the local model needs
    # ~13 ms per query on a 2-core machine without VNNI, a cache hit nothing. Keyed by model
    # name so a model change never serves a stale vector.
    (vector,) = get_embedder().embed([text])
    return tuple(vector)


def experience_recall(
    *, project: Project, query: RecallQuery, api_key: ApiKey | None = None
) -> RecallResult:
    started = time.perf_counter()
    vector = list(_query_vector(_query_text(query), get_embedder().model_name))
    limit = max(settings.HINDSIGHT_RECALL_CANDIDATES, query.k)
    rows = list(
        recall_candidates(project=project, query=query)
        .annotate(distance=CosineDistance("embedding", vector))
        .defer("embedding")
        .order_by("distance")[:limit]
    )
    now = timezone.now()
    items = []
    for experience in rows:
        similarity = 1 - experience.distance
        if similarity < settings.HINDSIGHT_RECALL_MIN_SIMILARITY:
            continue
        parts, match = score_parts(
            experience, similarity=similarity, asked_env=query.environment, now=now
        )
        score = math.prod(parts.values())
        items.append(RecallItem(experience, round(score, 4), parts, match))
    items.sort(key=lambda item: item.score, reverse=True)
    items = items[: query.k]
    warnings = (
        warnings_for_tools(project=project, tools=query.tools) if query.include_warnings else []
    )
    block = prompt_block(items, query)
    with transaction.atomic():
        # The recall log is bookkeeping on the hot path: do not wait for its WAL flush (a crash
        # may lose the last few log rows, never an experience or a label).
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        log = RecallLog.objects.create(
            project=project,
            api_key=api_key,
            query={k: v for k, v in query.__dict__.items()},
            returned=[
                {"experience_id": i.experience.pk, "score": i.score, "rank": n}
                for n, i in enumerate(items)
            ],
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        if items:
            Experience.objects.filter(pk__in=[i.experience.pk for i in items]).update(
                last_recalled_at=now
            )
    return RecallResult(log=log, items=items, prompt_block=block, warnings=warnings)


def prompt_block(items: list[RecallItem], query: RecallQuery) -> str:
    """Ready to inject after the tool descriptions and before the user's input."""
    if not items:
        return ""
    lines = [
        "Experience from earlier runs (hindsight). Use it as advice on how to use the tools "
        "above; check it fits this task before following it."
    ]
    for item in items:
        experience = item.experience
        prefix = (
            "Lesson from a failure: " if experience.polarity == Experience.Polarity.FAILURE else ""
        )
        caveat = ""
        if item.environment_match is False:
            caveat = (
                f" (learned on {', '.join(experience.environment)}, not on "
                f"{', '.join(query.environment)}: verify it applies here)"
            )
        lines.append(f"- {prefix}{experience.advice}{caveat}")
    return "\n".join(lines)


def _vote_counts(helpful: list[int], unhelpful: list[int]) -> dict[int, tuple[int, int]]:
    counts = {i: (1, 0) for i in helpful}
    counts.update({i: (0, 1) for i in unhelpful})
    return counts


def recall_feedback(
    *, project: Project, recall_id: int, helpful: list[int], unhelpful: list[int]
) -> RecallLog:
    """Record which returned items helped. Sending feedback again replaces the earlier one:
    votes move by the difference."""
    with transaction.atomic():
        log = RecallLog.objects.select_for_update().filter(project=project, pk=recall_id).first()
        if log is None:
            raise NotFound(f"recall {recall_id} not found")
        returned = {item["experience_id"] for item in log.returned}
        foreign = sorted((set(helpful) | set(unhelpful)) - returned)
        if foreign:
            raise InvalidInput(f"experiences {foreign} were not returned by recall {recall_id}")
        if set(helpful) & set(unhelpful):
            raise InvalidInput("an experience cannot be both helpful and unhelpful")
        before, after = _vote_counts(log.helpful, log.unhelpful), _vote_counts(helpful, unhelpful)
        for experience_id in set(before) | set(after):
            up = after.get(experience_id, (0, 0))[0] - before.get(experience_id, (0, 0))[0]
            down = after.get(experience_id, (0, 0))[1] - before.get(experience_id, (0, 0))[1]
            if up or down:
                Experience.objects.filter(pk=experience_id, project=project).update(
                    upvotes=F("upvotes") + up, downvotes=F("downvotes") + down
                )
        log.helpful, log.unhelpful = sorted(set(helpful)), sorted(set(unhelpful))
        log.feedback_at = timezone.now()
        log.save(update_fields=["helpful", "unhelpful", "feedback_at"])
    return log
