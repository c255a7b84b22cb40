"""The experience library: the list, inline edit / scope / status / vote on a row, bulk actions."""

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.dashboard import project_page
from accounts.selectors.access import ProjectAccess
from core.errors import DomainError
from core.http import AuthedRequest
from core.pages import (
    page_cursor,
    query_without_cursor,
    redirect_to_next,
    render_page_or_partial,
    vary_on_htmx,
    wants_partial,
)
from experiences import selectors
from experiences.forms import (
    BulkForm,
    ExperienceEditForm,
    ExperienceFilterForm,
    ScopeForm,
    StatusForm,
    VoteForm,
    unknown_signature,
)
from experiences.known_scopes import (
    UnknownValue,
    scope_known_values,
    scope_unknown_values,
    unknown_values_text,
)
from experiences.models import Experience
from experiences.services import curation
from experiences.views._shared import _forbidden, object_of_user

PAGE_SIZE = 50
LIBRARY = "experiences/library.html"


@require_GET
@project_page()
def library(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = ExperienceFilterForm(request.GET)
    result = selectors.experience_library_page(
        project=access.project, filters=form.filters(), user=request.user,
        cursor=page_cursor(request), limit=PAGE_SIZE,
    )  # fmt: skip
    context = {
        "form": form,
        "result": result,
        "query": query_without_cursor(request),
        "is_filtered": form.is_filtered(),
        "is_admin": access.is_admin,
    }
    if not wants_partial(request):  # the known values' <datalist>s sit outside the partial
        context["known"] = scope_known_values(project=access.project)
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
    return vary_on_htmx(render(request, f"{LIBRARY}#row", context, status=status))


def _done(
    request: AuthedRequest, experience: Experience, access: ProjectAccess, error: str = ""
) -> HttpResponse:
    """After an action on one experience: its row for htmx, else back where the form was."""
    if wants_partial(request):
        return _row(request, access, experience.pk, error=error)
    if error:
        messages.error(request, error)
    return redirect_to_next(request, reverse("experiences:detail", args=[experience.pk]))


@require_GET
@login_required
def experience_row(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = object_of_user(
        request, selectors.experience_for_user, "experience", experience_id=experience_id
    )
    if not wants_partial(request):
        return vary_on_htmx(redirect("experiences:detail", experience_id=experience.pk))
    return vary_on_htmx(_row(request, access, experience.pk))


@require_http_methods(["GET", "POST"])
@login_required
def experience_edit(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = object_of_user(
        request, selectors.experience_for_user, "experience", experience_id=experience_id
    )
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
    """The edit page, or for htmx the same form in the experience's row of the library."""
    context = {"experience": experience, "form": form}
    return render_page_or_partial(
        request, "experiences/edit.html", "row_edit", context, status=status
    )


@require_http_methods(["GET", "POST"])
@login_required
def experience_scope(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = object_of_user(
        request, selectors.experience_for_user, "experience", experience_id=experience_id
    )
    if not access.is_admin:
        return _forbidden(request)
    if request.method == "GET":
        return _scope_form(request, experience, ScopeForm.for_experience(experience))
    form = ScopeForm(request.POST, experience_id=experience.pk)
    if not form.is_valid():
        return _scope_form(request, experience, form, status=422)
    known = scope_known_values(project=access.project)
    unknown = scope_unknown_values(known=known, **form.scope())
    signature = unknown_signature(unknown)
    if wants_partial(request) and unknown and not form.is_unknown_allowed(signature):
        # Not saved yet: the row form again, with the warning and a "save anyway" button.
        return _scope_form(request, experience, form, status=422, unknown=unknown)
    try:
        curation.experience_set_scope(
            experience_id=experience.pk, user=request.user, **form.scope()
        )
    except DomainError as failure:
        return _done(request, experience, access, failure.detail)
    if unknown and not wants_partial(request):  # the detail page's form: saved, and said so loudly
        messages.warning(request, _unknown_saved(unknown))
    return _done(request, experience, access)


def _unknown_saved(unknown: list[UnknownValue]) -> str:
    return (
        f"Scope saved with values no trace or recall of this project used: "
        f"{unknown_values_text(unknown)}. Recall serves it only to agents that send them."
    )


def _scope_form(
    request: AuthedRequest,
    experience: Experience,
    form: ScopeForm,
    status: int = 200,
    unknown: list[UnknownValue] | None = None,
):
    if not wants_partial(request):  # the detail page has the same form
        url = reverse("experiences:detail", args=[experience.pk]) + "#scope"
        return vary_on_htmx(redirect(url))
    context = {
        "experience": experience,
        "form": form,
        "unknown": unknown or [],
        "unknown_signature": unknown_signature(unknown or []),
    }
    return vary_on_htmx(render(request, f"{LIBRARY}#row_scope", context, status=status))


@require_POST
@login_required
def experience_status(request: AuthedRequest, experience_id: int) -> HttpResponse:
    experience, access = object_of_user(
        request, selectors.experience_for_user, "experience", experience_id=experience_id
    )
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
    experience, access = object_of_user(
        request, selectors.experience_for_user, "experience", experience_id=experience_id
    )
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
    unknown: list[UnknownValue] = []
    if form.cleaned_data["action"] == "scope":
        known = scope_known_values(project=access.project)
        unknown = scope_unknown_values(known=known, **form.scope())
        if unknown and not form.is_unknown_allowed(unknown_signature(unknown)):
            return _bulk_scope_refused(request, form, ids=ids, unknown=unknown, back=back)
    done, failed = _apply_to_each(ids, form.cleaned_data, request.user)
    _say_bulk(request, form.cleaned_data["action"], done, failed)
    if unknown and done:
        messages.warning(request, _unknown_saved(unknown))
    return redirect(back)


def _bulk_scope_refused(
    request: AuthedRequest, form: BulkForm, *, ids: list[int], unknown: list[UnknownValue],
    back: str,
) -> HttpResponse:  # fmt: skip
    """As the row editor does: not saved until the person saw the warning and chose to."""
    context = {
        "form": form, "ids": ids, "unknown": unknown, "back": back,
        "unknown_signature": unknown_signature(unknown), "query": request.POST.get("query", ""),
    }  # fmt: skip
    return render(request, "experiences/bulk_scope_confirm.html", context, status=422)


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
