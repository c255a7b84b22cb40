from django.http import HttpResponse
from django.views.decorators.http import require_GET

from traces import selectors
from traces.forms import AuditFilterForm
from traces.http import AuthedRequest
from traces.selectors import ProjectAccess
from traces.views.common import (
    page_cursor,
    project_page,
    query_without_cursor,
    render_page_or_partial,
)


@require_GET
@project_page(admin=True)
def audit(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = AuditFilterForm(request.GET)
    page = selectors.audit_list(
        project=access.project, cursor=page_cursor(request), **form.values()
    )
    context = {"form": form, "page": page, "query": query_without_cursor(request)}
    return render_page_or_partial(request, "traces/audit.html", "results", context)
