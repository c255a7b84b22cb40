"""An experience derived again from its trace's current labels: when people correct them, or
when the project came to know its tools better (rederive_matured).

Distillation (reviews -> experiences and failure patterns) is in three steps: `distill_drafts`
builds drafts without touching the database (embedded before the transaction opens, so the
transaction that stores labels, reviews and experiences stays short), `distill_store` stores
them inside the review's transaction, and `distill_contrast` adds what runs of the same task
that ended the other way say. hindsight_site/review_tasks.py runs them after a review.
"""

from typing import cast

from django.db import transaction
from django.utils import timezone

from experiences.models import Experience, ExperienceSource
from experiences.services.distill_contrast import CONTRAST_CLAUSES, contradiction_resolved
from experiences.services.distill_drafts import (
    ExperienceDraft,
    drafts_embed,
    experience_draft,
    pattern_drafts,
)
from experiences.services.distill_store import experiences_store, patterns_store
from experiences.services.families import family_members_changed
from experiences.services.llm_revise import revise_advice_with_llm
from experiences.services.versions import version_record
from traces.models import Review, Step, Trace
from traces.review.heuristic import build_template
from traces.review.service import review_request, step_view, trace_view
from traces.review.types import Label, StepJudgement, Window


def experience_rederive(*, trace_id: int, because: str = "") -> list[Experience]:
    """Re-derive a trace's experience from its current labels (human labels win).

    `because`: why it is re-derived when the labels did not change (the project came to know
    its tools better, rederive_matured): then the wording is rebuilt even from the same labels,
    and the version says why.

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
            advice=CONTRAST_CLAUSES.sub("", current.experience.advice),
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
            result.append(
                _experience_revise(experience, draft, template.worth_reference, trace, because)
            )
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
    experience: Experience, draft: ExperienceDraft, worthy: bool, trace: Trace, because: str = ""
) -> Experience:
    """Revise the experience to the draft (an LLM's wording already in it, when it gave one)."""
    if not worthy:
        if experience.status not in Experience.INACTIVE_STATUSES:
            experience.status = Experience.Status.ARCHIVED
            experience.save(update_fields=["status", "updated_at"])
        return experience
    provenance = ExperienceSource.objects.filter(experience=experience, trace=trace)
    said = (experience.advice, experience.path, experience.polarity)
    beside_the_words = ("replay", "blame", "calls", "same_case_only")
    if any(getattr(experience, name) != getattr(draft, name) for name in beside_the_words):
        # what a relabel changed beside the words: kept without a new version
        if experience.calls != draft.calls and experience.family_id is not None:
            family_members_changed(experience.family_id)
        for name in beside_the_words:
            setattr(experience, name, getattr(draft, name))
        experience.save(update_fields=[*beside_the_words, "updated_at"])
    if not because and provenance.filter(labels=draft.labels).exists() and draft.labels:
        return experience  # derived from these very labels: nothing to say differently
    clauses = "".join(CONTRAST_CLAUSES.findall(experience.advice))
    advice = contradiction_resolved(draft.advice + clauses, draft.pitfall)
    if said == (advice, draft.path, draft.polarity):
        provenance.update(labels=draft.labels)
        return experience  # the same words: no new version
    reason = because or f"re-derived from corrected labels of trace {trace.pk}"
    reason += draft.revision_note
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
