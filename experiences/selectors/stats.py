"""Figures of /stats/ about experiences: created per day, by status, recall hit rate."""

from datetime import timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from accounts.models import Project
from experiences.models import Experience, RecallLog


def _bar_width(n: int, peak: int) -> int:
    """A bar's width in percent of the peak, to the nearest 5 (a CSS class: the
    Content-Security-Policy allows no inline style)."""
    return 5 * round(20 * n / peak) if peak else 0


def experience_stats(*, project: Project, days: int = 30) -> dict:
    """Experiences over time, by status, and how often recalled items helped (for /stats/)."""
    since = timezone.now() - timedelta(days=days)
    per_day = list(
        Experience.objects.filter(project=project, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values_list("day")
        .annotate(n=Count("pk"))
        .order_by("day")
    )
    peak = max((n for _, n in per_day), default=0)
    statuses = dict(
        Experience.objects.filter(project=project, merged_into__isnull=True)
        .values_list("status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    recalls = RecallLog.objects.filter(project=project, created_at__gte=since).aggregate(
        total=Count("pk"),
        with_feedback=Count("pk", filter=Q(feedback_at__isnull=False)),
        helped=Count("pk", filter=Q(feedback_at__isnull=False) & ~Q(helpful=[])),
    )
    rate = recalls["helped"] / recalls["with_feedback"] if recalls["with_feedback"] else None
    return {
        "days": days,
        "per_day": [{"day": day, "n": n, "width": _bar_width(n, peak)} for day, n in per_day],
        "statuses": [(s, statuses.get(s, 0)) for s in Experience.Status.values],
        "recalls": recalls,
        "hit_rate": None if rate is None else round(100 * rate),
    }
