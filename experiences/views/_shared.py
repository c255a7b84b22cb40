"""Access to one object of the user's projects (404 otherwise), and the 403 for non-admins."""

from django.http import Http404, HttpResponse
from django.shortcuts import render

from accounts.dashboard import dashboard_for
from accounts.selectors.access import ProjectAccess
from core.http import AuthedRequest
from core.pages import wants_partial
from experiences import selectors
from experiences.models import Experience, ExperienceMerge, KbArticle, MergeProposal


def _access_to(request: AuthedRequest, project_id: int) -> ProjectAccess:
    return next(a for a in dashboard_for(request).accesses if a.project.pk == project_id)


def _of_the_user[T: (Experience, MergeProposal, ExperienceMerge, KbArticle)](
    request: AuthedRequest, found: T | None, what: str
) -> tuple[T, ProjectAccess]:
    """What a selector found among the user's projects, with the user's access there; 404 when
    it found nothing (another project's object is not found either)."""
    if found is None:
        raise Http404(f"{what} not found")
    return found, _access_to(request, found.project_id)


def _get_experience_for_user(
    request: AuthedRequest, experience_id: int, *, light: bool = True
) -> tuple[Experience, ProjectAccess]:
    projects = dashboard_for(request).projects
    found = selectors.experience_for_user(
        projects=projects, experience_id=experience_id, light=light
    )
    return _of_the_user(request, found, "experience")


def _get_proposal_for_user(
    request: AuthedRequest, proposal_id: int
) -> tuple[MergeProposal, ProjectAccess]:
    projects = dashboard_for(request).projects
    found = selectors.proposal_for_user(projects=projects, proposal_id=proposal_id)
    return _of_the_user(request, found, "merge proposal")


def _get_merge_for_user(
    request: AuthedRequest, merge_id: int
) -> tuple[ExperienceMerge, ProjectAccess]:
    projects = dashboard_for(request).projects
    found = selectors.merge_for_user(projects=projects, merge_id=merge_id)
    return _of_the_user(request, found, "merge")


def _get_article_for_user(
    request: AuthedRequest, article_id: int
) -> tuple[KbArticle, ProjectAccess]:
    projects = dashboard_for(request).projects
    found = selectors.kb_article_for_user(projects=projects, article_id=article_id)
    return _of_the_user(request, found, "article")


def _forbidden(request: AuthedRequest) -> HttpResponse:
    if wants_partial(request):
        return HttpResponse("Only project admins can do this.", status=403)
    return render(request, "accounts/forbidden.html", status=403)
