from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from traces import selectors
from traces.http import AuthedRequest
from traces.selectors import ProjectAccess
from traces.views.common import project_page


@require_GET
@project_page()
def stats(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    return render(
        request, "traces/stats.html", {"stats": selectors.project_stats(project=access.project)}
    )
