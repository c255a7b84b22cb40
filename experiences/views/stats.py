from django.http import HttpResponse
from django.views.decorators.http import require_GET

from accounts.dashboard import project_page
from accounts.selectors.access import ProjectAccess
from core.http import AuthedRequest
from core.pages import render_page_or_partial
from experiences import selectors


@require_GET
@project_page()
def experience_stats(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The experience half of /stats/: loaded into that page by htmx (traces stays unaware),
    or a page of its own (the link that /stats/ shows without JavaScript)."""
    stats = selectors.experience_stats(project=access.project)
    return render_page_or_partial(request, "experiences/stats.html", "charts", {"stats": stats})
