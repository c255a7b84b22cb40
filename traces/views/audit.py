from django.http import HttpResponse
from django.views.decorators.http import require_GET

from traces import selectors
from traces.forms import AuditFilterForm
from traces.http import AuthedRequest
from traces.selectors import ProjectAccess
from traces.views.common import page_cursor, project_page, render_page_or_partial


@require_GET
@project_page(admin=True)
def audit(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = AuditFilterForm(request.GET)
    page = selectors.audit_list(
        project=access.project, cursor=page_cursor(request), **form.values()
    )
    query = request.GET.copy()
    query.pop("cursor", None)
    context = {"form": form, "page": page, "query": query.urlencode()}
    return render_page_or_partial(request, "traces/audit.html", "results", context)
