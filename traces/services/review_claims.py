"""The review queue: a reviewer claims the next trajectory, finishes it, and gets the next one.

One open claim per trajectory is enforced by a partial unique constraint, so two reviewers
claiming at the same moment never hold the same trajectory; a lapsed claim is released by the
next claim, so nothing stays stuck behind a reviewer who walked away.
"""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Project
from accounts.services.audit import audit_event
from core.errors import Conflict, InvalidInput
from traces.models import ReviewClaim
from traces.selectors.queue import claim_open_for, queue_candidates
from traces.services.labels import AcceptResult, trace_accept_all, trace_accept_undo

CLAIM_ATTEMPTS = 5


def claims_release_lapsed(*, project: Project) -> int:
    return ReviewClaim.objects.filter(
        project=project, finished_at__isnull=True, released_at__isnull=True,
        expires_at__lte=timezone.now(),
    ).update(released_at=timezone.now())  # fmt: skip


def claim_next(*, project: Project, user: User) -> ReviewClaim | None:
    """The user's live claim, else a new claim on the most urgent unclaimed trajectory."""
    current = claim_open_for(user=user, project=project)
    if current is not None:
        return current
    claims_release_lapsed(project=project)
    for _ in range(CLAIM_ATTEMPTS):
        trace = queue_candidates(project=project, user=user).only("pk").first()
        if trace is None:
            return None
        now = timezone.now()
        try:
            with transaction.atomic():
                return ReviewClaim.objects.create(
                    project=project,
                    trace=trace,
                    user=user,
                    expires_at=now + timedelta(minutes=settings.HINDSIGHT_CLAIM_MINUTES),
                )
        except IntegrityError:
            continue  # another reviewer took it a moment ago: try the next one
    return None


def claim_finish(*, claim: ReviewClaim, user: User, seen_versions: dict[int, int]) -> AcceptResult:
    """Confirm the remaining machine labels the reviewer saw, and close the claim."""
    with transaction.atomic():
        claim = (
            ReviewClaim.objects.select_for_update()
            .select_related("trace__project")
            .get(pk=claim.pk)
        )
        if claim.user_id != user.pk:
            raise Conflict("this claim belongs to another reviewer")
        taken = ReviewClaim.objects.filter(
            trace=claim.trace, finished_at__isnull=True, released_at__isnull=True
        ).exclude(pk=claim.pk)
        if taken.exists():
            raise Conflict("your claim lapsed and another reviewer has this trajectory now")
        result = trace_accept_all(trace=claim.trace, seen_versions=seen_versions, user=user)
        if claim.finished_at is None:
            claim.finished_at = timezone.now()
            claim.accepted_steps = {str(i): was for i, was in result.was.items()}
            claim.save(update_fields=["finished_at", "accepted_steps"])
        audit_event(
            action="queue.finish",
            object_type="trace",
            object_id=claim.trace_id,
            project=claim.project,
            user=user,
            after={"accepted": len(result.accepted), "skipped": result.skipped},
        )
    return result


def claim_last_finished(*, user: User, projects) -> ReviewClaim | None:  # noqa: ANN001
    """The user's latest Finish that can still be undone (HINDSIGHT_FINISH_UNDO_MINUTES)."""
    since = timezone.now() - timedelta(minutes=settings.HINDSIGHT_FINISH_UNDO_MINUTES)
    return (
        ReviewClaim.objects.filter(
            user=user, project__in=projects, finished_at__gte=since, finish_undone_at__isnull=True
        )
        .select_related("trace", "project")
        .order_by("-finished_at")
        .first()
    )


def claim_finish_undo(*, claim: ReviewClaim, user: User) -> tuple[ReviewClaim, list[int]]:
    """Undo a Finish: the labels it accepted as is go back to the machine (those changed since
    stay), and the trajectory is the reviewer's again for HINDSIGHT_CLAIM_MINUTES (the one the
    queue handed them next goes back to the queue). The claim and the step indexes given
    back."""
    with transaction.atomic():
        claim = (
            ReviewClaim.objects.select_for_update()
            .select_related("trace__project")
            .get(pk=claim.pk)
        )
        now = timezone.now()
        if claim.user_id != user.pk:
            raise Conflict("this claim belongs to another reviewer")
        if claim.finished_at is None or claim.finish_undone_at is not None:
            raise Conflict("this trajectory is not finished: there is nothing to undo")
        if now - claim.finished_at > timedelta(minutes=settings.HINDSIGHT_FINISH_UNDO_MINUTES):
            raise Conflict(
                f"a Finish can be undone for {settings.HINDSIGHT_FINISH_UNDO_MINUTES} minutes; "
                "relabel the steps one by one instead"
            )
        taken = ReviewClaim.objects.filter(
            trace=claim.trace, finished_at__isnull=True, released_at__isnull=True
        )
        if taken.exists():
            raise Conflict("another reviewer has this trajectory now; relabel the steps instead")
        restored = trace_accept_undo(
            trace=claim.trace,
            was={int(i): was for i, was in claim.accepted_steps.items()},
            user=user,
        )
        # One trajectory at a time: the one the queue handed out next goes back to it.
        ReviewClaim.objects.filter(
            user=user, project=claim.project, finished_at__isnull=True, released_at__isnull=True
        ).update(released_at=now)
        claim.finished_at = None
        claim.finish_undone_at = now
        claim.expires_at = now + timedelta(minutes=settings.HINDSIGHT_CLAIM_MINUTES)
        try:
            with transaction.atomic():
                claim.save(update_fields=["finished_at", "finish_undone_at", "expires_at"])
        except IntegrityError as taken_now:  # claimed by another reviewer a moment ago
            raise Conflict(
                "another reviewer has this trajectory now; relabel the steps instead"
            ) from taken_now
        audit_event(
            action="queue.finish_undo",
            object_type="trace",
            object_id=claim.trace_id,
            project=claim.project,
            user=user,
            after={"restored": len(restored)},
        )
    return claim, restored


def claim_release(*, claim: ReviewClaim) -> None:
    ReviewClaim.objects.filter(
        pk=claim.pk, released_at__isnull=True, finished_at__isnull=True
    ).update(released_at=timezone.now())


GUIDELINES_MAX_CHARS = 10_000


def project_set_guidelines(*, project: Project, text: str, user: User) -> Project:
    """An admin's guidelines for the project's reviewers (plain text, shown on /queue/)."""
    text = text.replace("\r\n", "\n").strip()
    if len(text) > GUIDELINES_MAX_CHARS:
        raise InvalidInput(f"guidelines are at most {GUIDELINES_MAX_CHARS:,} characters")
    with transaction.atomic():
        project = Project.objects.select_for_update().get(pk=project.pk)
        before = project.review_guidelines
        if before == text:
            return project
        project.review_guidelines = text
        project.full_clean(validate_unique=False)
        project.save(update_fields=["review_guidelines"])
        audit_event(
            action="project.guidelines",
            object_type="project",
            object_id=project.pk,
            project=project,
            user=user,
            before={"guidelines": before},
            after={"guidelines": text},
        )
    return project
