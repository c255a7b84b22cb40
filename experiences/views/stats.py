from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from experiences import selectors
from traces.http import AuthedRequest
from traces.selectors import ProjectAccess
from traces.views.common import project_page


@require_GET
@project_page()
def experience_stats(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The experience half of /stats/, loaded into that page by htmx (traces stays unaware)."""
    stats = selectors.experience_stats(project=access.project)
    return render(request, "experiences/stats_partial.html", {"stats": stats})
