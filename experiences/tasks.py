"""Celery tasks of the experience app: thin shells around one service call each."""

from celery import shared_task

from experiences.services.dedup import experience_dedup
from experiences.services.llm_merge import merge_advice_with_llm


@shared_task(name="experiences.dedup_experience", acks_late=True, ignore_result=True)
def dedup_experience(experience_id: int) -> str:
    """Merge, propose, or keep a new or re-derived experience (idempotent: merged rows skip)."""
    return experience_dedup(experience_id=experience_id, merge_advice=merge_advice_with_llm)
