"""The trace inspector's reads: a trace with its reviews, a window of its steps (keyset by step
index: a 2,000-step run is drawn 50 steps at a time), the overview of all its steps (counts,
the indexes the filters and jumps reach, the versions "Accept all" confirms), the machine's
opinion of each step, in a fixed number of queries whatever the length."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Min, Prefetch, Q, QuerySet

from accounts.models import Project
from traces.models import Review, Step, Trace

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


# ---------------------------------------------------------------------------- the step window

STEP_WINDOW = 50  # steps drawn at once; the rest come as the reader scrolls or jumps
WINDOW_LEAD = 5  # steps kept above a step jumped to (?at=N), so it is read in its context
# ?show= of the inspector; "" shows every step. `low` and `unchecked` serve the queue's reasons.
STEP_FILTERS = ("tools", "errors", "mine", "low", "blamed")
BLAMED_LABELS = (Step.Label.FAILED, Step.Label.MISLEADING)


def _machine_labelled() -> Q:
    return Q(label_source__in=Step.MACHINE_LABEL_SOURCES) & ~Q(label="")


def step_filter(queryset: QuerySet[Step], show: str, *, user: User) -> QuerySet[Step]:
    """The steps a filter of the inspector shows (the same rules as StepOverview's sets)."""
    if show == "tools":
        return queryset.filter(kind=Step.Kind.TOOL_CALL)
    if show == "errors":
        return queryset.filter(is_error=True)
    if show == "mine":
        return queryset.filter(
            label_source=Step.LabelSource.HUMAN, labelled_by=user, is_accepted_as_is=False
        ).exclude(label="")
    if show == "low":
        return queryset.filter(
            _machine_labelled(), label_confidence__lt=settings.HINDSIGHT_LOW_CONFIDENCE
        )
    if show == "blamed":
        return queryset.filter(_machine_labelled(), label__in=BLAMED_LABELS)
    return queryset


@dataclass(frozen=True)
class StepWindow:
    """A run of consecutive steps (among those the filter shows) and where the next runs start:
    `before` / `after` is the index to load earlier / later steps from, None when there are none
    (or, for an answer that only extends one end, when that end is not part of it)."""

    steps: list[Step]
    before: int | None = None
    after: int | None = None


def _one_more(rows: list[Step], limit: int) -> tuple[list[Step], bool]:
    return rows[:limit], len(rows) > limit


def step_window(
    *, trace: Trace, show: str, user: User, after: int | None = None, before: int | None = None,
    at: int | None = None, limit: int = STEP_WINDOW,
) -> StepWindow:  # fmt: skip
    """The steps after `after`, before `before`, around `at` (a few before it, then from it),
    or the first ones; each run one range of the (trace, index) unique index."""
    steps = step_filter(step_queryset().filter(trace=trace), show, user=user)
    if after is not None:
        rows, more = _one_more(list(steps.filter(index__gt=after)[: limit + 1]), limit)
        return StepWindow(rows, after=rows[-1].index if more and rows else None)
    if before is not None:
        older = steps.filter(index__lt=before).order_by("-index")
        rows, more = _one_more(list(older[: limit + 1]), limit)
        rows.reverse()
        return StepWindow(rows, before=rows[0].index if more and rows else None)
    lead: list[Step] = []
    if at is not None:
        lead = list(steps.filter(index__lt=at).order_by("-index")[: WINDOW_LEAD + 1])
        steps = steps.filter(index__gte=at)
    earlier = len(lead) > WINDOW_LEAD
    lead = lead[:WINDOW_LEAD][::-1]
    rows, more = _one_more(list(steps[: limit - len(lead) + 1]), limit - len(lead))
    rows = lead + rows
    return StepWindow(
        rows,
        before=rows[0].index if earlier and rows else None,
        after=rows[-1].index if more and rows else None,
    )


def steps_with_opinions(*, trace: Trace, steps: list[Step]) -> list[Step]:
    """Give each step of a window the machine's own label (from the trace's prefetched reviews)."""
    opinions = machine_opinions(trace.reviews.all())
    for step in steps:
        step.machine_opinion = opinions.get(step.index)  # type: ignore[attr-defined]
    return steps


def first_index_of_contents(*, trace: Trace, steps: list[Step]) -> dict[str, int]:
    """The first step index of each text the window's steps hold (a prompt sent again repeats
    an earlier step, maybe one outside the window): one query."""
    contents = {s.content for s in steps if s.content}
    if not contents:
        return {}
    rows = (
        Step.objects.filter(trace=trace, content__in=contents)
        .values("content")
        .annotate(first=Min("index"))
        .order_by()
    )
    return {row["content"]: row["first"] for row in rows}


@dataclass
class StepOverview:
    """All the steps of a trace in a few columns: the counts of the step filters, the indexes
    the filters and jumps reach (the page draws a window of the steps, the keyboard reaches
    all), the machine-labelled steps' versions ("Accept all")."""

    total: int = 0
    tools: list[int] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)
    mine: list[int] = field(default_factory=list)
    # no person has labelled or accepted them: no label, or the machine's alone
    unchecked: list[int] = field(default_factory=list)
    low: list[int] = field(default_factory=list)
    blamed: list[int] = field(default_factory=list)
    machine_versions: list[tuple[int, int]] = field(default_factory=list)
    has_heuristic_labels: bool = False

    @property
    def tool_calls(self) -> int:
        return len(self.tools)

    @property
    def own_changes(self) -> int:
        return len(self.mine)

    @property
    def first_error(self) -> int | None:
        return self.errors[0] if self.errors else None

    @property
    def first_unchecked(self) -> int | None:
        return self.unchecked[0] if self.unchecked else None

    @property
    def versions_text(self) -> str:
        """ "index:version,…" of the machine-labelled steps: what "Accept all" confirms."""
        return ",".join(f"{index}:{version}" for index, version in self.machine_versions)

    def count(self, show: str) -> int:
        """How many steps the filter `show` shows ("" shows all)."""
        return len(getattr(self, show)) if show in STEP_FILTERS else self.total


def step_overview(*, trace: Trace, user: User) -> StepOverview:
    """StepOverview of every step of `trace` for `user` ("my changes"): one narrow query."""
    low = settings.HINDSIGHT_LOW_CONFIDENCE
    overview = StepOverview()
    rows = Step.objects.filter(trace=trace).order_by("index").values_list(
        "index", "kind", "is_error", "label", "label_source", "labelled_by_id",
        "is_accepted_as_is", "label_confidence", "label_version",
    )  # fmt: skip
    for index, kind, is_error, label, source, by, accepted, confidence, version in rows:
        overview.total += 1
        if kind == Step.Kind.TOOL_CALL:
            overview.tools.append(index)
        if is_error:
            overview.errors.append(index)
        if not label:
            overview.unchecked.append(index)
        elif source == Step.LabelSource.HUMAN:
            if by == user.pk and not accepted:
                overview.mine.append(index)
        elif source in Step.MACHINE_LABEL_SOURCES:
            overview.unchecked.append(index)
            overview.machine_versions.append((index, version))
            if confidence is not None and confidence < low:
                overview.low.append(index)
            if label in BLAMED_LABELS:
                overview.blamed.append(index)
        if source == Step.LabelSource.HEURISTIC:
            overview.has_heuristic_labels = True
    return overview


def trace_in_projects(*, trace_id: int, projects: list[Project]) -> Trace | None:
    """A trace of one of `projects`, with its project (what a step's action needs)."""
    return Trace.objects.filter(pk=trace_id, project__in=projects).select_related("project").first()


def trace_for_inspector(*, trace_id: int, projects: list[Project]) -> Trace | None:
    """A trace with its reviews and experiences, not its steps (step_window draws those)."""
    return (
        Trace.objects.filter(pk=trace_id, project__in=projects)
        .select_related("project")
        .prefetch_related(
            Prefetch("reviews", queryset=Review.objects.order_by("kind", "window_start", "pk")),
            "experience_sources__experience",
        )
        .first()
    )


MODELS_SHOWN = 10


def trace_models(*, trace: Trace) -> list[str]:
    """The models the run's LLM steps name (`arguments.model`, as OTLP ingest and most agents
    record it), in order of first use: one query over the trace's LLM steps."""
    rows = (
        Step.objects.filter(trace=trace, kind=Step.Kind.LLM_REASONING, arguments__has_key="model")
        .order_by("index")
        .values_list("arguments__model", flat=True)
    )
    models: list[str] = []
    for model in rows:
        if isinstance(model, str) and model and model not in models:
            models.append(model)
            if len(models) == MODELS_SHOWN:
                break
    return models
