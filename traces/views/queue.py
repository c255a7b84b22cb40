"""The review queue: its overview, claiming the next trace, finishing or releasing a claim."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from accounts.dashboard import dashboard_for, object_in_projects, project_page
from accounts.selectors.access import ProjectAccess
from core.errors import DomainError
from core.http import AuthedRequest
from core.pages import navigate, query_without_cursor, render_page_or_partial, wants_partial
from core.pagination import decode_rank_cursor
from traces.forms import QueueFilterForm
from traces.models import ReviewClaim
from traces.selectors.inspector import parse_label_versions
from traces.selectors.queue import (
    claim_of_user,
    claim_open_for,
    queue_page,
    queue_reason_of,
)
from traces.selectors.review_backlog import review_backlog
from traces.services import review_claims
from traces.templatetags.times import FORMATS
from traces.views.inspector import _say_accepted, accept_asked_first

PAGE_SIZE = 20


def _rank_cursor(request: AuthedRequest) -> str | None:
    """The page cursor if it is well-formed; a mangled one shows the first page."""
    cursor = request.GET.get("cursor") or None
    if cursor is None:
        return None
    try:
        decode_rank_cursor(cursor)
    except DomainError:
        return None
    return cursor


@require_GET
@project_page()
def queue(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = QueueFilterForm(request.GET)
    filters = form.filters()
    result = queue_page(
        project=access.project, user=request.user, filters=filters,
        cursor=_rank_cursor(request), limit=PAGE_SIZE,
    )  # fmt: skip
    context = {
        "form": form,
        "is_filtered": filters.is_filtered,
        "result": result,
        "query": query_without_cursor(request),
        "claim": claim_open_for(user=request.user, project=access.project),
        "guidelines": access.project.review_guidelines,
        "is_admin": access.is_admin,
    }
    if not wants_partial(request):  # the machine review's backlog sits outside the results
        context["backlog"] = review_backlog(project=access.project)
    return render_page_or_partial(request, "traces/queue.html", "results", context)


@require_POST
@project_page(admin=True)
def queue_guidelines(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    text = request.POST.get("guidelines", "")
    try:
        review_claims.project_set_guidelines(project=access.project, text=text, user=request.user)
    except DomainError as failure:
        messages.error(request, f"Guidelines not saved: {failure.detail}.")
    else:
        messages.success(request, "Guidelines saved." if text.strip() else "Guidelines removed.")
    return redirect("traces:queue")


@require_POST
@project_page()
def queue_claim(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    claim = review_claims.claim_next(project=access.project, user=request.user)
    if claim is None:
        messages.success(request, "The queue is empty: nothing needs a person right now.")
        return redirect("traces:queue")
    return redirect(_claimed_url(claim))


def _claimed_url(claim: ReviewClaim) -> str:
    """The claimed trajectory's page, at the step its queue reason points at."""
    look_at = queue_reason_of(claim.trace).look_at  # type: ignore[attr-defined]
    url = reverse("traces:detail", args=[claim.trace_id])
    return url if look_at is None else f"{url}#step-{look_at}"


UNDO_FINISH_TAG = "undo-finish"
TIME_FORMAT = FORMATS["time"]  # the pages' one form of an hour


def _get_claim_for_user(request: AuthedRequest, claim_id: int) -> ReviewClaim:
    """One of the user's own claims, or 404 (another reviewer's is not found either)."""
    return object_in_projects(request, claim_of_user, "claim", claim_id=claim_id, user=request.user)


@require_POST
@login_required
def queue_finish(request: AuthedRequest, claim_id: int) -> HttpResponse:
    claim = _get_claim_for_user(request, claim_id)
    seen = parse_label_versions(request.POST.get("versions", ""))
    asking = accept_asked_first(request, trace=claim.trace, seen=seen, finishing=True)
    if asking is not None:
        return asking
    url = reverse("traces:queue")
    try:
        result = review_claims.claim_finish(claim=claim, user=request.user, seen_versions=seen)
    except DomainError as failure:
        messages.error(request, failure.detail)
    else:
        _say_accepted(request, result)
        messages.info(
            request,
            f"Trajectory #{claim.trace_id} finished.",
            extra_tags=UNDO_FINISH_TAG,  # base.html adds the Undo button to this one
        )
        following = review_claims.claim_next(project=claim.project, user=request.user)
        if following is None:
            messages.success(request, "That was the last one: the queue is empty.")
        else:
            url = _claimed_url(following)
    # htmx posts it after its confirmation (the Ctrl+Enter path): navigate the whole page.
    return navigate(request, url)


@require_POST
@login_required
def queue_finish_undo(request: AuthedRequest) -> HttpResponse:
    """Undo the reviewer's latest Finish (within HINDSIGHT_FINISH_UNDO_MINUTES): back to it."""
    claim = review_claims.claim_last_finished(
        user=request.user, projects=dashboard_for(request).projects
    )
    if claim is None:
        messages.error(request, "There is no Finish of yours left to undo.")
        return redirect("traces:queue")
    try:
        claim, restored = review_claims.claim_finish_undo(claim=claim, user=request.user)
    except DomainError as failure:
        messages.error(request, failure.detail)
        return redirect("traces:queue")
    given_back = f"{len(restored)} label{'s' if len(restored) != 1 else ''}"
    messages.success(
        request,
        f"Finish undone: {given_back} of #{claim.trace_id} are machine labels again, and the "
        f"trajectory is yours until {timezone.localtime(claim.expires_at):{TIME_FORMAT}}.",
    )
    return redirect("traces:detail", claim.trace_id)


@require_POST
@login_required
def queue_release(request: AuthedRequest, claim_id: int) -> HttpResponse:
    review_claims.claim_release(claim=_get_claim_for_user(request, claim_id))
    return redirect("traces:queue")
