"""Celery tasks of the experience app: thin shells around one service call each."""

from celery import shared_task
from django.conf import settings

from experiences.services.dedup import experience_dedup, experience_dedup_enqueue_due
from experiences.services.families import families_induce_due, family_induce
from experiences.services.kb_rebuilds import kb_rebuild_run
from experiences.services.keyword_stats import keyword_stats_refresh
from experiences.services.llm_merge import merge_advice_with_llm
from experiences.services.recall_log import recall_logs_prune


@shared_task(name="experiences.dedup_experience", acks_late=True, ignore_result=True)
def dedup_experience(experience_id: int) -> str:
    """Merge, propose, or keep a new or re-derived experience (idempotent: a wording already
    checked, or a merged row, is skipped)."""
    return experience_dedup(experience_id=experience_id, merge_advice=merge_advice_with_llm)


@shared_task(name="experiences.dedup_experiences", acks_late=True, ignore_result=True)
def dedup_experiences(experience_ids: list[int]) -> list[str]:
    """The checks one write made due, one after the other (if one fails, the rest stay due
    for beat's sweep, as a lost task's would)."""
    return [
        experience_dedup(experience_id=experience_id, merge_advice=merge_advice_with_llm)
        for experience_id in experience_ids
    ]


@shared_task(name="experiences.dedup_due_experiences", acks_late=True, ignore_result=True)
def dedup_due_experiences() -> int:
    """Beat: send the dedup checks that never ran (their task lost while Redis was down)."""
    return experience_dedup_enqueue_due()


@shared_task(name="experiences.refresh_keyword_stats", ignore_result=True)
def refresh_keyword_stats() -> bool:
    """Beat: keep recall's keyword frequencies in step with PostgreSQL's statistics."""
    return keyword_stats_refresh()


@shared_task(
    name="experiences.rebuild_kb",
    acks_late=True,
    ignore_result=True,
    time_limit=settings.HINDSIGHT_KB_REBUILD_TIME_LIMIT,
    soft_time_limit=settings.HINDSIGHT_KB_REBUILD_TIME_LIMIT - 10,
)
def rebuild_kb(project_id: int, rebuild_id: str, user_id: int | None = None) -> str:
    """Rewrite a project's knowledge base, recording its progress for the KB page."""
    return kb_rebuild_run(project_id=project_id, rebuild_id=rebuild_id, user_id=user_id)


@shared_task(name="experiences.prune_recall_logs", acks_late=True, ignore_result=True)
def prune_recall_logs() -> int:
    """Beat, daily: delete recall logs past HINDSIGHT_RECALL_LOG_DAYS."""
    return recall_logs_prune()


@shared_task(name="experiences.induce_family", acks_late=True, ignore_result=True)
def induce_family(family_id: int) -> str:
    """A family's workflow and insights, induced again from its episodes (idempotent)."""
    return family_induce(family_id=family_id)


@shared_task(name="experiences.induce_due_families", acks_late=True, ignore_result=True)
def induce_due_families() -> int:
    """Beat: send the family inductions that are due (lost tasks)."""
    return families_induce_due()
