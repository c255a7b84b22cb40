from django.http import HttpResponse
from django.views.decorators.http import require_GET

from accounts.dashboard import project_page
from accounts.selectors.access import ProjectAccess
from core.http import AuthedRequest
from core.pages import page_cursor, query_without_cursor, render_page_or_partial, wants_partial
from traces.forms import TraceFilterForm
from traces.known_values import trace_known_values
from traces.selectors.trace_list import trace_list_page

PAGE_SIZE = 50


@require_GET
@project_page()
def trace_list(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    form = TraceFilterForm(request.GET)
    filters, label_source = form.filters(), form.selected_label_source()
    cursor = page_cursor(request)
    result = trace_list_page(
        project=access.project,
        filters=filters,
        label_source=label_source,
        cursor=cursor,
        limit=PAGE_SIZE,
        run_id=form.selected_run_id(),
    )
    context = {
        "form": form,
        "result": result,
        "newer": result.newer,
        "query": query_without_cursor(request),
        "is_filtered": form.is_filtered(),
        "api_url": request.build_absolute_uri("/api/v1/"),
    }
    if not wants_partial(request):  # the filters' <datalist>s sit outside the results partial
        context["known"] = trace_known_values(project=access.project)
    return render_page_or_partial(request, "traces/list.html", "results", context)
