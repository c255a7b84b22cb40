"""Curation pages: the experience library, one experience, the merge queue, the knowledge base.

Access works as on the trace pages (traces.views): a user sees the projects they belong to; another
project's objects are 404. Admins act (edit, scope, status, bulk, merge, undo, rebuild); reviewers
read and vote. Every view and every partial checks this itself, since a partial can be requested
on its own. Writes go through experiences.services, which audit them.
"""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from experiences import selectors
from experiences.forms import (
    BulkForm,
    ExperienceEditForm,
    ExperienceFilterForm,
    KbArticleForm,
    ProposalDecisionForm,
    ScopeForm,
    StatusForm,
    VoteForm,
)
from experiences.models import Experience, ExperienceMerge, KbArticle, MergeProposal
from experiences.services import curation, dedup, kb
from traces.errors import DomainError
from traces.http import AuthedRequest
from traces.selectors import ProjectAccess
from traces.views import (
    dashboard_for,
    page_cursor,
    project_page,
    redirect_to_next,
    render_page_or_partial,
)

PAGE_SIZE = 50
HISTORY_PAGE_SIZE = 20
LIBRARY = "experiences/library.html"
DETAIL = "experiences/detail.html"
MERGES = "experiences/merges.html"
KB = "experiences/kb.html"


# ---------------------------------------------------------------------------- access


def _access_to(request: AuthedRequest, project_id: int) -> ProjectAccess:
    return next(a for a in dashboard_for(request).accesses if a.project.pk == project_id)


def _get_experience_for_user(
    request: AuthedRequest, experience_id: int, *, light: bool = True
) -> tuple[Experience, ProjectAccess]:
    """An experience of one of the user's projects and the user's access there, or 404."""
    experience = selectors.experience_for_user(
        projects=dashboard_for(request).projects, experience_id=experience_id, light=light
    )
    if experience is None:
        raise Http404("experience not found")
    return experience, _access_to(request, experience.project_id)


def _get_proposal_for_user(
    request: AuthedRequest, proposal_id: int
) -> tuple[MergeProposal, ProjectAccess]:
    proposal = selectors.proposal_for_user(
        projects=dashboard_for(request).projects, proposal_id=proposal_id
    )
    if proposal is None:
        raise Http404("merge proposal not found")
    return proposal, _access_to(request, proposal.project_id)


def _get_merge_for_user(
    request: AuthedRequest, merge_id: int
) -> tuple[ExperienceMerge, ProjectAccess]:
    merge = selectors.merge_for_user(projects=dashboard_for(request).projects, merge_id=merge_id)
    if merge is None:
        raise Http404("merge not found")
    return merge, _access_to(request, merge.project_id)


def _get_article_for_user(
    request: AuthedRequest, article_id: int
) -> tuple[KbArticle, ProjectAccess]:
    article = selectors.kb_article_for_user(
        projects=dashboard_for(request).projects, article_id=article_id
    )
    if article is None:
        raise Http404("article not found")
    return article, _access_to(request, article.project_id)


def _forbidden(request: AuthedRequest) -> HttpResponse:
    if request.htmx:
        return HttpResponse("Only project admins can do this.", status=403)
    return render(request, "traces/forbidden.html", status=403)


def _say(request: AuthedRequest, error: str, success: str) -> None:
    if error:
        messages.error(request, error)
    else:
        messages.success(request, success)


# ---------------------------------------------------------------------------- library


@require_GET
@project_page()
def library(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = ExperienceFilterForm(request.GET)
    result = selectors.experience_library_page(
        project=access.project, filters=form.filters(), user=request.user,
        cursor=page_cursor(request), limit=PAGE_SIZE,
    )  # fmt: skip
    query = request.GET.copy()
    query.pop("cursor", None)
    context = {
        "form": form,
        "result": result,
        "query": query.urlencode(),
        "is_filtered": form.is_filtered(),
        "is_admin": access.is_admin,
    }
    return render_page_or_partial(request, LIBRARY, "results", context)


def _row(
    request: AuthedRequest, access: ProjectAccess, experience_id: int, **extra: Any
) -> HttpResponse:
    """One library row in its display state (after an inline change, or on cancel)."""
    experience = selectors.experience_for_user(
        projects=[access.project], experience_id=experience_id, light=True
    )
    if experience is None:
        raise Http404("experience not found")
    selectors.experience_mark_votes(user=request.user, experiences=[experience])
    context = {"experience": experience, "is_admin": access.is_admin, **extra}
    status = 409 if extra.get("error") else 200
    response = render(request, f"{LIBRARY}#row", context, status=status)
    response.headers["Vary"] = "HX-Request"
    return response


def _done(
    request: AuthedRequest, experience: Experience, access: ProjectAccess, error: str = ""
) -> HttpResponse:
    """After an action on one experience: its row for htmx, else back where the form was."""
    if request.htmx:
        return _row(request, access, experience.pk, error=error)
    if error:
        messages.error(request, error)
    return redirect_to_next(request, reverse("experiences:detail", args=[experience.pk]))


@require_GET
@login_required
def experience_row(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = _get_experience_for_user(request, experience_id)
    if not request.htmx:
        return redirect("experiences:detail", experience_id=experience.pk)
    return _row(request, access, experience.pk)


@require_http_methods(["GET", "POST"])
@login_required
def experience_edit(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = _get_experience_for_user(request, experience_id)
    if not access.is_admin:
        return _forbidden(request)
    if request.method == "GET":
        form = ExperienceEditForm.for_experience(experience)
        return _edit_form(request, experience, form)
    form = ExperienceEditForm(request.POST, experience_id=experience.pk)
    if not form.is_valid():
        return _edit_form(request, experience, form, status=422)
    try:
        curation.experience_edit(
            experience_id=experience.pk,
            advice=form.cleaned_data["advice"],
            scene=form.changed_scene(experience),
            user=request.user,
        )
    except DomainError as failure:
        return _done(request, experience, access, failure.detail)
    return _done(request, experience, access)


def _edit_form(
    request: AuthedRequest, experience: Experience, form: ExperienceEditForm, status: int = 200
):
    if not request.htmx:
        return render(
            request,
            "experiences/edit.html",
            {"experience": experience, "form": form},
            status=status,
        )
    return render(
        request, f"{LIBRARY}#row_edit", {"experience": experience, "form": form}, status=status
    )


@require_http_methods(["GET", "POST"])
@login_required
def experience_scope(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = _get_experience_for_user(request, experience_id)
    if not access.is_admin:
        return _forbidden(request)
    if request.method == "GET":
        return _scope_form(request, experience, ScopeForm.for_experience(experience))
    form = ScopeForm(request.POST, experience_id=experience.pk)
    if not form.is_valid():
        return _scope_form(request, experience, form, status=422)
    try:
        curation.experience_set_scope(
            experience_id=experience.pk, user=request.user, **form.cleaned_data
        )
    except DomainError as failure:
        return _done(request, experience, access, failure.detail)
    return _done(request, experience, access)


def _scope_form(request: AuthedRequest, experience: Experience, form: ScopeForm, status: int = 200):
    if not request.htmx:  # the detail page has the same form
        return redirect(reverse("experiences:detail", args=[experience.pk]) + "#scope")
    return render(
        request, f"{LIBRARY}#row_scope", {"experience": experience, "form": form}, status=status
    )


@require_POST
@login_required
def experience_status(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = _get_experience_for_user(request, experience_id)
    if not access.is_admin:
        return _forbidden(request)
    form = StatusForm(request.POST)
    if not form.is_valid():
        return _done(request, experience, access, "Choose one of the statuses.")
    try:
        curation.experience_set_status(
            experience_id=experience.pk, status=form.cleaned_data["status"], user=request.user
        )
    except DomainError as failure:
        return _done(request, experience, access, failure.detail)
    return _done(request, experience, access)


@require_POST
@login_required
def experience_vote(request: AuthedRequest, experience_id: int) -> HttpResponse:
    """Reviewers and admins alike: +1, -1, or 0 to withdraw their vote."""
    experience, access = _get_experience_for_user(request, experience_id)
    form = VoteForm(request.POST)
    if not form.is_valid():
        return _done(request, experience, access, "A vote is up, down or withdrawn.")
    try:
        curation.experience_vote(
            experience_id=experience.pk, user=request.user, value=form.cleaned_data["value"]
        )
    except DomainError as failure:
        return _done(request, experience, access, failure.detail)
    return _done(request, experience, access)


@require_POST
@project_page(admin=True)
def experience_bulk(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """One action on the selected rows; each row succeeds or is reported on its own."""
    form = BulkForm(request.POST)
    # the filters the list had, re-encoded: only a query string ever reaches the redirect
    back = (
        reverse("experiences:library") + "?" + QueryDict(request.POST.get("query", "")).urlencode()
    )
    if not form.is_valid():
        messages.error(request, "Select at least one experience and an action.")
        return redirect(back)
    ids = selectors.experiences_of_project(project=access.project, ids=form.cleaned_data["ids"])
    done, failed = _apply_to_each(ids, form.cleaned_data, request.user)
    _say_bulk(request, form.cleaned_data["action"], done, failed)
    return redirect(back)


def _apply_to_each(
    ids: list[int], data: dict[str, Any], user: User
) -> tuple[list[int], dict[int, str]]:
    done, failed = [], {}
    scope = {name: data[name] for name in ("environments", "agents", "users")}
    for experience_id in ids:
        try:
            if data["action"] == "scope":
                curation.experience_set_scope(experience_id=experience_id, user=user, **scope)
            else:
                status = {"approve": "approved", "archive": "archived"}[data["action"]]
                curation.experience_set_status(
                    experience_id=experience_id, status=status, user=user
                )
        except DomainError as failure:
            failed[experience_id] = failure.detail
            continue
        done.append(experience_id)
    return done, failed


def _say_bulk(request: AuthedRequest, action: str, done: list[int], failed: dict[int, str]) -> None:
    verb = {"approve": "approved", "archive": "archived", "scope": "given the new scope"}[action]
    if done:
        messages.success(request, f"{len(done)} experience{'s' if len(done) != 1 else ''} {verb}.")
    for experience_id, detail in failed.items():
        messages.warning(request, f"#{experience_id} left as it was: {detail}.")


# ---------------------------------------------------------------------------- detail


@require_GET
@login_required
def experience_detail(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = _get_experience_for_user(request, experience_id, light=False)
    detail = selectors.experience_detail(experience=experience, user=request.user)
    context = {
        "detail": detail,
        "experience": experience,
        "is_admin": access.is_admin,
        "edit_form": ExperienceEditForm.for_experience(experience),
        "scope_form": ScopeForm.for_experience(experience),
        "proposal_threshold": settings.HINDSIGHT_DEDUP_PROPOSAL_THRESHOLD,
    }
    return render(request, DETAIL, context)


# ---------------------------------------------------------------------------- merges


@require_GET
@project_page()
def merges(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    history = selectors.merge_history(
        project=access.project, cursor=page_cursor(request), limit=HISTORY_PAGE_SIZE
    )
    context = {"history": history, "is_admin": access.is_admin}
    if request.htmx and not request.htmx.boosted:
        return render_page_or_partial(request, MERGES, "history", context)
    queue = selectors.proposal_queue(project=access.project)
    return render(request, MERGES, {**context, "queue": queue})


@require_POST
@login_required
def proposal_decide(request: AuthedRequest, proposal_id: int) -> HttpResponse:
    proposal, access = _get_proposal_for_user(request, proposal_id)
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
    if not request.htmx:
        _say(request, error, _decided(proposal))
        return redirect("experiences:merges")
    return _proposal_card(request, proposal_id, access, error)


def _decided(proposal: MergeProposal) -> str:
    if proposal.status == MergeProposal.Status.MERGED:
        return f"Merged #{proposal.second_id} into #{proposal.first_id}."
    return f"Dismissed: #{proposal.first_id} and #{proposal.second_id} stay apart."


def _proposal_card(
    request: AuthedRequest, proposal_id: int, access: ProjectAccess, error: str
) -> HttpResponse:
    """The proposal's card after a decision: the outcome (with undo), or the form and the error."""
    proposal = selectors.proposal_for_user(projects=[access.project], proposal_id=proposal_id)
    if proposal is None:
        raise Http404("merge proposal not found")
    context = {
        "row": selectors.proposal_row(proposal),
        "merge": selectors.merge_of_proposal(proposal) if proposal.status == "merged" else None,
        "is_admin": access.is_admin,
        "error": error,
        "message": "" if error else _decided(proposal),
    }
    response = render(request, f"{MERGES}#proposal", context, status=409 if error else 200)
    if not error:
        response.headers["HX-Trigger"] = "merges-changed"  # the history below reloads itself
    return response


@require_POST
@login_required
def merge_undo(request: AuthedRequest, merge_id: int) -> HttpResponse:
    merge, access = _get_merge_for_user(request, merge_id)
    if not access.is_admin:
        return _forbidden(request)
    error = ""
    try:
        dedup.experience_merge_undo(merge_id=merge.pk, user=request.user)
    except DomainError as failure:
        error = failure.detail
    if not request.htmx:
        _say(request, error, f"Merge undone: #{merge.absorbed_id} is back on its own.")
        return redirect_to_next(request, reverse("experiences:merges"))
    row = selectors.merge_for_user(projects=[access.project], merge_id=merge.pk)
    context = {"merge": row, "is_admin": access.is_admin, "error": error}
    return render(request, f"{MERGES}#merge_row", context, status=409 if error else 200)


# ---------------------------------------------------------------------------- knowledge base


@require_GET
@project_page()
def kb_page(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    overview = selectors.kb_overview(project=access.project)
    context = {
        "kb": overview,
        "is_admin": access.is_admin,
        "llm_configured": bool(settings.OPENAI_BASE_URL),
        **_rebuild_context(access),
    }
    return render(request, KB, context)


def _rebuild_context(access: ProjectAccess) -> dict[str, Any]:
    try:
        return {"rebuild": kb.kb_rebuild_status(project=access.project)}
    except kb.KbRebuildUnavailable as failure:  # Redis down: the page still works
        return {"rebuild": None, "rebuild_unavailable": failure.detail}


@require_POST
@project_page(admin=True)
def kb_rebuild(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """Queue a rebuild in the worker (or find the one already queued); the page follows it."""
    try:
        rebuild, queued = kb.kb_rebuild_request(project=access.project, user=request.user)
    except kb.KbRebuildUnavailable as failure:
        messages.error(
            request, f"{failure.detail}; the articles stay as they are. Try again later."
        )
        return redirect("experiences:kb")
    if not queued:
        messages.info(
            request, f"A rebuild requested by {rebuild.requested_by} is already {rebuild.state}."
        )
    return redirect("experiences:kb")


@require_GET
@project_page()
def kb_rebuild_status(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The rebuild's progress, polled by the KB page while it is queued or running."""
    if not request.htmx:
        return redirect("experiences:kb")
    context = {"is_admin": access.is_admin, **_rebuild_context(access)}
    response = render(request, f"{KB}#rebuild", context)
    response.headers["Vary"] = "HX-Request"
    if context["rebuild"] is not None and context["rebuild"].state == kb.DONE:
        # Only a page that was polling asks. experiences.js reloads it to show the new articles,
        # unless an article is being edited there (a reload would lose the unsaved text).
        response.headers["HX-Trigger-After-Swap"] = "kb-rebuilt"
    return response


@require_http_methods(["GET", "POST"])
@login_required
def kb_article_edit(request: AuthedRequest, article_id: int) -> HttpResponse:
    article, access = _get_article_for_user(request, article_id)
    if not access.is_admin:
        return _forbidden(request)
    data = request.POST if request.method == "POST" else None
    form = KbArticleForm(data, initial={"title": article.title, "body": article.body})
    if request.method == "POST" and form.is_valid():
        article = kb.kb_article_edit(
            project=article.project, article_id=article.pk, user=request.user, **form.cleaned_data
        )
        if not request.htmx:
            return redirect(reverse("experiences:kb") + f"#article-{article.pk}")
        return render(request, f"{KB}#article", {"article": article, "is_admin": True})
    status = 422 if form.is_bound else 200
    template = f"{KB}#article_form" if request.htmx else "experiences/kb_edit.html"
    return render(request, template, {"article": article, "form": form}, status=status)


@require_GET
@project_page()
def kb_export(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The same files as GET /api/v1/kb/export, for people: Markdown (zip) or JSONL."""
    format = "jsonl" if request.GET.get("format") == "jsonl" else "markdown"
    content, content_type, name = kb.kb_export_file(project=access.project, format=format)
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@require_GET
@project_page()
def experience_stats(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The experience half of /stats/, loaded into that page by htmx (traces stays unaware)."""
    stats = selectors.experience_stats(project=access.project)
    return render(request, "experiences/stats_partial.html", {"stats": stats})
