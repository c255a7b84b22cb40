"""Dashboard pages: trace list, inspector and relabelling, queue, audit, settings, stats.

Every view and every partial checks access itself: a partial can be requested on its own. A user
sees only the projects they are a member of (superusers: all); another project's objects are 404.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from traces import selectors
from traces.errors import DomainError
from traces.forms import (
    ApiKeyForm,
    AuditFilterForm,
    MemberAddForm,
    MemberRoleForm,
    RelabelForm,
    TraceFilterForm,
)
from traces.http import AuthedRequest
from traces.models import ApiKey, Membership, ReviewClaim, Step, Trace
from traces.pagination import decode_cursor
from traces.selectors import ProjectAccess
from traces.services import api_keys, labels, members, review_claims
from traces.services.labels import LabelConflict

SESSION_PROJECT = "hindsight_project_id"
PAGE_SIZE = 50


# ---------------------------------------------------------------------------- access


@dataclass
class Dashboard:
    accesses: list[ProjectAccess]
    current: ProjectAccess | None
    projects: list = field(default_factory=list)


def dashboard_for(request: AuthedRequest) -> Dashboard:
    """The user's projects and the one being worked on (kept in the session); once per request."""
    cached = getattr(request, "_hindsight_dashboard", None)
    if cached is not None:
        return cached
    accesses = selectors.project_access_list(user=request.user)
    wanted = request.session.get(SESSION_PROJECT)
    current = next((a for a in accesses if a.project.pk == wanted), None)
    dashboard = Dashboard(
        accesses=accesses,
        current=current or (accesses[0] if accesses else None),
        projects=[a.project for a in accesses],
    )
    request._hindsight_dashboard = dashboard  # type: ignore[attr-defined]
    return dashboard


def project_page(*, admin: bool = False) -> Callable:
    """Login required, a current project required (admin role if `admin`); passes the access."""

    def decorate(view: Callable) -> Callable:
        @login_required
        @wraps(view)
        def wrapper(request: AuthedRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            access = dashboard_for(request).current
            if access is None:
                return render(request, "traces/no_project.html", status=403)
            if admin and not access.is_admin:
                return render(request, "traces/forbidden.html", status=403)
            return view(request, access, *args, **kwargs)

        return wrapper

    return decorate


def _get_trace_for_user(request: AuthedRequest, trace_id: int) -> Trace:
    """A trace of one of the user's projects, or 404 (never 403: ids of others stay unknown)."""
    trace = (
        Trace.objects.filter(pk=trace_id, project__in=dashboard_for(request).projects)
        .select_related("project")
        .first()
    )
    if trace is None:
        raise Http404("trace not found")
    return trace


def page_cursor(request: AuthedRequest) -> str | None:
    """The page cursor if it is well-formed; a mangled one shows the first page."""
    cursor = request.GET.get("cursor") or None
    if cursor is None:
        return None
    try:
        decode_cursor(cursor)
    except DomainError:
        return None
    return cursor


def render_page_or_partial(
    request: AuthedRequest, template: str, partial: str, context: dict
) -> HttpResponse:
    """The partial for htmx, the whole page otherwise (never cached across the two)."""
    name = f"{template}#{partial}" if request.htmx and not request.htmx.boosted else template
    response = render(request, name, context)
    response.headers["Vary"] = "HX-Request"
    return response


# ---------------------------------------------------------------------------- projects


@require_POST
@login_required
def project_switch(request: AuthedRequest) -> HttpResponse:
    wanted = int(request.POST.get("project") or 0)
    if any(a.project.pk == wanted for a in dashboard_for(request).accesses):
        request.session[SESSION_PROJECT] = wanted
    return redirect_to_next(request, reverse("traces:list"))


def redirect_to_next(request: AuthedRequest, default: str) -> HttpResponse:
    """Post/redirect/get to the form's `next` when it is a local URL, else to `default`."""
    next_url = request.POST.get("next") or default
    if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}):
        next_url = default
    return redirect(next_url)


# ---------------------------------------------------------------------------- traces


@require_GET
@project_page()
def trace_list(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = TraceFilterForm(request.GET)
    result = selectors.trace_list_page(
        project=access.project,
        filters=form.filters(),
        label_source=form.selected_label_source(),
        cursor=page_cursor(request),
        limit=PAGE_SIZE,
    )
    query = request.GET.copy()
    query.pop("cursor", None)
    context = {
        "form": form,
        "result": result,
        "query": query.urlencode(),
        "is_filtered": form.is_filtered(),
        "api_url": request.build_absolute_uri("/api/v1/"),
    }
    return render_page_or_partial(request, "traces/list.html", "results", context)


def _inspector_context(request: AuthedRequest, trace: Trace) -> dict[str, Any]:
    claim = selectors.claim_open_for(user=request.user, project=trace.project)
    return {
        "trace": trace,
        "steps": trace.steps.all(),
        "reviews": trace.reviews.all(),
        "is_heuristic": selectors.trace_is_heuristic(trace),
        "machine_versions": selectors.machine_label_versions(trace),
        "claim": claim if claim is not None and claim.trace_id == trace.pk else None,
        "labels": Step.Label.choices,
    }


@require_GET
@login_required
def trace_detail(request: AuthedRequest, trace_id: int) -> HttpResponse:
    trace = selectors.trace_inspect(trace_id=trace_id, projects=dashboard_for(request).projects)
    if trace is None:
        raise Http404("trace not found")
    return render(request, "traces/detail.html", _inspector_context(request, trace))


@require_GET
@login_required
def step_raw(request: AuthedRequest, trace_id: int, index: int) -> HttpResponse:
    trace = _get_trace_for_user(request, trace_id)
    step = Step.objects.filter(trace=trace, index=index).only("index", "observation_raw").first()
    if step is None:
        raise Http404("step not found")
    if not request.htmx:
        return HttpResponse(step.observation_raw, content_type="text/plain; charset=utf-8")
    return render(request, "traces/detail.html#raw", {"trace": trace, "step": step})


@require_POST
@login_required
def step_label(request: AuthedRequest, trace_id: int, index: int) -> HttpResponse:
    trace = _get_trace_for_user(request, trace_id)
    form = RelabelForm(request.POST)
    if not form.is_valid():
        return HttpResponse("label, reason or version is not valid", status=422)
    status, error = 200, ""
    try:
        labels.step_relabel(
            trace=trace, index=index, label=form.cleaned_data["label"],
            reason=form.cleaned_data["reason"], expected_version=form.cleaned_data["version"],
            user=request.user,
        )  # fmt: skip
    except LabelConflict as conflict:
        status, error = 409, conflict.detail
    except DomainError as failure:
        raise Http404(failure.detail) from None
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(f"{reverse('traces:detail', args=[trace.pk])}#step-{index}")
    step = selectors.step_for_trace(trace=trace, index=index)
    context = {"trace": trace, "step": step, "labels": Step.Label.choices, "conflict": error}
    return render(request, "traces/detail.html#step", context, status=status)


@require_POST
@login_required
def trace_accept(request: AuthedRequest, trace_id: int) -> HttpResponse:
    trace = _get_trace_for_user(request, trace_id)
    seen = selectors.parse_label_versions(request.POST.get("versions", ""))
    result = labels.trace_accept_all(trace=trace, seen_versions=seen, user=request.user)
    _say_accepted(request, result)
    url = reverse("traces:detail", args=[trace.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _say_accepted(request: AuthedRequest, result: labels.AcceptResult) -> None:
    messages.success(request, f"{len(result.accepted)} machine label(s) confirmed.")
    if result.skipped:
        skipped = ", ".join(str(i) for i in result.skipped)
        messages.warning(request, f"Changed by someone else meanwhile, left as is: step {skipped}.")


@require_GET
@login_required
def trace_compare(request: AuthedRequest) -> HttpResponse:
    ids = [request.GET.get("a", ""), request.GET.get("b", "")]
    if not all(i.isdigit() for i in ids):
        return render(request, "traces/compare_pick.html", {"a": ids[0], "b": ids[1]})
    projects = dashboard_for(request).projects
    pair = [selectors.trace_inspect(trace_id=int(i), projects=projects) for i in ids]
    if None in pair:
        raise Http404("trace not found")
    rows = selectors.steps_aligned(pair[0], pair[1])  # type: ignore[arg-type]
    return render(request, "traces/compare.html", {"a": pair[0], "b": pair[1], "rows": rows})


# ---------------------------------------------------------------------------- queue


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
    try:
        result = review_claims.claim_finish(claim=claim, user=request.user, seen_versions=seen)
    except DomainError as failure:
        messages.error(request, failure.detail)
        return redirect("traces:queue")
    _say_accepted(request, result)
    following = review_claims.claim_next(project=claim.project, user=request.user)
    if following is None:
        messages.success(request, "That was the last one: the queue is empty.")
        return redirect("traces:queue")
    return redirect("traces:detail", trace_id=following.trace_id)


@require_POST
@login_required
def queue_release(request: AuthedRequest, claim_id: int) -> HttpResponse:
    review_claims.claim_release(claim=_get_claim_for_user(request, claim_id))
    return redirect("traces:queue")


# ---------------------------------------------------------------------------- audit


@require_GET
@project_page(admin=True)
def audit(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = AuditFilterForm(request.GET)
    page = selectors.audit_list(
        project=access.project, cursor=page_cursor(request), **form.values()
    )
    query = request.GET.copy()
    query.pop("cursor", None)
    context = {"form": form, "page": page, "query": query.urlencode()}
    return render_page_or_partial(request, "traces/audit.html", "results", context)


# ---------------------------------------------------------------------------- settings


def _settings_context(access: ProjectAccess, **extra: Any) -> dict[str, Any]:
    return {
        "members": selectors.member_list(project=access.project),
        "keys": selectors.api_key_list(project=access.project),
        "key_form": extra.pop("key_form", None) or ApiKeyForm(),
        "member_form": extra.pop("member_form", None) or MemberAddForm(),
        "roles": Membership.Role.choices,
        **extra,
    }


@require_GET
@project_page(admin=True)
def project_settings(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    return render(request, "traces/settings.html", _settings_context(access))


@require_POST
@project_page(admin=True)
def api_key_create(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = ApiKeyForm(request.POST)
    if not form.is_valid():
        return render(request, "traces/settings.html", _settings_context(access, key_form=form))
    new = api_keys.api_key_create(
        project=access.project, scopes=form.cleaned_data["scopes"],
        name=form.cleaned_data["name"], user=request.user,
    )  # fmt: skip
    # No redirect here on purpose: the key is never stored, so only this response can show it.
    response = render(request, "traces/settings.html", _settings_context(access, new_key=new))
    response.headers["Cache-Control"] = "no-store"
    return response


@require_POST
@project_page(admin=True)
def api_key_revoke(request: AuthedRequest, access: ProjectAccess, key_id: int) -> HttpResponse:
    key = ApiKey.objects.filter(pk=key_id, project=access.project).first()
    if key is None:
        raise Http404("key not found")
    api_keys.api_key_revoke(key=key, user=request.user)
    messages.success(request, f"Key {key.prefix}… revoked.")
    return redirect("traces:settings")


@require_POST
@project_page(admin=True)
def member_add(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = MemberAddForm(request.POST)
    if form.is_valid():
        try:
            members.membership_add(project=access.project, actor=request.user, **form.cleaned_data)
            messages.success(request, f"{form.cleaned_data['username']} added.")
        except DomainError as failure:
            messages.error(request, failure.detail)
    else:
        messages.error(request, "Give a username and a role.")
    return redirect("traces:settings")


def _get_membership(access: ProjectAccess, membership_id: int) -> Membership:
    membership = (
        Membership.objects.filter(pk=membership_id, project=access.project)
        .select_related("user", "project")
        .first()
    )
    if membership is None:
        raise Http404("member not found")
    return membership


@require_POST
@project_page(admin=True)
def member_update(
    request: AuthedRequest, access: ProjectAccess, membership_id: int
) -> HttpResponse:
    membership = _get_membership(access, membership_id)
    try:
        if request.POST.get("remove"):
            members.membership_remove(membership=membership, actor=request.user)
        else:
            form = MemberRoleForm(request.POST)
            role = form.cleaned_data["role"] if form.is_valid() else ""
            members.membership_set_role(membership=membership, role=role, actor=request.user)
    except DomainError as failure:
        messages.error(request, failure.detail)
    return redirect("traces:settings")


# ---------------------------------------------------------------------------- stats


@require_GET
@project_page()
def stats(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    return render(
        request, "traces/stats.html", {"stats": selectors.project_stats(project=access.project)}
    )
