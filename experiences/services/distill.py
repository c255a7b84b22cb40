"""Distillation: reviews -> experiences (scene features -> advice) and failure patterns.

Drafts are built without touching the database and embedded before the transaction opens, so
the transaction that stores labels, reviews and experiences stays short.
"""

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from django.db import transaction
from django.utils import timezone

from experiences.embeddings import embed_in_batches, get_embedder
from experiences.models import (
    Experience,
    ExperienceSource,
    FailurePattern,
    scene_text,
)
from experiences.scene import keywords_of, task_key
from experiences.services.llm_revise import revise_advice_with_llm
from experiences.services.patterns import argument_shape, error_signature
from experiences.services.versions import version_record
from traces.models import Review, Step, Trace
from traces.review.heuristic import build_template
from traces.review.scene import action_phrase, scene_summary
from traces.review.service import review_request, step_view, trace_view
from traces.review.types import (
    Label,
    ReviewOutcome,
    ReviewTemplate,
    StepJudgement,
    StepView,
    TraceView,
    Window,
)

MAX_PATTERN_SOURCES = 20


@dataclass
class ExperienceDraft:
    window: Window
    polarity: str
    advice: str
    source: str
    path: list[dict[str, Any]]
    step_indexes: list[int]
    summary: str
    strategy: str
    pitfall: str
    keywords: str
    embed_text: str
    labels: dict[str, str]  # the step labels it is derived from (JSON keys)
    embedding: list[float] | None = None
    revision_note: str = ""  # who worded a re-derivation, for its version's reason


@dataclass
class PatternDraft:
    tool: str
    argument_shape: dict[str, str]
    error_signature: str
    instead: str
    example_arguments: Any
    trace_id: int
    index: int
    signature_hash: str = field(init=False)

    def __post_init__(self) -> None:
        key = json.dumps([self.tool, self.argument_shape, self.error_signature], sort_keys=True)
        self.signature_hash = hashlib.sha256(key.encode()).hexdigest()


# ---------------------------------------------------------------------------- drafts


def _polarity(trace: TraceView) -> str:
    return "success" if trace.outcome in ("success", "partial") else "failure"


def _path(
    trace: TraceView, steps: list[StepView], labels: Mapping[int, str]
) -> list[dict[str, Any]]:
    return [
        {
            "trace_id": trace.id,
            "index": s.index,
            "tool": s.tool,
            "kind": s.kind,
            "summary": action_phrase(s)[:160],
        }
        for s in steps
        if labels.get(s.index) == "necessary"
    ]


def experience_draft(
    *,
    trace: TraceView,
    steps: list[StepView],
    window: Window,
    template: ReviewTemplate,
    labels: Mapping[int, str],
    source: str,
) -> ExperienceDraft:
    """One experience from a review: the scene (summary, keywords) is what it is matched on
    and embedded, the advice what it says."""
    polarity = _polarity(trace) if window.kind == "full" else "failure"
    summary = template.scene_summary.strip() or scene_summary(trace.task, steps)
    path = _path(trace, steps, labels)
    return ExperienceDraft(
        window=window,
        polarity=polarity,
        advice=template.experience,
        source=source,
        path=path,
        step_indexes=[s.index for s in steps if labels.get(s.index) == "necessary"],
        summary=summary[:300],
        strategy=template.strategy,
        pitfall=template.pitfall,
        keywords=keywords_of([trace.task, trace.final_answer, *(p["summary"] for p in path)]),
        embed_text=scene_text(summary=summary, intent=trace.intent),
        labels={str(s.index): labels[s.index] for s in steps if s.index in labels},
    )


def pattern_drafts(
    *, trace: TraceView, steps: list[StepView], labels: Mapping[int, str]
) -> list[PatternDraft]:
    drafts = []
    for step in steps:
        if labels.get(step.index) not in ("failed", "misleading") or not step.tool:
            continue
        if labels[step.index] == "misleading" and not step.is_error:
            continue  # a misleading call that did not fail has no error to warn about
        instead_step = next(
            (
                s
                for s in steps
                if s.index > step.index and s.tool and labels.get(s.index) == "necessary"
            ),
            None,
        )
        instead = ""
        if instead_step is not None:
            instead = f"use {action_phrase(instead_step)}"
        drafts.append(
            PatternDraft(
                tool=step.tool,
                argument_shape=argument_shape(step.arguments),
                error_signature=error_signature(step),
                instead=instead,
                example_arguments=step.arguments,
                trace_id=trace.id,
                index=step.index,
            )
        )
    return drafts


def drafts_from_outcomes(
    outcomes: list[ReviewOutcome],
) -> tuple[list[ExperienceDraft], list[PatternDraft]]:
    experiences, patterns = [], []
    has_full = any(o.request.window.kind == "full" for o in outcomes)
    for outcome in outcomes:
        template, request = outcome.template, outcome.request
        if not template.worth_reference:
            continue  # not worth referencing: the labels are all it leaves
        if has_full and request.window.kind == "local":
            # The full review already speaks for the whole trajectory; a local review adds its
            # Review record and failure patterns, not a second, overlapping experience.
            labels = {j.index: j.label for j in template.labels}
            patterns.extend(pattern_drafts(trace=request.trace, steps=request.steps, labels=labels))
            continue
        labels = {j.index: j.label for j in template.labels}
        experiences.append(
            experience_draft(
                trace=request.trace,
                steps=request.steps,
                window=request.window,
                template=template,
                labels=labels,
                source=outcome.reviewer,
            )
        )
        patterns.extend(pattern_drafts(trace=request.trace, steps=request.steps, labels=labels))
    unique = {(p.trace_id, p.index): p for p in patterns}  # full and local may see the same step
    return experiences, list(unique.values())


def drafts_embed(drafts: list[ExperienceDraft]) -> None:
    vectors = embed_in_batches([d.embed_text for d in drafts])
    for draft, vector in zip(drafts, vectors, strict=True):
        draft.embedding = vector


# ---------------------------------------------------------------------------- storing


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
        experience = Experience.objects.create(
            project_id=trace.project_id,
            **_scene(trace),
            task=trace.task,
            summary=draft.summary,
            task_key=task_key(trace.task),
            keywords=draft.keywords,
            strategy=draft.strategy,
            pitfall=draft.pitfall,
            advice=draft.advice,
            path=draft.path,
            polarity=draft.polarity,
            source=draft.source,
            success_count=1 if trace.outcome in ("success", "partial") else 0,
            failure_count=1 if trace.outcome == "failure" else 0,
            embedding=draft.embedding,
            embedding_model=model_name,
        )
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


# ---------------------------------------------------------------------------- contrast


# The clauses a contrast appended: kept when a relabel rebuilds the rest of the advice.
_CONTRAST = re.compile(
    r" (?:Do not|Instead,) [^()]*\((?:an earlier run of this task failed that way|"
    r"that worked in another run of this task)\)\."
)


def _contrast_clause(experience: Experience, other: Experience) -> str:
    """What the other run of the same task adds to this experience (ExpeL's insight from a
    success / failure pair): a success learns the failure's pitfall, a failure the success's
    strategy."""
    if experience.polarity == Experience.Polarity.SUCCESS and other.pitfall:
        return f" Do not {other.pitfall} (an earlier run of this task failed that way)."
    if experience.polarity == Experience.Polarity.FAILURE and other.strategy:
        return f" Instead, {other.strategy} (that worked in another run of this task)."
    return ""


def experiences_contrast(experience: Experience, *, limit: int = 2) -> list[Experience]:
    """Contrast an experience with the runs of the same task that ended the other way, both
    ways: each side's advice gains the other's lesson (once; its source trace joins the
    provenance). Inside the caller's transaction; returns the other experiences it changed."""
    others = list(
        Experience.objects.select_for_update()
        .filter(project_id=experience.project_id, task_key=experience.task_key, merged_into=None)
        .exclude(pk=experience.pk)
        .exclude(polarity=experience.polarity)
        .exclude(status__in=[Experience.Status.ARCHIVED, Experience.Status.REJECTED])
        .order_by("-id")[:limit]
    )
    changed = []
    for other in others:
        for target, lesson_from in ((experience, other), (other, experience)):
            source_traces = list(lesson_from.sources.values_list("trace_id", flat=True)[:1])
            if not source_traces or target.sources.filter(trace_id=source_traces[0]).exists():
                continue
            clause = _contrast_clause(target, lesson_from)
            if not clause or clause.strip() in target.advice:
                continue
            target.advice = f"{target.advice}{clause}"
            target.version += 1
            target.save(update_fields=["advice", "version", "updated_at"])
            ExperienceSource.objects.create(experience=target, trace_id=source_traces[0])
            version_record(
                target, reason=f"contrasted with experience {lesson_from.pk} of the same task"
            )
            if target is other:
                changed.append(other)
    return changed


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
        pattern.save()
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


# ---------------------------------------------------------------------------- re-derivation


def experience_rederive(*, trace_id: int) -> list[Experience]:
    """Re-derive a trace's experience from its current labels (human labels win).

    Nothing changes when the labels are the ones the experience was derived from. Otherwise
    the advice is rebuilt from the labels by the documented template, except when an LLM wrote
    the original and one is configured: then the LLM revises its own wording to agree with the
    corrected labels (asked before any row is locked; when it does not answer, the template
    wording is used and the version says so). The previous wording is kept as a version.
    Failure patterns are added for steps newly labelled failed.
    """
    trace = Trace.objects.filter(pk=trace_id).first()
    if trace is None or not trace.is_complete:
        return []
    steps_db = list(trace.steps.order_by("index"))
    if not steps_db or any(not s.label for s in steps_db):
        return []  # not reviewed yet: the review will derive
    view = trace_view(trace)
    steps = [step_view(s) for s in steps_db]
    window = Window("full", "relabel", steps[0].index, steps[-1].index)
    request = review_request(view, steps, window)
    judgements = {
        s.index: StepJudgement(
            index=s.index,
            # every step has a label here (checked above), one of Label (traces_step_label_valid)
            label=cast(Label, s.label),
            reason=s.label_reason or "-",
            confidence=s.label_confidence or 1.0,
        )
        for s in steps_db
    }
    template = build_template(request, judgements)
    labels = {i: j.label for i, j in judgements.items()}
    has_human = any(s.label_source == Step.LabelSource.HUMAN for s in steps_db)
    source = Experience.Source.HUMAN if has_human else steps_db[0].label_source
    draft = experience_draft(
        trace=view, steps=steps, window=window, template=template, labels=labels, source=source
    )
    # The first experience of a trace comes from its full review (drafts are stored in window
    # order, full first): that is the one a relabel revises.
    current = (
        ExperienceSource.objects.filter(trace=trace)
        .select_related("experience")
        .order_by("experience_id")
        .first()
    )
    if current is None:
        # A relabel changes what the experience says, not its scene: only a new experience
        # needs a vector (computed here, before any row is locked).
        if template.worth_reference:
            drafts_embed([draft])
    elif template.worth_reference and current.labels != draft.labels and _worded_by_llm(trace):
        revised = revise_advice_with_llm(
            advice=_CONTRAST.sub("", current.experience.advice),
            task=view.task,
            outcome=view.outcome,
            steps=steps,
            labels=labels,
            template_advice=draft.advice,
        )
        if revised:
            draft.advice, draft.revision_note = revised, " (revised by the LLM that wrote it)"
        else:
            draft.revision_note = " (template wording: the LLM that wrote it did not answer)"
    patterns = (
        pattern_drafts(trace=view, steps=steps, labels=labels) if template.worth_reference else []
    )

    with transaction.atomic():
        trace = Trace.objects.select_for_update().get(pk=trace_id)
        existing = list(
            Experience.objects.select_for_update().filter(sources__trace=trace).order_by("id")[:1]
        )
        result = []
        for experience in existing:
            result.append(_experience_revise(experience, draft, template.worth_reference, trace))
        if not existing and template.worth_reference:
            result.extend(experiences_store(trace=trace, reviews=[], drafts=[draft]))
        patterns_store(trace=trace, drafts=patterns)
        trace.experiences_derived_at = timezone.now()
        trace.save(update_fields=["experiences_derived_at"])
    return result


def _worded_by_llm(trace: Trace) -> bool:
    """Whether the trace's experience was first written by an LLM (its latest full review)."""
    reviewer = (
        Review.objects.filter(trace=trace, kind=Review.Kind.FULL)
        .order_by("-created_at")
        .values_list("reviewer", flat=True)
        .first()
    )
    return reviewer == Review.Reviewer.LLM


def _experience_revise(
    experience: Experience, draft: ExperienceDraft, worthy: bool, trace: Trace
) -> Experience:
    """Revise the experience to the draft (an LLM's wording already in it, when it gave one)."""
    if not worthy:
        if experience.status not in (Experience.Status.ARCHIVED, Experience.Status.REJECTED):
            experience.status = Experience.Status.ARCHIVED
            experience.save(update_fields=["status", "updated_at"])
        return experience
    provenance = ExperienceSource.objects.filter(experience=experience, trace=trace)
    said = (experience.advice, experience.path, experience.polarity)
    if provenance.filter(labels=draft.labels).exists() and draft.labels:
        return experience  # derived from these very labels: nothing to say differently
    advice = draft.advice + "".join(_CONTRAST.findall(experience.advice))
    if said == (advice, draft.path, draft.polarity):
        provenance.update(labels=draft.labels)
        return experience  # the same words: no new version
    reason = f"re-derived from corrected labels of trace {trace.pk}{draft.revision_note}"
    experience.version += 1
    experience.advice = advice
    experience.path = draft.path
    experience.strategy, experience.pitfall = draft.strategy, draft.pitfall
    experience.source = draft.source
    experience.polarity = draft.polarity
    experience.save()
    version_record(experience, reason=reason)
    provenance.update(step_indexes=draft.step_indexes, labels=draft.labels)
    return experience
