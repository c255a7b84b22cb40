"""Figures of /stats/: label agreement between machine and people (Cohen's kappa), volumes."""

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import Sum
from django.utils import timezone

from accounts.models import Project
from traces.models import Review, Step, Tally, Trace
from traces.selectors.inspector import review_label

# The latest steps people judged one by one that the agreement is computed on: a bounded read
# at any library size (the page says how many pairs it used).
AGREEMENT_SAMPLE = 5_000


# The labels-by-source columns: each label source, and the machine labels accepted as is.
ACCEPTED = "accepted"
SOURCE_NAMES = {
    "llm": "llm", "heuristic": "heuristic", "human": "human (judged)",
    ACCEPTED: "accepted as is",
}  # fmt: skip


def tallies(*, project: Project, prefix: str, since: str = "") -> dict[str, int]:
    """The counts the triggers keep (traces/models/tallies.py) whose name starts with `prefix`
    (and sorts at or after `prefix + since`), by the name's rest."""
    rows = (
        Tally.objects.filter(project=project, name__startswith=prefix, name__gte=prefix + since)
        .values_list("name")
        .annotate(total=Sum("n"))
        .order_by()
    )
    return {name[len(prefix) :]: total for name, total in rows if total}


def machine_labels_for(trace_ids: list[int]) -> dict[tuple[int, int], str]:
    """What the reviewer said per (trace, step index), from the Review records (kept after
    humans relabel); a local review's label refines the full review's for its window."""
    machine: dict[tuple[int, int], str] = {}
    reviews = (
        Review.objects.filter(trace_id__in=trace_ids)
        .order_by("trace_id", "kind", "pk")  # "full" sorts before "local"
        .values_list("trace_id", "labels")
    )
    for trace_id, review_labels in reviews.iterator():
        for index, value in (review_labels or {}).items():
            label = review_label(value)
            if label and str(index).isdigit():
                machine[(trace_id, int(index))] = label
    return machine


def cohen_kappa(pairs: list[tuple[str, str]], categories: list[str]) -> float | None:
    n = len(pairs)
    if not n:
        return None
    observed = sum(1 for x, y in pairs if x == y) / n
    expected = sum(
        (sum(1 for x, _ in pairs if x == c) / n) * (sum(1 for _, y in pairs if y == c) / n)
        for c in categories
    )
    if expected >= 1:
        return None  # one category only (e.g. a label nobody used): agreement is undefined
    return round((observed - expected) / (1 - expected), 3)


def label_agreement(*, project: Project) -> dict[str, Any]:
    """Machine vs human on the steps a person judged: per label counts and Cohen's kappa.

    Labels accepted as is ("Accept all", "Finish & next") are left out: nobody looked at those
    steps one by one, so counting them would inflate agreement with the machine.
    """
    accepted = sum(
        n
        for name, n in tallies(project=project, prefix="label:human:").items()
        if name.endswith(":accepted")
    )
    human = list(
        Step.objects.filter(
            trace__project=project, label_source=Step.LabelSource.HUMAN, is_accepted_as_is=False
        )
        .exclude(label="")
        .order_by("-pk")
        .values_list("trace_id", "index", "label")[:AGREEMENT_SAMPLE]
    )
    machine = machine_labels_for(sorted({t for t, _, _ in human}))
    pairs = [(machine[(t, i)], label) for t, i, label in human if (t, i) in machine]
    rows = []
    for label in Step.Label.values:
        binary = [(m == label, h == label) for m, h in pairs]
        rows.append({
            "label": label,
            "both": sum(1 for m, h in binary if m and h),
            "machine_only": sum(1 for m, h in binary if m and not h),
            "human_only": sum(1 for m, h in binary if h and not m),
            "kappa": cohen_kappa([(str(m), str(h)) for m, h in binary], ["True", "False"]),
        })  # fmt: skip
    return {
        "pairs": len(pairs),
        "sample": AGREEMENT_SAMPLE,
        "is_sampled": len(human) == AGREEMENT_SAMPLE,
        "accepted_as_is": accepted,
        "rows": rows,
        "kappa": cohen_kappa(pairs, list(Step.Label.values)),
        "matrix": [
            [sum(1 for m, h in pairs if m == row and h == col) for col in Step.Label.values]
            for row in Step.Label.values
        ],
    }


def project_stats(*, project: Project, days: int = 30) -> dict[str, Any]:
    """The page's figures, from the tallies (a few rows whatever the volume) and a bounded
    sample of human judgements. Traces per day are summed from UTC hours into local days; the
    first day of the window counts its whole first hour."""
    by_source: dict[str, dict[str, int]] = {}
    for name, n in tallies(project=project, prefix="label:").items():
        source, label, *accepted = name.split(":")
        # a machine label a person confirmed wholesale ("Accept all", Ctrl+Enter's "Finish")
        # is not a person's judgement: its own column, not "human"
        source = ACCEPTED if accepted else source
        by_source.setdefault(source, {})
        by_source[source][label] = by_source[source].get(label, 0) + n
    statuses = tallies(project=project, prefix="status:")
    since = timezone.now().astimezone(UTC) - timedelta(days=days)
    per_day: Counter[str] = Counter()
    for hour, n in tallies(project=project, prefix="hour:", since=f"{since:%Y-%m-%dT%H}").items():
        start = datetime.strptime(hour, "%Y-%m-%dT%H").replace(tzinfo=UTC)
        per_day[timezone.localtime(start).date().isoformat()] += n
    return {
        "labels": list(Step.Label.values),
        "sources": [*Step.LabelSource.values, ACCEPTED],
        "source_names": SOURCE_NAMES,
        "by_source": by_source,
        "statuses": [(s, statuses.get(s, 0)) for s in Trace.ReviewStatus.values],
        "per_day": sorted(per_day.items()),
        "agreement": label_agreement(project=project),
        "days": days,
    }
