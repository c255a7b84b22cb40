"""Access to one object of the user's projects (404 otherwise), and the 403 for non-admins."""

from collections.abc import Callable
from typing import Any

from django.http import HttpResponse
from django.shortcuts import render

from accounts.dashboard import dashboard_for, object_in_projects
from accounts.selectors.access import ProjectAccess
from core.http import AuthedRequest
from core.pages import wants_partial
from experiences.models import Experience, ExperienceMerge, KbArticle, MergeProposal


def _access_to(request: AuthedRequest, project_id: int) -> ProjectAccess:
    return next(a for a in dashboard_for(request).accesses if a.project.pk == project_id)


def object_of_user[T: (Experience, MergeProposal, ExperienceMerge, KbArticle)](
    request: AuthedRequest, find: Callable[..., T | None], what: str, **lookup: Any
) -> tuple[T, ProjectAccess]:
    """What `find` (a selector taking `projects=`) finds among the user's projects, with the
    user's access there; 404 when it finds nothing (accounts.dashboard.object_in_projects)."""
    found = object_in_projects(request, find, what, **lookup)
    return found, _access_to(request, found.project_id)


def _forbidden(request: AuthedRequest) -> HttpResponse:
    if wants_partial(request):
        return HttpResponse("Only project admins can do this.", status=403)
    return render(request, "accounts/forbidden.html", status=403)
