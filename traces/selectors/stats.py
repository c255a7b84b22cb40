"""Figures of /stats/: label agreement between machine and people (Cohen's kappa), volumes."""

from datetime import timedelta
from typing import Any

from django.db.models import (
    Count,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from traces.models import (
    Project,
    Review,
    Step,
    Trace,
)
from traces.selectors.inspector import review_label

AGREEMENT_SAMPLE = 50_000


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
    judged = Step.objects.filter(trace__project=project, label_source=Step.LabelSource.HUMAN)
    accepted = judged.filter(is_accepted_as_is=True).exclude(label="").count()
    human = list(
        judged.filter(is_accepted_as_is=False)
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
        "accepted_as_is": accepted,
        "rows": rows,
        "kappa": cohen_kappa(pairs, list(Step.Label.values)),
        "matrix": [
            [sum(1 for m, h in pairs if m == row and h == col) for col in Step.Label.values]
            for row in Step.Label.values
        ],
    }


def project_stats(*, project: Project, days: int = 30) -> dict[str, Any]:
    by_source: dict[str, dict[str, int]] = {}
    distribution = (
        Step.objects.filter(trace__project=project)
        .exclude(label="")
        .values_list("label_source", "label")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for source, label, n in distribution:
        by_source.setdefault(source, {})[label] = n
    statuses = dict(
        Trace.objects.filter(project=project)
        .values_list("review_status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    since = timezone.now() - timedelta(days=days)
    per_day = (
        Trace.objects.filter(project=project, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values_list("day")
        .annotate(n=Count("pk"))
        .order_by("day")
    )
    return {
        "labels": list(Step.Label.values),
        "sources": list(Step.LabelSource.values),
        "by_source": by_source,
        "statuses": [(s, statuses.get(s, 0)) for s in Trace.ReviewStatus.values],
        "per_day": [(day.isoformat(), n) for day, n in per_day],
        "agreement": label_agreement(project=project),
        "days": days,
    }
