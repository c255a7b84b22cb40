"""What every dashboard page uses: the user's projects and the current one, the
project_page decorator, the page cursor, page-or-partial rendering, the redirect to `next`.
Views ask whether htmx made a request only through `wants_partial` (a test keeps it so).

The experience pages (experiences.views) use them too.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect

from core.errors import DomainError
from core.http import AuthedRequest
from core.pagination import decode_cursor
from traces.selectors.access import ProjectAccess, project_access_list

SESSION_PROJECT = "hindsight_project_id"


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
    accesses = project_access_list(user=request.user)
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


def query_without_cursor(request: AuthedRequest) -> str:
    """The list's filters as a query string, for its next-page and filter links."""
    query = request.GET.copy()
    query.pop("cursor", None)
    return query.urlencode()


def wants_partial(request: AuthedRequest) -> bool:
    """An htmx request for a part of a page. Not a boosted navigation, and not a history
    restore: after `hx-push-url`, a back button whose page is no longer in htmx's cache asks
    the URL again with HX-History-Restore-Request and must get the whole page."""
    htmx = request.htmx
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def navigate(request: AuthedRequest, url: str) -> HttpResponse:
    """After a POST, the whole page goes to `url`: htmx is told to (HX-Redirect; a 302 would be
    followed inside the element it swaps), a plain form gets the redirect."""
    return HttpResponseClientRedirect(url) if wants_partial(request) else redirect(url)


def vary_on_htmx(response: HttpResponse) -> HttpResponse:
    """For a GET whose answer depends on HX-Request: caches keep the two apart."""
    patch_vary_headers(response, ["HX-Request"])
    return response


def render_page_or_partial(
    request: AuthedRequest, template: str, partial: str, context: dict
) -> HttpResponse:
    """The partial for htmx, the whole page otherwise (never cached across the two)."""
    name = f"{template}#{partial}" if wants_partial(request) else template
    return vary_on_htmx(render(request, name, context))


def redirect_to_next(request: AuthedRequest, default: str) -> HttpResponse:
    """Post/redirect/get to the form's `next` when it is a local URL, else to `default`."""
    next_url = request.POST.get("next") or default
    if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}):
        next_url = default
    return redirect(next_url)
