"""The trace inspector's reads: a trace with its steps and reviews in a fixed number of queries,
the machine's opinion of each step, the versions "Accept all" confirms."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import (
    Prefetch,
    QuerySet,
)

from traces.models import (
    Project,
    Review,
    Step,
    Trace,
)

STEP_COLUMNS_DEFERRED = ("observation_raw", "content_hash")


def step_queryset() -> QuerySet[Step]:
    return (
        Step.objects.defer(*STEP_COLUMNS_DEFERRED).select_related("labelled_by").order_by("index")
    )


def review_label(value: Any) -> str:
    """The label a review gave a step (a label, or {"label": ..., ...}); "" when not one."""
    if isinstance(value, dict):
        value = value.get("label")
    return value if isinstance(value, str) and value in Step.Label.values else ""


@dataclass(frozen=True)
class MachineOpinion:
    """What the machine reviewer said about one step, kept in its Review after humans relabel."""

    label: str
    reason: str
    confidence: float | None
    reviewer: str  # Review.Reviewer: "llm" or "heuristic", the step's label_source it gave


def _opinion(value: Any, reviewer: str) -> MachineOpinion | None:
    label = review_label(value)
    if not label:
        return None
    details = value if isinstance(value, dict) else {}
    reason = details.get("reason")
    confidence = details.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        confidence = None
    elif not 0 <= confidence <= 1:
        confidence = None  # outside the step's check constraint: not worth restoring
    return MachineOpinion(
        label=label,
        reason=reason if isinstance(reason, str) else "",
        confidence=None if confidence is None else float(confidence),
        reviewer=reviewer if reviewer in Review.Reviewer.values else Review.Reviewer.LLM,
    )


def machine_opinions(reviews: Iterable[Review]) -> dict[int, MachineOpinion]:
    """Per step index, the machine's label from `reviews` given full before local (a local
    review's label refines the full review's for its window, as when the labels were applied)."""
    opinions: dict[int, MachineOpinion] = {}
    for review in reviews:
        for index, value in (review.labels or {}).items():
            opinion = _opinion(value, review.reviewer)
            if opinion is not None and str(index).isdigit():
                opinions[int(index)] = opinion
    return opinions


def machine_opinion_for(*, trace: Trace, index: int) -> MachineOpinion | None:
    reviews = Review.objects.filter(
        trace=trace, window_start__lte=index, window_end__gte=index
    ).order_by("kind", "pk")  # "full" sorts before "local"
    return machine_opinions(reviews.only("reviewer", "labels")).get(index)


def trace_inspect(*, trace_id: int, projects: list[Project]) -> Trace | None:
    """A trace with everything the inspector shows, in a fixed number of queries (any step count).

    The experiences panel reads `trace.experience_sources` by its related name, so this app never
    imports the experiences app.
    """
    trace = (
        Trace.objects.filter(pk=trace_id, project__in=projects)
        .select_related("project")
        .prefetch_related(
            Prefetch("steps", queryset=step_queryset()),
            Prefetch("reviews", queryset=Review.objects.order_by("kind", "window_start", "pk")),
            "experience_sources__experience",
        )
        .first()
    )
    if trace is None:
        return None
    # The prefetch orders reviews by kind first: full before local, as machine_opinions needs.
    opinions = machine_opinions(trace.reviews.all())
    for step in trace.steps.all():
        step.machine_opinion = opinions.get(step.index)  # type: ignore[attr-defined]
    return trace


def trace_is_heuristic(trace: Trace) -> bool:
    """The labels or reviews came from the offline heuristic reviewer (said plainly in the UI)."""
    return any(r.reviewer == Review.Reviewer.HEURISTIC for r in trace.reviews.all()) or any(
        s.label_source == Step.LabelSource.HEURISTIC for s in trace.steps.all()
    )


def machine_label_versions(trace: Trace) -> str:
    """ "index:version,…" of the machine-labelled steps as shown: what "Accept all" confirms."""
    return ",".join(
        f"{s.index}:{s.label_version}"
        for s in trace.steps.all()
        if s.label and s.label_source in Step.MACHINE_LABEL_SOURCES
    )


def parse_label_versions(text: str) -> dict[int, int]:
    versions: dict[int, int] = {}
    for part in text.split(","):
        index, _, version = part.strip().partition(":")
        if index.isdigit() and version.isdigit():
            versions[int(index)] = int(version)
    return versions


def step_for_trace(*, trace: Trace, index: int) -> Step | None:
    step = step_queryset().filter(trace=trace, index=index).first()
    if step is None:
        return None
    step.machine_opinion = machine_opinion_for(trace=trace, index=index)  # type: ignore[attr-defined]
    return step
