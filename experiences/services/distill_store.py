"""Storing what a review distilled, inside the review's transaction: its experiences (with
provenance, a first version and the contrast with other runs of the task) and its failure
patterns (upserted, each (trace, step) counted once)."""

from typing import Any

from django.db import connection
from django.utils import timezone
from psycopg.types.json import Jsonb

from experiences.embeddings import get_embedder
from experiences.models import Experience, ExperienceSource, FailurePattern
from experiences.services.distill_contrast import experiences_contrast
from experiences.services.distill_drafts import ExperienceDraft, PatternDraft
from experiences.services.families import family_join
from experiences.services.versions import version_record
from traces.models import Review, Trace
from traces.review.scene import task_key
from traces.review.types import counts_as_success

MAX_PATTERN_SOURCES = 20
# The counted patterns in one statement of arrays (the lists travel as JSON: arrays of arrays
# cannot be unnested by row): `bulk_update` built a CASE per row and column, 8 % of a review's
# time in the worker.
_PATTERNS_COUNT = """
    UPDATE experiences_failurepattern AS p SET occurrences = u.occurrences, sources = u.sources,
        environment = ARRAY(SELECT jsonb_array_elements_text(u.environment)),
        agents = ARRAY(SELECT jsonb_array_elements_text(u.agents)),
        instead = u.instead, last_seen_at = %s
    FROM unnest(%s::bigint[], %s::int[], %s::jsonb[], %s::jsonb[], %s::jsonb[], %s::text[])
        AS u(id, occurrences, sources, environment, agents, instead)
    WHERE p.id = u.id
"""


def _scene(trace: Trace) -> dict[str, Any]:
    return {
        "task_type": trace.task_type,
        "tools": list(trace.tools),
        "environment": list(trace.environment),
        "intent": trace.intent,
        "agent": trace.agent,
    }


def experiences_store(
    *, trace: Trace, reviews: list[Review], drafts: list[ExperienceDraft]
) -> list[Experience]:
    """Create the experiences of freshly applied reviews (inside the review's transaction);
    returns them, followed by the experiences of other runs their contrast changed (all of them
    are due for a dedup check)."""
    by_window = {(r.kind, r.window_start, r.window_end): r for r in reviews}
    model_name = get_embedder().model_name
    created = []
    for draft in drafts:
        review = by_window.get((draft.window.kind, draft.window.start, draft.window.end))
        experience = Experience(
            project_id=trace.project_id,
            **_scene(trace),
            task=trace.task,
            summary=draft.summary,
            request=draft.request,
            task_key=task_key(trace.task),
            keywords=draft.keywords,
            strategy=draft.strategy,
            pitfall=draft.pitfall,
            advice=draft.advice,
            path=draft.path,
            polarity=draft.polarity,
            replay=draft.replay,
            blame=draft.blame,
            calls=draft.calls,
            same_case_only=draft.same_case_only,
            source=draft.source,
            success_count=1 if counts_as_success(trace.outcome) else 0,
            failure_count=1 if trace.outcome == "failure" else 0,
            embedding=draft.embedding,
            embedding_model=model_name,
        )
        # Its family before it is stored: one INSERT, not an INSERT and an UPDATE (each new
        # row version of an experience is also a new entry in every index, the HNSW one too).
        family_join(experience)
        experience.save()
        ExperienceSource.objects.create(
            experience=experience,
            trace=trace,
            review=review,
            step_indexes=draft.step_indexes,
            labels=draft.labels,
        )
        version_record(
            experience, reason=f"distilled from the {draft.window.kind} review of trace {trace.pk}"
        )
        created.append(experience)
    changed = [other for experience in created for other in experiences_contrast(experience)]
    return created + [e for e in changed if e not in created]


def patterns_store(*, trace: Trace, drafts: list[PatternDraft]) -> list[FailurePattern]:
    """Upsert failure patterns; a (trace, step) already counted is not counted again."""
    if not drafts:
        return []
    FailurePattern.objects.bulk_create(
        [
            FailurePattern(
                project_id=trace.project_id,
                tool=d.tool,
                argument_shape=d.argument_shape,
                error_signature=d.error_signature,
                signature_hash=d.signature_hash,
                instead=d.instead,
                example_arguments=d.example_arguments,
                occurrences=0,
            )
            for d in drafts
        ],
        ignore_conflicts=True,  # another worker may create the same pattern concurrently
    )
    locked = {
        p.signature_hash: p
        for p in FailurePattern.objects.select_for_update().filter(
            project_id=trace.project_id, signature_hash__in=[d.signature_hash for d in drafts]
        )
    }
    counted: dict[int, FailurePattern] = {}
    now = timezone.now()
    for draft in drafts:
        pattern = locked[draft.signature_hash]
        source = {"trace_id": draft.trace_id, "index": draft.index}
        if source in pattern.sources:
            continue
        pattern.occurrences += 1
        pattern.sources = [source, *pattern.sources][:MAX_PATTERN_SOURCES]
        pattern.environment = sorted(set(pattern.environment) | set(trace.environment))
        pattern.agents = sorted(set(pattern.agents) | {trace.agent})
        if draft.instead and not pattern.instead:
            pattern.instead = draft.instead
        pattern.last_seen_at = now  # as save() would (auto_now)
        counted[pattern.pk] = pattern
    # One statement for all of them (a review's failures mostly recur: one per pattern before).
    if counted:
        rows = list(counted.values())
        with connection.cursor() as cursor:
            cursor.execute(
                _PATTERNS_COUNT,
                [
                    now,
                    [p.pk for p in rows],
                    [p.occurrences for p in rows],
                    [Jsonb(p.sources) for p in rows],
                    [Jsonb(p.environment) for p in rows],
                    [Jsonb(p.agents) for p in rows],
                    [p.instead for p in rows],
                ],
            )
    return list(locked.values())


def distillation_store(
    *,
    reviews: list[Review],
    drafts: list[ExperienceDraft],
    patterns: list[PatternDraft],
) -> list[Experience]:
    """Store what the freshly applied reviews distilled (inside their transaction)."""
    trace = reviews[0].trace  # locked and loaded by review_apply
    experiences = experiences_store(trace=trace, reviews=reviews, drafts=drafts)
    patterns_store(trace=trace, drafts=patterns)
    Trace.objects.filter(pk=trace.pk).update(experiences_derived_at=timezone.now())
    return experiences
