"""Whose dashboard a request is: the user's projects and the one being worked on, the
`project_page` decorator every project page is behind (the experience pages too), and how a
page finds one object of the user's projects (`found_in_projects`, `object_in_projects`)."""

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render

from accounts.selectors.access import ProjectAccess, project_access_list
from core.http import AuthedRequest

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
                return render(request, "accounts/no_project.html", status=403)
            if admin and not access.is_admin:
                return render(request, "accounts/forbidden.html", status=403)
            return view(request, access, *args, **kwargs)

        return wrapper

    return decorate


def found_in_projects[T](
    request: AuthedRequest, find: Callable[..., T | None], **lookup: Any
) -> T | None:
    """What `find` (a selector taking `projects=`) finds among the user's projects, else None:
    an object of another project is not found either."""
    return find(projects=dashboard_for(request).projects, **lookup)


def object_in_projects[T](
    request: AuthedRequest, find: Callable[..., T | None], what: str, **lookup: Any
) -> T:
    """The same, or 404 (never 403: the ids of other projects' objects stay unknown)."""
    found = found_in_projects(request, find, **lookup)
    if found is None:
        raise Http404(f"{what} not found")
    return found
