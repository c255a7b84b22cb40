from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from traces import selectors
from traces.http import AuthedRequest
from traces.views.common import dashboard_for


@require_GET
@login_required
def trace_compare(request: AuthedRequest) -> HttpResponse:
    ids = [request.GET.get("a", ""), request.GET.get("b", "")]
    if not all(i.isdigit() for i in ids):
        return render(request, "traces/compare_pick.html", {"a": ids[0], "b": ids[1]})
    projects = dashboard_for(request).projects
    pair = [selectors.trace_inspect(trace_id=int(i), projects=projects) for i in ids]
    if None in pair:
        raise Http404("trace not found")
    rows = selectors.steps_aligned(pair[0], pair[1])  # type: ignore[arg-type]
    return render(request, "traces/compare.html", {"a": pair[0], "b": pair[1], "rows": rows})
