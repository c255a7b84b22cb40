"""Access to one object of the user's projects (404 otherwise), and the 403 for non-admins."""

from django.http import Http404, HttpResponse
from django.shortcuts import render

from core.http import AuthedRequest
from experiences import selectors
from experiences.models import Experience, ExperienceMerge, KbArticle, MergeProposal
from traces.selectors.access import ProjectAccess
from traces.views.common import dashboard_for


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
