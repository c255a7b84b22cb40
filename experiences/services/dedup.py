"""Dedup on write: each new or re-derived experience against its nearest neighbours.

A new or re-derived experience is compared with its nearest neighbours (same project, polarity
and scope; through the HNSW index, never a scan). At or above the auto threshold it is merged
into the older one (experiences/services/merging.py); between the proposal and auto thresholds
an admin gets a merge proposal.

A check is due from the moment an experience is written or its wording changes (`version`): the
database records it (`ExperienceDedupDue`, by trigger) and the check deletes the record of the
version it compared, so an experience whose check never ran (its task lost while Redis was down,
an edit, a merge that changed the survivor's wording) is found by `experience_dedup_enqueue_due`,
which beat runs. An undo is a person's decision: it leaves both experiences checked, and the
pair is only ever proposed again, never merged automatically.
"""

import logging
import re
from collections.abc import Iterable
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from pgvector.django import CosineDistance

from core.errors import Conflict
from experiences.models import Experience, ExperienceDedupDue, ExperienceMerge, MergeProposal
from experiences.services.merging import experience_merge

logger = logging.getLogger(__name__)

DEDUP_TASK = "experiences.dedup_experience"
# The checks one write makes due (a review's experience and the other runs its contrast
# changed), one task for all of them, in order: each task costs the worker ~2 ms of dispatch
# and acknowledgement, and a review made three of them due.
DEDUP_BATCH_TASK = "experiences.dedup_experiences"
# What a check never reads of the rows it compares (a merge locks and reads both rows itself):
# the keyword search column, the run's calls, path and replay are most of a row, and each check
# read them for the experience and its five neighbours (and the neighbours' vectors, parsed
# from text), a fifth of the check's time.
_UNREAD = ("search", "calls", "path", "replay", "blame", "request", "task", "keywords")

# Words that the strategy and pitfall templates (and plain English) put in any experience:
# "get_user_details "x", then cancel_reservation "y": it led to …" shares "then", "it", "led",
# "to" with every other lesson, which made two lessons about different calls look alike; the
# placeholders' own words ("<user_id from the request>", "<… of the case>") too.
_FILLER = frozenset(
    "a an and are as at be by did do does for from if in into is it its led more no not of on "
    "or s step steps than that the then this to was were when with you your items fields "
    "instead first request case written words returned use said user then".split()
)


def substance_words(text: str) -> set[str]:
    """The words that carry an experience's substance: calls, arguments, values, not filler."""
    return {w for w in re.findall(r"\w+", text.lower()) if w not in _FILLER}


def substance_overlap(first: str, second: str) -> float:
    """How much two experiences say the same: the share of the shorter one's substance words
    (of their strategy and pitfall, filler left out) that the other also says, so a more
    specific wording still covers a general one, while two runs of one scene that took
    different paths (other calls, other values) are not duplicates."""
    a, b = substance_words(first), substance_words(second)
    if not a or not b:
        return 1.0  # one says nothing structured (written by hand): the scene decides
    return len(a & b) / min(len(a), len(b))


def _scene_peers(experience: Experience):
    return (
        Experience.objects.filter(
            project_id=experience.project_id,
            polarity=experience.polarity,
            kind=Experience.Kind.EPISODE,
            merged_into__isnull=True,
            scope_environments=experience.scope_environments,
            scope_agents=experience.scope_agents,
            scope_users=experience.scope_users,
            embedding__isnull=False,
        )
        .exclude(pk=experience.pk)
        .exclude(status__in=Experience.INACTIVE_STATUSES)
    )


def experience_neighbours(experience: Experience, *, limit: int) -> list[tuple[Experience, float]]:
    rows = (
        _scene_peers(experience)
        .defer("embedding", *_UNREAD)
        .annotate(distance=CosineDistance("embedding", experience.embedding))
        .order_by("distance")[:limit]
    )
    return [(row, 1 - row.distance) for row in rows]


def experience_dedup(*, experience_id: int, merge_advice=None) -> str:
    """Compare one experience with its neighbours: merge, propose, or leave it as new.

    `merge_advice(a, b) -> str | None` may combine two wordings (the LLM when configured).
    A wording already checked is not checked again (the task is sent again by beat, or twice).
    """
    for _attempt in range(3):
        experience = (
            Experience.objects.filter(
                pk=experience_id, merged_into__isnull=True, embedding__isnull=False
            )
            .exclude(status__in=Experience.INACTIVE_STATUSES)
            .defer(*_UNREAD)
            .annotate(due=Exists(ExperienceDedupDue.objects.filter(experience=OuterRef("pk"))))
            .first()
        )
        if experience is None:
            return "skipped"
        if not experience.due:
            return "already checked"
        if experience.kind != Experience.Kind.EPISODE:
            # A family's workflow and insights are re-induced in place as runs arrive
            # (experiences.services.families), never merged with a run's episode.
            _mark_checked(experience)
            return "family item"
        outcome = _dedup_once(experience, merge_advice)
        if outcome != "contended":
            _mark_checked(experience)
            return outcome
    return "contended"


def _substance(experience: Experience) -> str:
    return f"{experience.strategy} {experience.pitfall}".strip()


def _merge_was_undone(first: Experience, second: Experience) -> bool:
    """A person undid a merge of these two: never merge them automatically again (they get a
    proposal instead), however often their wording changes."""
    return ExperienceMerge.objects.filter(
        Q(survivor=first, absorbed=second) | Q(survivor=second, absorbed=first),
        undone_at__isnull=False,
    ).exists()


def dedup_due_mark(experiences: Iterable[Experience]) -> None:
    """Make a check due for these experiences' current wording (for a change the version does
    not show: a new vector). Merged ones are skipped."""
    now = timezone.now()
    ExperienceDedupDue.objects.bulk_create(
        [
            ExperienceDedupDue(experience_id=e.pk, version=e.version, since=now)
            for e in experiences
            if e.merged_into_id is None
        ],
        update_conflicts=True,
        unique_fields=["experience"],
        update_fields=["version", "since"],
    )


def _mark_checked(experience: Experience) -> None:
    # Only the wording this check read: an edit committed meanwhile bumped `version` and stays due.
    # (When the check merged into this row, its version moved on too: the merged wording is due.)
    ExperienceDedupDue.objects.filter(experience=experience, version=experience.version).delete()


def _dedup_once(experience: Experience, merge_advice) -> str:
    # Neighbours by scene (the vector), kept only where they also say much the same: two runs
    # of one scene that took different paths are two experiences, not a duplicate.
    neighbours = [
        (other, similarity)
        for other, similarity in experience_neighbours(
            experience, limit=settings.HINDSIGHT_DEDUP_NEIGHBOURS
        )
        if substance_overlap(_substance(experience), _substance(other))
        >= settings.HINDSIGHT_DEDUP_MIN_SUBSTANCE
    ]
    if not neighbours:
        return "new"
    nearest, similarity = neighbours[0]
    auto = similarity >= settings.HINDSIGHT_DEDUP_AUTO_THRESHOLD
    if auto and not _merge_was_undone(experience, nearest):
        survivor, absorbed = sorted((experience, nearest), key=lambda e: e.pk)
        advice = merge_advice(survivor, absorbed) if merge_advice else None
        try:
            experience_merge(
                survivor_id=survivor.pk,
                absorbed_id=absorbed.pk,
                similarity=similarity,
                kind=ExperienceMerge.Kind.AUTO,
                advice=advice,
            )
        except Conflict:
            return "contended"  # a concurrent merge moved one of them: look again
        # The survivor's merged wording is new: compare it with the library at once rather
        # than at the beat sweep's grace period (merges can chain: A+B may now match C).
        transaction.on_commit(partial(_publish_checks, [survivor.pk]), robust=True)
        return "merged"
    proposed = [
        (other, s) for other, s in neighbours if s >= settings.HINDSIGHT_DEDUP_PROPOSAL_THRESHOLD
    ]
    for other, s in proposed:
        first, second = sorted((experience.pk, other.pk))
        MergeProposal.objects.get_or_create(
            first_id=first,
            second_id=second,
            defaults={"project_id": experience.project_id, "similarity": round(s, 4)},
        )
    return "proposed" if proposed else "new"


# ---------------------------------------------------------------------------- the beat sweep


def dedup_due_checks(*, before):
    """The checks due for wordings written before `before`, oldest first (the `since` index)."""
    return (
        ExperienceDedupDue.objects.filter(
            since__lt=before,
            experience__merged_into__isnull=True,
            experience__embedding__isnull=False,
        )
        .exclude(experience__status__in=Experience.INACTIVE_STATUSES)
        .order_by("since")
    )


def experiences_due_for_dedup(*, limit: int) -> list[int]:
    """Experiences whose current wording was never checked, changed more than the grace period
    ago (a check sent on commit normally runs well within it), oldest first."""
    before = timezone.now() - timedelta(seconds=settings.HINDSIGHT_DEDUP_SWEEP_GRACE_SECONDS)
    return list(dedup_due_checks(before=before).values_list("experience_id", flat=True)[:limit])


def experience_dedup_enqueue_due(*, limit: int | None = None) -> int:
    """Beat: send a dedup check for each experience whose check is due; returns how many."""
    ids = experiences_due_for_dedup(limit=limit or settings.HINDSIGHT_DEDUP_SWEEP_BATCH)
    return _publish_checks(ids)


def _publish_checks(ids: list[int]) -> int:
    """Send a dedup check per id, failing fast when the broker is down (beat's sweep finds
    whatever was not sent: the checks stay due)."""
    from core.publish import tasks_publish

    return tasks_publish(DEDUP_TASK, [(experience_id,) for experience_id in ids])
