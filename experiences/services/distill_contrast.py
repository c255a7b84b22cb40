"""Contrast: what a success and a failure of the same task teach each other (ExpeL's insight
from a success / failure pair), appended to each side's advice once."""

import re

from django.db import connection
from django.utils import timezone

from experiences.models import Experience, ExperienceSource, ExperienceVersion
from experiences.services.versions import version_of
from traces.review.heuristic.blame import ENDED

# The clauses a contrast appended: kept when a relabel rebuilds the rest of the advice.
# A clause's text may hold parentheses ("(each)") but never another sentence of the advice.
CONTRAST_CLAUSES = re.compile(
    r" (?:Do not|Instead,) (?:(?!\. (?:Do not|Instead,) )(?:[^()]|\([^()]*\)))*?"
    r"\((?:an earlier run of this task failed that way|that worked in another run of this task)"
    r"\)\."
    r"| Check [\w.-]+ against every part of the request before you [\w.-]+: it failed in an "
    r"earlier run of this task \(.*?\)\.(?= |$)"
)


# The changed rows in one statement of arrays: `bulk_update` built a CASE per row and column,
# half the contrast's time in the worker (as the labels' write, traces.review.service).
_CONTRASTED = """
    UPDATE experiences_experience AS e SET advice = u.advice, version = u.version, updated_at = %s
    FROM unnest(%s::bigint[], %s::text[], %s::int[]) AS u(id, advice, version)
    WHERE e.id = u.id
"""


def _contrast_clause(experience: Experience, other: Experience) -> str:
    """What the other run of the same task adds to this experience (ExpeL's insight from a
    success / failure pair): a success learns the failure's pitfall (to check the call, when
    the success made it too: a refused answer, a submit made too early), a failure the
    success's strategy. A failure blamed on the reply it ended on (only the outcome spoke
    against it, traces.review.heuristic.blame.ENDED) taught that it stopped short, not that its
    words were wrong."""
    if experience.polarity == Experience.Polarity.SUCCESS and other.blame.get("evidence") == ENDED:
        return (
            " Do not answer before every part of the request is done (an earlier run of this "
            "task failed that way)."
        )
    if experience.polarity == Experience.Polarity.SUCCESS and other.pitfall:
        blamed = other.blame.get("tool") or ""
        if blamed and blamed in {step.get("tool") for step in experience.path}:
            # The success made that call too (the answer, the purchase, the submit): "do not"
            # would forbid its own way; what failed was what the call rested on.
            consequence = other.blame.get("consequence") or "the run failed"
            return (
                f" Check {blamed} against every part of the request before you {blamed}: it "
                f"failed in an earlier run of this task ({consequence})."
            )
        return f" Do not {other.pitfall} (an earlier run of this task failed that way)."
    if experience.polarity == Experience.Polarity.FAILURE and other.strategy:
        return f" Instead, {other.strategy} (that worked in another run of this task)."
    return ""


def contradiction_resolved(advice: str, pitfall: str) -> str:
    """A failure's "do not X: …" where its contrast says X worked in another run of this task
    (the Subscribe click that failed for the field typed into before it): "X failed (…)", the
    way that worked after it. Applied again when a relabel rebuilds the advice."""
    phrase, _, consequence = pitfall.partition(": ")
    worked = [c for c in CONTRAST_CLAUSES.findall(advice) if c.startswith(" Instead,")]
    if not (phrase and consequence and any(phrase in clause for clause in worked)):
        return advice
    return advice.replace(f"do not {pitfall}.", f"{phrase} failed ({consequence}).", 1)


_CHECK_HEAD = re.compile(r" Check [\w.-]+ against every part of the request before you [\w.-]+: ")


def advice_with_clause(advice: str, clause: str) -> str | None:
    """The advice with the clause, or None when it says nothing new: one "Instead, …" (the way
    that worked) and one "Check X …" per call (the one that says more: a second failure of the
    task with its error), however many runs of the task ended the other way."""
    if clause.strip() in advice:
        return None
    said = CONTRAST_CLAUSES.findall(advice)
    if clause.startswith(" Instead,") and any(c.startswith(" Instead,") for c in said):
        return None
    head = _CHECK_HEAD.match(clause)
    same = [c for c in said if head and c.startswith(head.group(0))]
    if same:
        return advice.replace(same[0], clause, 1) if len(clause) > len(same[0]) else None
    return f"{advice}{clause}"


def experiences_contrast(experience: Experience, *, limit: int = 2) -> list[Experience]:
    """Contrast an experience with the runs of the same task that ended the other way, both
    ways: each side's advice gains the other's lesson (once; its source trace joins the
    provenance). Inside the caller's transaction; returns the other experiences it changed."""
    others = list(
        Experience.objects.select_for_update()
        .filter(project_id=experience.project_id, task_key=experience.task_key, merged_into=None)
        .exclude(pk=experience.pk)
        .exclude(polarity=experience.polarity)
        .exclude(status__in=Experience.INACTIVE_STATUSES)
        # Never read here (their versions keep the advice, scene and path): the vector, parsed
        # from text, and the search column, calls and replay are most of a row.
        .defer("embedding", "search", "calls", "replay", "request", "task", "keywords")
        .order_by("-id")[:limit]
    )
    if not others:
        return []
    # Each side's source traces, in one query: its first is the run it speaks for.
    traces: dict[int, list[int]] = {}
    for experience_id, trace_id in (
        ExperienceSource.objects.filter(experience_id__in=[experience.pk, *(o.pk for o in others)])
        .order_by("experience_id", "id")
        .values_list("experience_id", "trace_id")
    ):
        traces.setdefault(experience_id, []).append(trace_id)
    # Every change is decided first and written at the end, three statements in all (one per
    # change and table before: nine for a review's usual three changes, and a row contrasted
    # twice was rewritten twice, each time with new entries in every index, the HNSW one too).
    changed: dict[int, Experience] = {}
    sources: list[ExperienceSource] = []
    versions: list[ExperienceVersion] = []
    for other in others:
        for target, lesson_from in ((experience, other), (other, experience)):
            source = next(iter(traces.get(lesson_from.pk, ())), None)
            if source is None or source in traces.setdefault(target.pk, []):
                continue
            clause = _contrast_clause(target, lesson_from)
            advice = advice_with_clause(target.advice, clause) if clause else None
            if advice is None:
                continue
            target.advice = contradiction_resolved(advice, target.pitfall)
            target.version += 1
            changed[target.pk] = target
            sources.append(ExperienceSource(experience=target, trace_id=source))
            traces[target.pk].append(source)
            versions.append(
                version_of(
                    target, reason=f"contrasted with experience {lesson_from.pk} of the same task"
                )
            )
    if not changed:
        return []
    now = timezone.now()
    rows = list(changed.values())
    for target in rows:
        target.updated_at = now  # as save() would (auto_now)
    with connection.cursor() as cursor:
        cursor.execute(
            _CONTRASTED,
            [now, [t.pk for t in rows], [t.advice for t in rows], [t.version for t in rows]],
        )
    ExperienceSource.objects.bulk_create(sources)
    ExperienceVersion.objects.bulk_create(versions)
    return [other for other in others if other.pk in changed]
