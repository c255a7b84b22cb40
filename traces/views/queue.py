"""The review queue: its overview, claiming the next trace, finishing or releasing a claim."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from traces import selectors
from traces.errors import DomainError
from traces.http import AuthedRequest
from traces.models import ReviewClaim
from traces.selectors import ProjectAccess
from traces.services import review_claims
from traces.views.common import dashboard_for, project_page
from traces.views.inspector import _say_accepted


@require_GET
@project_page()
def queue(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    overview = selectors.queue_overview(project=access.project, user=request.user)
    claim = selectors.claim_open_for(user=request.user, project=access.project)
    return render(request, "traces/queue.html", {**overview, "claim": claim})


@require_POST
@project_page()
def queue_claim(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    claim = review_claims.claim_next(project=access.project, user=request.user)
    if claim is None:
        messages.success(request, "The queue is empty: nothing needs a person right now.")
        return redirect("traces:queue")
    return redirect("traces:detail", trace_id=claim.trace_id)


def _get_claim_for_user(request: AuthedRequest, claim_id: int) -> ReviewClaim:
    claim = (
        ReviewClaim.objects.filter(
            pk=claim_id, user=request.user, project__in=dashboard_for(request).projects
        )
        .select_related("trace", "project")
        .first()
    )
    if claim is None:
        raise Http404("claim not found")
    return claim


@require_POST
@login_required
def queue_finish(request: AuthedRequest, claim_id: int) -> HttpResponse:
    claim = _get_claim_for_user(request, claim_id)
    seen = selectors.parse_label_versions(request.POST.get("versions", ""))
    url = reverse("traces:queue")
    try:
        result = review_claims.claim_finish(claim=claim, user=request.user, seen_versions=seen)
    except DomainError as failure:
        messages.error(request, failure.detail)
    else:
        _say_accepted(request, result)
        following = review_claims.claim_next(project=claim.project, user=request.user)
        if following is None:
            messages.success(request, "That was the last one: the queue is empty.")
        else:
            url = reverse("traces:detail", args=[following.trace_id])
    # htmx posts it after its confirmation (the Ctrl+Enter path): navigate the whole page.
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_POST
@login_required
def queue_release(request: AuthedRequest, claim_id: int) -> HttpResponse:
    review_claims.claim_release(claim=_get_claim_for_user(request, claim_id))
    return redirect("traces:queue")
