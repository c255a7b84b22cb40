"""How far the machine review is behind: what waits for it, how fast it has been going, and so
when it should be through (the queue page shows it, so a backlog under load is never silent)."""

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from accounts.models import Project
from core.pagination import capped_count
from traces.models import Trace

RATE_WINDOW = timedelta(minutes=10)  # the rate is the last ten minutes' reviews
WAITING = (Trace.ReviewStatus.PENDING, Trace.ReviewStatus.QUEUED, Trace.ReviewStatus.REVIEWING)
DONE = (Trace.ReviewStatus.REVIEWED, Trace.ReviewStatus.SKIPPED)


@dataclass(frozen=True)
class ReviewBacklog:
    waiting: int  # complete trajectories not reviewed yet
    is_waiting_capped: bool
    recent: int  # reviewed (or skipped) within RATE_WINDOW
    failed: int  # reviews that failed for good: each can be sent back from its trace
    window_minutes: int = int(RATE_WINDOW.total_seconds() // 60)

    @property
    def per_minute(self) -> float:
        return self.recent / self.window_minutes

    @property
    def drain_minutes(self) -> int | None:
        """Minutes until what waits is reviewed at the recent rate (None: no recent review to
        go by, so no honest estimate)."""
        if not self.waiting or not self.recent:
            return None
        return max(1, round(self.waiting / self.per_minute))


def review_backlog(*, project: Project) -> ReviewBacklog:
    traces = Trace.objects.filter(project=project)
    waiting, capped = capped_count(
        traces.filter(review_status__in=WAITING, completed_at__isnull=False).values("pk")
    )
    since = timezone.now() - RATE_WINDOW
    recent, _ = capped_count(
        traces.filter(review_status__in=DONE, review_status_at__gte=since).values("pk")
    )
    failed, _ = capped_count(traces.filter(review_status=Trace.ReviewStatus.FAILED).values("pk"))
    return ReviewBacklog(waiting=waiting, is_waiting_capped=capped, recent=recent, failed=failed)
