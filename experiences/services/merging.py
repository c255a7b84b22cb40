"""Merges of two experiences and their undo (dedup merges automatically, admins by hand).

A merge keeps the older row (ids that agents and people hold stay valid), takes the better
wording (`wording_rank`; or the wording given: an LLM's merge of both, or a person's) with what
describes it (its scene, and the replay, blame, calls and path it was written from: a row whose
advice is one run's and whose replay and `same_case_only` are another's is served wrongly),
unions the evidence, moves the provenance, and stores a snapshot of both rows so undo restores
them exactly. Rows are locked in id order, so two workers merging at once never merge into a
row that was just merged away, and never deadlock.
"""

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.services.audit import audit_event
from core.errors import Conflict, NotFound
from experiences.models import (
    Experience,
    ExperienceDedupDue,
    ExperienceMerge,
    ExperienceSource,
    MergeProposal,
)
from experiences.services.versions import version_record

# What a wording was written from, beside its scene: it goes where the wording goes.
_OF_THE_WORDING = ("replay", "blame", "calls", "same_case_only", "path")
STATUS_RANK = {"candidate": 0, "approved": 1, "promoted": 2}
SNAPSHOT_FIELDS = [
    "advice",
    "task",
    "summary",
    "request",
    "task_key",
    "keywords",
    "strategy",
    "pitfall",
    "task_type",
    "tools",
    "environment",
    "intent",
    "agent",
    "polarity",
    "status",
    "source",
    "scope_environments",
    "scope_agents",
    "scope_users",
    "support_count",
    "success_count",
    "failure_count",
    "upvotes",
    "downvotes",
    "version",
    "embedding_model",
    *_OF_THE_WORDING,
]


def _snapshot(experience: Experience) -> dict[str, Any]:
    data = {name: getattr(experience, name) for name in SNAPSHOT_FIELDS}
    data["evidence_at"] = experience.evidence_at.isoformat()
    data["embedding"] = (
        [float(v) for v in experience.embedding] if experience.embedding is not None else None
    )
    return data


def _restore(experience: Experience, data: dict[str, Any]) -> None:
    for name in SNAPSHOT_FIELDS:
        if name in data:  # snapshots taken before a field existed lack it
            setattr(experience, name, data[name])
    experience.evidence_at = data["evidence_at"]
    experience.embedding = data["embedding"]


def specificity(experience: Experience) -> tuple[int, int]:
    """More tools and environment detail is more specific; then the longer advice."""
    detail = (
        len(set(experience.tools))
        + len(set(experience.environment))
        + (1 if experience.intent else 0)
    )
    return detail, len(experience.advice)


def wording_rank(experience: Experience) -> tuple[bool, int, int]:
    """Which of two wordings a merge keeps: one that teaches other cases before one served only
    as its own case's replay (`same_case_only`: a run of a case that handed it to a person,
    merged with a run of the same case that answered itself, made the hand-off recipe the row's
    advice: "more tools" chose it); then the more specific."""
    return (not experience.same_case_only, *specificity(experience))


def _lock_pair(first_id: int, second_id: int) -> tuple[Experience, Experience]:
    rows = {
        e.pk: e
        for e in Experience.objects.select_for_update()
        .filter(pk__in=[first_id, second_id])
        .order_by("pk")
    }
    if len(rows) != 2:
        raise NotFound("one of the experiences no longer exists")
    return rows[first_id], rows[second_id]


def experience_merge(
    *,
    survivor_id: int,
    absorbed_id: int,
    similarity: float,
    kind: str,
    advice: str | None = None,
    user: User | None = None,
) -> ExperienceMerge:
    """Merge `absorbed` into `survivor`; `advice` is the wording to keep (default: the more
    specific of the two)."""
    with transaction.atomic():
        survivor, absorbed = _lock_pair(survivor_id, absorbed_id)
        if survivor.merged_into_id or absorbed.merged_into_id:
            raise Conflict("one of these experiences was already merged into another")
        if survivor.project_id != absorbed.project_id:
            raise Conflict("experiences of different projects cannot be merged")
        before: dict[str, Any] = {
            "survivor": _snapshot(survivor),
            "absorbed": _snapshot(absorbed),
            "moved_sources": [],
        }
        # The wording kept brings its scene along (summary, vector, strategy and pitfall); a
        # combined wording written by a person keeps the survivor's scene. The vector is the
        # scene's, so nothing is embedded here.
        if advice is None:
            winner = max((survivor, absorbed), key=wording_rank)
        else:
            winner = absorbed if advice == absorbed.advice else survivor
        advice = winner.advice if advice is None else advice
        if winner is absorbed:
            for name in ("summary", "request", "task", "task_key", "keywords", "strategy",
                         "pitfall", "embedding", "embedding_model", *_OF_THE_WORDING):  # fmt: skip
                setattr(survivor, name, getattr(absorbed, name))
        survivor.advice = advice
        survivor.tools = list(dict.fromkeys([*survivor.tools, *absorbed.tools]))
        survivor.environment = list(dict.fromkeys([*survivor.environment, *absorbed.environment]))
        for name in ("support_count", "success_count", "failure_count", "upvotes", "downvotes"):
            setattr(survivor, name, getattr(survivor, name) + getattr(absorbed, name))
        survivor.evidence_at = max(survivor.evidence_at, absorbed.evidence_at)
        if STATUS_RANK.get(absorbed.status, 0) > STATUS_RANK.get(survivor.status, 0):
            survivor.status = absorbed.status
        survivor.version += 1
        survivor.save()
        absorbed.merged_into = survivor
        absorbed.save(update_fields=["merged_into", "updated_at"])
        ExperienceDedupDue.objects.filter(experience=absorbed).delete()  # merged: nothing to check

        survivor_traces = set(survivor.sources.values_list("trace_id", flat=True))
        movable = list(
            absorbed.sources.exclude(trace_id__in=survivor_traces).values_list("pk", flat=True)
        )
        ExperienceSource.objects.filter(pk__in=movable).update(experience=survivor)
        before["moved_sources"] = movable

        merge = ExperienceMerge.objects.create(
            project_id=survivor.project_id,
            survivor=survivor,
            absorbed=absorbed,
            kind=kind,
            similarity=round(similarity, 4),
            before=before,
            merged_by=user if user is not None and user.is_authenticated else None,
        )
        _version_note(
            survivor, f"{kind} merge with experience {absorbed.pk} (similarity {similarity:.3f})"
        )
        _proposals_follow_merge(survivor, absorbed)
        audit_event(
            action=f"experience.merge.{kind}",
            object_type="experience",
            object_id=survivor.pk,
            project=survivor.project,
            user=user,
            before={
                "survivor": before["survivor"]["advice"],
                "absorbed_id": absorbed.pk,
                "absorbed": before["absorbed"]["advice"],
            },
            after={"advice": survivor.advice, "merge_id": merge.pk},
        )
    return merge


def _proposals_follow_merge(survivor: Experience, absorbed: Experience) -> None:
    """The pair's proposal is done; the absorbed one's other open proposals now concern the
    survivor (re-pointed, or closed when the survivor already has that pair)."""
    now = timezone.now()
    open_ = MergeProposal.objects.select_for_update().filter(status=MergeProposal.Status.OPEN)
    open_.filter(
        first__in=[survivor.pk, absorbed.pk], second__in=[survivor.pk, absorbed.pk]
    ).update(status=MergeProposal.Status.MERGED, decided_at=now)
    for proposal in open_.filter(Q(first=absorbed) | Q(second=absorbed)):
        other = proposal.second_id if proposal.first_id == absorbed.pk else proposal.first_id
        first, second = sorted((survivor.pk, other))
        MergeProposal.objects.get_or_create(
            first_id=first,
            second_id=second,
            defaults={"project_id": survivor.project_id, "similarity": proposal.similarity},
        )
        proposal.status, proposal.decided_at = MergeProposal.Status.MERGED, now
        proposal.save(update_fields=["status", "decided_at"])


def _version_note(experience: Experience, reason: str) -> None:
    version_record(experience, reason=reason)


def experience_merge_undo(*, merge_id: int, user: User | None = None) -> ExperienceMerge:
    """Restore both experiences and their provenance as they were before the merge."""
    with transaction.atomic():
        merge = ExperienceMerge.objects.select_for_update().filter(pk=merge_id).first()
        if merge is None:
            raise NotFound(f"merge {merge_id} not found")
        if merge.undone_at is not None:
            raise Conflict("this merge was already undone")
        survivor, absorbed = _lock_pair(merge.survivor_id, merge.absorbed_id)
        later = ExperienceMerge.objects.filter(
            survivor=survivor, pk__gt=merge.pk, undone_at__isnull=True
        )
        if later.exists():
            raise Conflict("undo the later merges into this experience first")
        _restore(survivor, merge.before["survivor"])
        _restore(absorbed, merge.before["absorbed"])
        absorbed.merged_into = None
        survivor.version = merge.before["survivor"]["version"] + 2  # a new version: the undo
        survivor.save()
        absorbed.save()
        # Both wordings were checked before the merge; a new check would merge them again.
        ExperienceDedupDue.objects.filter(experience__in=[survivor, absorbed]).delete()
        ExperienceSource.objects.filter(pk__in=merge.before["moved_sources"]).update(
            experience=absorbed
        )
        _version_note(survivor, f"undo of the merge with experience {absorbed.pk}")
        # A pair an admin once looked at goes back to the queue, to be decided again.
        MergeProposal.objects.filter(
            first_id=min(survivor.pk, absorbed.pk),
            second_id=max(survivor.pk, absorbed.pk),
            status=MergeProposal.Status.MERGED,
        ).update(status=MergeProposal.Status.OPEN, decided_at=None, decided_by=None)
        merge.undone_at = timezone.now()
        merge.save(update_fields=["undone_at"])
        audit_event(
            action="experience.merge.undo",
            object_type="experience",
            object_id=survivor.pk,
            project=survivor.project,
            user=user,
            after={"merge_id": merge.pk, "restored": absorbed.pk},
        )
    return merge
