"""What admins and reviewers do to experiences: lifecycle, scope, wording, votes, proposals.

Every change is audited. Lifecycle: candidate → approved → promoted → archived; a candidate or
an approved experience can be rejected; archived and rejected ones can be brought back to
candidate.
"""

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.services.audit import audit_event
from core.errors import Conflict, InvalidInput
from core.publish import tasks_publish_on_commit
from experiences.models import Experience, ExperienceVote, MergeProposal
from experiences.services.dedup import DEDUP_TASK
from experiences.services.merging import experience_merge
from experiences.services.versions import version_record
from traces.review.scene import scene_text

S = Experience.Status
TRANSITIONS: dict[str, set[str]] = {
    S.CANDIDATE: {S.APPROVED, S.REJECTED, S.ARCHIVED},
    S.APPROVED: {S.PROMOTED, S.ARCHIVED, S.REJECTED, S.CANDIDATE},
    S.PROMOTED: {S.APPROVED, S.ARCHIVED},
    S.ARCHIVED: {S.CANDIDATE, S.APPROVED},
    S.REJECTED: {S.CANDIDATE},
}


def _locked(experience_id: int) -> Experience:
    experience = Experience.objects.select_for_update().filter(pk=experience_id).first()
    if experience is None:
        raise InvalidInput(f"experience {experience_id} does not exist")
    if experience.merged_into_id:
        raise Conflict(f"experience {experience_id} was merged into {experience.merged_into_id}")
    return experience


def experience_set_status(*, experience_id: int, status: str, user: User) -> Experience:
    with transaction.atomic():
        experience = _locked(experience_id)
        if status == experience.status:
            return experience
        if status not in TRANSITIONS.get(experience.status, set()):
            allowed = ", ".join(sorted(TRANSITIONS.get(experience.status, set())))
            raise Conflict(f"a {experience.status} experience can become {allowed}; not {status}")
        before = experience.status
        experience.status = status
        experience.save(update_fields=["status", "updated_at"])
        audit_event(
            action="experience.status",
            object_type="experience",
            object_id=experience.pk,
            project=experience.project,
            user=user,
            before={"status": before},
            after={"status": status},
        )
    return experience


def experience_set_scope(
    *,
    experience_id: int,
    environments: list[str],
    agents: list[str],
    users: list[str],
    user: User,
) -> Experience:
    clean = [
        sorted({v.strip().lower() for v in environments if v.strip()}),
        sorted({v.strip() for v in agents if v.strip()}),
        sorted({v.strip() for v in users if v.strip()}),
    ]
    with transaction.atomic():
        experience = _locked(experience_id)
        before = [experience.scope_environments, experience.scope_agents, experience.scope_users]
        if before == clean:
            return experience
        experience.scope_environments, experience.scope_agents, experience.scope_users = clean
        experience.save(
            update_fields=["scope_environments", "scope_agents", "scope_users", "updated_at"]
        )
        names = ("environments", "agents", "users")
        audit_event(
            action="experience.scope",
            object_type="experience",
            object_id=experience.pk,
            project=experience.project,
            user=user,
            before=dict(zip(names, before, strict=True)),
            after=dict(zip(names, clean, strict=True)),
        )
    return experience


def _edited_scene_vector(experience_id: int, intent: str) -> tuple[str, list[float]] | None:
    """The vector of the scene with a new intent, computed before any row is locked (an
    embedding endpoint may take seconds): (the scene text it is for, the vector); None when the
    intent is the one it has."""
    from experiences.embeddings import embed_in_batches

    current = (
        Experience.objects.filter(pk=experience_id)
        .only("summary", "task", "intent", "request")
        .first()
    )
    if current is None:
        raise InvalidInput(f"experience {experience_id} does not exist")
    if current.intent == intent:
        return None
    text = scene_text(
        summary=current.summary or current.task, intent=intent, request=current.request
    )
    (vector,) = embed_in_batches([text])
    return text, vector


def experience_edit(
    *, experience_id: int, advice: str, user: User, scene: dict[str, Any] | None = None
) -> Experience:
    """A person rewrites the advice (maybe the scene): a new version, re-embedded, re-deduped.

    A new intent changes the scene, so its vector is computed first, then the row is locked and
    written; if the scene changed meanwhile (a merge brought another summary), it is computed
    again (at most three times)."""
    advice = advice.strip()
    if not advice:
        raise InvalidInput("advice must not be empty")
    scene = scene or {}
    for _attempt in range(3):
        embedded = (
            _edited_scene_vector(experience_id, scene["intent"]) if "intent" in scene else None
        )
        experience = _experience_edit_locked(experience_id, advice, user, scene, embedded)
        if experience is not None:
            return experience
    raise Conflict(f"experience {experience_id} kept changing while it was edited; try again")


def _experience_edit_locked(
    experience_id: int,
    advice: str,
    user: User,
    scene: dict[str, Any],
    embedded: tuple[str, list[float]] | None,
) -> Experience | None:
    """The write of `experience_edit` under the row lock; None when the scene the vector was
    computed for is no longer the experience's."""
    from experiences.embeddings import get_embedder

    with transaction.atomic():
        experience = _locked(experience_id)
        if "intent" in scene and scene["intent"] != experience.intent:
            wanted = scene_text(
                summary=experience.summary or experience.task,
                intent=scene["intent"],
                request=experience.request,
            )
            if embedded is None or embedded[0] != wanted:
                return None  # the scene changed since its vector was computed: again
        before = {"advice": experience.advice, **{k: getattr(experience, k) for k in scene}}
        for name in ("task_type", "intent", "agent"):
            if name in scene:
                setattr(experience, name, scene[name])
        for name in ("tools", "environment"):
            if name in scene:
                setattr(experience, name, [v.strip() for v in scene[name] if v.strip()])
        if advice == experience.advice and not scene:
            return experience
        experience.advice = advice
        if embedded is not None and scene["intent"] != before.get("intent"):
            # The vector is the scene's (summary and intent), not the advice's.
            experience.embedding = embedded[1]
            experience.embedding_model = get_embedder().model_name
        experience.source = Experience.Source.HUMAN
        experience.version += 1
        experience.save()
        version_record(experience, reason=f"edited by {user}")
        audit_event(
            action="experience.edit",
            object_type="experience",
            object_id=experience.pk,
            project=experience.project,
            user=user,
            before=before,
            after={"advice": advice, **{k: getattr(experience, k) for k in scene}},
        )
        tasks_publish_on_commit(DEDUP_TASK, [(experience.pk,)])
    return experience


def experience_vote(*, experience_id: int, user: User, value: int) -> Experience:
    """+1, -1, or 0 to withdraw; one vote per person, reflected in upvotes/downvotes."""
    if value not in (1, -1, 0):
        raise InvalidInput("a vote is +1, -1 or 0")
    with transaction.atomic():
        experience = _locked(experience_id)
        previous = ExperienceVote.objects.filter(experience=experience, user=user).first()
        old = previous.value if previous else 0
        if old == value:
            return experience
        up = (value == 1) - (old == 1)
        down = (value == -1) - (old == -1)
        Experience.objects.filter(pk=experience.pk).update(
            upvotes=F("upvotes") + up, downvotes=F("downvotes") + down
        )
        if value == 0:
            ExperienceVote.objects.filter(experience=experience, user=user).delete()
        else:
            ExperienceVote.objects.update_or_create(
                experience=experience, user=user, defaults={"value": value}
            )
        experience.refresh_from_db()
    return experience


def proposal_decide(
    *,
    proposal_id: int,
    user: User,
    merge: bool,
    advice: str | None = None,
    keep: str = "first",
) -> MergeProposal:
    """Merge (keeping `advice`, or the wording of `keep`) or dismiss a proposal."""
    with transaction.atomic():
        proposal = MergeProposal.objects.select_for_update().filter(pk=proposal_id).first()
        if proposal is None:
            raise InvalidInput(f"merge proposal {proposal_id} does not exist")
        if proposal.status != MergeProposal.Status.OPEN:
            raise Conflict(_why_closed(proposal))
        if merge:
            if advice is None:
                advice = (proposal.first if keep == "first" else proposal.second).advice
            experience_merge(
                survivor_id=proposal.first_id,
                absorbed_id=proposal.second_id,
                similarity=proposal.similarity,
                kind="manual",
                advice=advice,
                user=user,
            )
            proposal.status = MergeProposal.Status.MERGED
        else:
            proposal.status = MergeProposal.Status.DISMISSED
            audit_event(
                action="experience.proposal.dismiss",
                object_type="merge_proposal",
                object_id=proposal.pk,
                project=proposal.project,
                user=user,
                after={"first": proposal.first_id, "second": proposal.second_id},
            )
        proposal.decided_by = user
        proposal.decided_at = timezone.now()
        proposal.save(update_fields=["status", "decided_by", "decided_at"])
    return proposal


def _why_closed(proposal: MergeProposal) -> str:
    """Why a proposal can no longer be decided: decided already, or closed when one of its pair
    was merged into a third experience (the merge re-points the pair: see dedup)."""
    pair = (proposal.first_id, proposal.second_id)
    for experience in (proposal.first, proposal.second):
        into = experience.merged_into_id
        if into is None or into in pair:
            continue
        other = pair[1] if experience.pk == pair[0] else pair[0]
        first, second = sorted((into, other))
        instead = MergeProposal.objects.filter(
            first_id=first, second_id=second, status=MergeProposal.Status.OPEN
        ).exists()
        return f"#{experience.pk} was merged into #{into} meanwhile, so this pair is closed" + (
            f"; #{first} and #{second} are proposed instead" if instead else ""
        )
    return f"this proposal is already {proposal.status}"
