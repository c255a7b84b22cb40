"""Scored recall items without a database, for the pure functions that order and word them."""

from datetime import UTC, datetime

from experiences.services.recall import RecallItem
from experiences.services.recall_candidates import Recalled
from experiences.services.recall_cases import Case


def recall_item(
    experience_id, score, *, kind="episode", family_id=None, same_case=False, polarity="success"
) -> RecallItem:
    experience = Recalled(
        id=experience_id, advice=f"advice {experience_id}", polarity=polarity, kind=kind,
        status="approved", environment=[], tools=[], path=[], evidence_at=datetime.now(UTC),
        upvotes=0, downvotes=0, support_count=1, family_id=family_id, same_case_only=False,
    )  # fmt: skip
    return RecallItem(experience, score, {}, None, Case(same_instance=same_case))
