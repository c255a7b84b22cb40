"""The merge queue: proposals to decide (merge or dismiss), the history of merges and undo."""

from functools import partial
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.dashboard import project_page
from accounts.selectors.access import ProjectAccess
from core.errors import DomainError
from core.http import AuthedRequest
from core.pages import page_cursor, redirect_to_next, render_page_or_partial, wants_partial
from core.pagination import decode_rank_cursor
from experiences import selectors
from experiences.forms import ProposalDecisionForm
from experiences.models import MergeProposal
from experiences.services import curation, merging
from experiences.views._shared import _forbidden, object_of_user

HISTORY_PAGE_SIZE = 20
QUEUE_PAGE_SIZE = 20
MERGES = "experiences/merges.html"


def _say(request: AuthedRequest, error: str, success: str) -> None:
    if error:
        messages.error(request, error)
    else:
        messages.success(request, success)


def _queue_cursor(request: AuthedRequest) -> str:
    """The open proposals' page (`after`, kept by the decision forms); "" for the first."""
    cursor = request.POST.get("after") or request.GET.get("after") or ""
    if not cursor:
        return ""
    try:
        decode_rank_cursor(cursor)
    except DomainError:
        return ""
    return cursor


def _queue_context(request: AuthedRequest, access: ProjectAccess, **decided: Any) -> dict:
    after = _queue_cursor(request)
    queue = selectors.proposal_queue(
        project=access.project, cursor=after or None, limit=QUEUE_PAGE_SIZE
    )
    return {"queue": queue, "after": after, "is_admin": access.is_admin, "decided": decided}


@require_GET
@project_page()
def merges(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The page holds both sections; htmx asks for one (the queue with ?section=queue)."""
    queue = partial(_queue_context, request, access)
    history = partial(_history_context, request, access)
    if request.GET.get("section") == "queue":
        return render_page_or_partial(request, MERGES, "queue", queue(), page_context=history)
    return render_page_or_partial(request, MERGES, "history", history(), page_context=queue)


def _history_context(request: AuthedRequest, access: ProjectAccess) -> dict:
    history = selectors.merge_history(
        project=access.project, cursor=page_cursor(request), limit=HISTORY_PAGE_SIZE
    )
    return {"history": history, "is_admin": access.is_admin}


@require_POST
@login_required
def proposal_decide(request: AuthedRequest, proposal_id: int) -> HttpResponse:
    proposal, access = object_of_user(
        request, selectors.proposal_for_user, "merge proposal", proposal_id=proposal_id
    )
    if not access.is_admin:
        return _forbidden(request)
    form = ProposalDecisionForm(request.POST)
    error = (
        ""
        if form.is_valid()
        else " ".join(str(e) for errors in form.errors.values() for e in errors)
    )
    if not error:
        try:
            proposal = curation.proposal_decide(
                proposal_id=proposal.pk, user=request.user, **form.decision_kwargs()
            )
        except DomainError as failure:
            error = failure.detail
    if not wants_partial(request):
        _say(request, error, _decided(proposal))
        return redirect("experiences:merges")
    return _after_decision(request, proposal_id, access, error)


def _decided(proposal: MergeProposal) -> str:
    if proposal.status == MergeProposal.Status.MERGED:
        return f"Merged #{proposal.second_id} into #{proposal.first_id}."
    return f"Dismissed: #{proposal.first_id} and #{proposal.second_id} stay apart."


def _after_decision(
    request: AuthedRequest, proposal_id: int, access: ProjectAccess, error: str
) -> HttpResponse:
    """A wrong form: the card again, with the error. A decision made (or refused because the
    proposal is closed): the open proposals as they are now, the decided one on top (with undo),
    so no card of a pair a merge just closed or re-pointed stays to be clicked."""
    proposal = selectors.proposal_for_user(projects=[access.project], proposal_id=proposal_id)
    if proposal is None:
        raise Http404("merge proposal not found")
    decided = {
        "row": selectors.proposal_row(proposal),
        "merge": selectors.merge_of_proposal(proposal) if proposal.status == "merged" else None,
        "error": error,
        "message": "" if error else _decided(proposal),
    }
    status = 409 if error else 200
    if proposal.status == MergeProposal.Status.OPEN:
        context = {**decided, "is_admin": access.is_admin, "after": _queue_cursor(request)}
        return render(request, f"{MERGES}#proposal", context, status=status)
    context = _queue_context(request, access, **decided)
    response = render(request, f"{MERGES}#queue", context, status=status)
    response.headers["HX-Retarget"] = "#merge-queue"
    response.headers["HX-Reswap"] = "outerHTML"
    if not error:
        response.headers["HX-Trigger"] = "merges-changed"  # the history below reloads itself
    return response


@require_POST
@login_required
def merge_undo(request: AuthedRequest, merge_id: int) -> HttpResponse:
    merge, access = object_of_user(request, selectors.merge_for_user, "merge", merge_id=merge_id)
    if not access.is_admin:
        return _forbidden(request)
    error = ""
    try:
        merging.experience_merge_undo(merge_id=merge.pk, user=request.user)
    except DomainError as failure:
        error = failure.detail
    done = f"Merge undone: #{merge.absorbed_id} is back on its own."
    if not wants_partial(request):
        _say(request, error, done)
        return redirect_to_next(request, reverse("experiences:merges"))
    row = selectors.merge_for_user(projects=[access.project], merge_id=merge.pk)
    context = {
        "merge": row,
        "is_admin": access.is_admin,
        "error": error,
        "undone": "" if error else done,
    }
    response = render(request, f"{MERGES}#merge_row", context, status=409 if error else 200)
    if not error:
        response.headers["HX-Trigger"] = "proposals-changed"  # the pair may be back in the queue
    return response
