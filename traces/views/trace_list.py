from django.http import HttpResponse
from django.views.decorators.http import require_GET

from traces import selectors
from traces.forms import TraceFilterForm
from traces.http import AuthedRequest
from traces.known_values import trace_known_values
from traces.selectors import ProjectAccess
from traces.views.common import (
    page_cursor,
    project_page,
    query_without_cursor,
    render_page_or_partial,
)

PAGE_SIZE = 50


@require_GET
@project_page()
def trace_list(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = TraceFilterForm(request.GET)
    result = selectors.trace_list_page(
        project=access.project,
        filters=form.filters(),
        label_source=form.selected_label_source(),
        cursor=page_cursor(request),
        limit=PAGE_SIZE,
    )
    context = {
        "form": form,
        "result": result,
        "query": query_without_cursor(request),
        "is_filtered": form.is_filtered(),
        "api_url": request.build_absolute_uri("/api/v1/"),
    }
    if not request.htmx:  # the filters' <datalist>s sit outside the results partial
        context["known"] = trace_known_values(project=access.project)
    return render_page_or_partial(request, "traces/list.html", "results", context)
