from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.http import AuthedRequest
from experiences import selectors
from traces.selectors.access import ProjectAccess
from traces.views.common import project_page


@require_GET
@project_page()
def experience_stats(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The experience half of /stats/: loaded into that page by htmx (traces stays unaware),
    or a page of its own (the link that /stats/ shows without JavaScript)."""
    stats = selectors.experience_stats(project=access.project)
    template = "experiences/stats_partial.html" if request.htmx else "experiences/stats.html"
    response = render(request, template, {"stats": stats})
    response.headers["Vary"] = "HX-Request"
    return response
