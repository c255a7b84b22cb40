"""The review -> distillation chain, wired here so `traces` never imports `experiences`.

The traces app publishes these tasks by name (traces.services.review_queue).
"""

import logging
from functools import partial

from celery import Task, shared_task
from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, transaction

from core.publish import tasks_publish, tasks_publish_on_commit
from experiences.services.dedup import DEDUP_BATCH_TASK
from experiences.services.distill_drafts import drafts_embed, drafts_from_outcomes
from experiences.services.distill_rederive import experience_rederive
from experiences.services.distill_store import distillation_store
from experiences.services.keyword_stats import keyword_stats_refresh
from experiences.services.rederive_matured import traces_to_rederive
from traces.review import service as review
from traces.review.llm import RETRYABLE
from traces.services import review_queue

logger = logging.getLogger(__name__)

# A review also retries when it loses its database connection (PostgreSQL restarted, a
# failover, a backend terminated): the next delivery gets a new connection (Celery's Django
# fixup closes an unusable one before each task). Before, such a task failed, could not even
# record its failure, and left its trace `queued` for the stuck sweep (15 minutes).
RETRYABLE_REVIEW = (*RETRYABLE, OperationalError, InterfaceError)


class ReviewTask(Task):
    """When the last retry fails (or the code raises something unexpected), say so on the trace."""

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        trace_id = args[0] if args else kwargs.get("trace_id")
        attempts = self.request.retries + 1
        review.review_fail(
            trace_id=trace_id,
            reason=f"review failed after {attempts} attempt(s): {type(exc).__name__}: {exc}",
        )


@shared_task(
    name="hindsight.review_trace",
    base=ReviewTask,
    bind=True,
    acks_late=True,
    ignore_result=True,
    autoretry_for=RETRYABLE_REVIEW,
    retry_backoff=True,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=settings.HINDSIGHT_REVIEW_MAX_RETRIES,
)
def review_trace(self, trace_id: int) -> str:
    """Review a complete trace, then store labels, reviews, experiences and failure patterns."""
    plan = review.review_begin(trace_id=trace_id, worker=self.request.hostname or "")
    if plan is None:
        return "nothing to do"
    outcomes = review.review_run(plan)  # the reviewer (maybe an LLM): no transaction open
    drafts, patterns = drafts_from_outcomes(outcomes)
    drafts_embed(drafts)
    try:
        with transaction.atomic():
            reviews = review.review_apply(plan=plan, outcomes=outcomes)
            if reviews:
                experiences = distillation_store(reviews=reviews, drafts=drafts, patterns=patterns)
                dedup_on_commit([e.pk for e in experiences])
                if experiences:
                    transaction.on_commit(partial(keyword_stats_refresh, follow=False), robust=True)
                review.review_tools_observe(plan=plan, outcomes=outcomes)
    except IntegrityError:
        if not review.review_applied_before(trace_id=trace_id):
            raise  # not another delivery's doing: the task fails, and the trace says why
        logger.info("trace %s: this review was already applied by another delivery", trace_id)
        return "already applied"
    # What this run showed of its tools may make earlier lessons wrong: re-derive those.
    full = next((o for o in outcomes if o.request.window.kind == "full"), None)
    if full is not None:
        stale, because = traces_to_rederive(
            project_id=plan.project_id, before=full.request.trace.tool_effects
        )
        tasks_publish(rederive_trace.name, [(t, because) for t in stale])
    return "reviewed"


@shared_task(name="hindsight.rederive_trace", acks_late=True, ignore_result=True)
def rederive_trace(trace_id: int, because: str = "") -> int:
    """After a human relabel: re-derive the trace's experience from the corrected labels; or,
    with `because`, from the same labels once the project knows its tools better."""
    experiences = experience_rederive(trace_id=trace_id, because=because)
    dedup_on_commit([e.pk for e in experiences])
    return len(experiences)


def dedup_on_commit(experience_ids: list[int]) -> None:
    """Compare new or changed experiences with the library once they are committed.

    If the broker is down nothing is lost: their check stays due (`ExperienceDedupDue`) and
    beat's sweep sends it once Redis is back. One task checks them all, in order.
    """
    if experience_ids:
        tasks_publish_on_commit(DEDUP_BATCH_TASK, [(list(experience_ids),)])


@shared_task(name="hindsight.review_traces", acks_late=True, ignore_result=True)
def review_traces(trace_ids: list[int]) -> int:
    """A batch's hand-over: one review task per trace (each retried and acknowledged on its own).
    Those not sent (the broker went away meanwhile) go back to pending for the next sweep."""
    sent = tasks_publish(review_trace.name, [(trace_id,) for trace_id in trace_ids])
    if sent < len(trace_ids):
        review_queue.traces_back_to_pending(trace_ids=trace_ids[sent:])
    return sent
