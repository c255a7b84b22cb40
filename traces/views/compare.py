"""Two trajectories side by side (`?a=&b=`, or two ticked rows of the list as `?id=&id=`), and
with `a` alone: the other runs of its task, to pick the second from."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.dashboard import found_in_projects
from core.http import AuthedRequest
from traces.presentation import compare_rows
from traces.selectors.compare import steps_aligned, trace_other_runs
from traces.selectors.inspector import trace_inspect


def _pick(request: AuthedRequest, *, error: str = "", status: int = 200, **context) -> HttpResponse:
    """The picking form; `error` says why the ids asked for cannot be compared."""
    context = {"a": "", "b": "", "first": None, "other_runs": [], "error": error, **context}
    return render(request, "traces/compare_pick.html", context, status=status)


def _asked(request: AuthedRequest) -> tuple[str, str, str]:
    """The two ids asked for, and what is wrong with them ("" when nothing is)."""
    ticked = request.GET.getlist("id")
    if ticked:
        if len(ticked) != 2:
            return "", "", f"Tick exactly two trajectories to compare; {len(ticked)} were ticked."
        # The list is newest first: the older run goes on the left, as when read in order.
        a, b = sorted(ticked, key=lambda v: int(v) if v.isdigit() else -1)
    else:
        a, b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    wrong = next((value for value in (a, b) if value and not value.isdigit()), None)
    if wrong is not None:
        return a, b, f"“{wrong}” is not a trace number."
    if b and not a:
        return a, b, "Give the first trace number too."
    return a, b, ""


@require_GET
@login_required
def trace_compare(request: AuthedRequest) -> HttpResponse:
    a, b, error = _asked(request)
    if error or not a:
        return _pick(request, a=a, b=b, error=error, status=400 if error else 200)
    # Not found is the picking form again, saying so (a 404 with it, not a bare 404 page).
    first = found_in_projects(request, trace_inspect, trace_id=int(a))
    if first is None:
        return _pick(request, a=a, b=b, status=404, error=f"Trace #{a} is not in your projects.")
    if not b or a == b:
        error = "That is the same trajectory twice: pick another one." if b else ""
        runs = trace_other_runs(trace=first)
        return _pick(
            request, a=a, first=first, other_runs=runs, error=error, status=400 if b else 200
        )
    second = found_in_projects(request, trace_inspect, trace_id=int(b))
    if second is None:
        return _pick(request, a=a, b=b, status=404, error=f"Trace #{b} is not in your projects.")
    rows = compare_rows(steps_aligned(first, second))
    return render(request, "traces/compare.html", {"a": first, "b": second, "rows": rows})
