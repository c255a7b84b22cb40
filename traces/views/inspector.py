"""The trace inspector: the page, a step's raw observation, relabelling a step, accepting all."""

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from core.errors import DomainError
from core.http import AuthedRequest
from traces.forms import RelabelForm
from traces.models import Review, Step, Trace
from traces.presentation import (
    reviews_drop_repeats,
    step_decorate,
    steps_mark_for_reading,
    trace_decorate,
)
from traces.selectors.inspector import (
    STEP_FILTERS,
    StepWindow,
    first_index_of_contents,
    parse_label_versions,
    step_for_trace,
    step_overview,
    step_window,
    steps_with_opinions,
    trace_for_inspector,
)
from traces.selectors.queue import claim_open_for
from traces.services import labels
from traces.services.labels import LabelConflict
from traces.views.common import dashboard_for, vary_on_htmx, wants_partial


def _get_trace_for_user(request: AuthedRequest, trace_id: int) -> Trace:
    """A trace of one of the user's projects, or 404 (never 403: ids of others stay unknown)."""
    trace = (
        Trace.objects.filter(pk=trace_id, project__in=dashboard_for(request).projects)
        .select_related("project")
        .first()
    )
    if trace is None:
        raise Http404("trace not found")
    return trace


def _window_asked(request: AuthedRequest) -> dict[str, int]:
    """?after= / ?before= / ?at= (a step index) of the step window; a malformed one is ignored."""
    for name in ("after", "before", "at"):
        value = request.GET.get(name, "")
        if value.isdigit() and int(value) <= 2**31:
            return {name: int(value)}
    return {}


def _window_ready(request: AuthedRequest, trace: Trace, window: StepWindow) -> StepWindow:
    first_index = first_index_of_contents(trace=trace, steps=window.steps)
    for step in steps_with_opinions(trace=trace, steps=window.steps):
        step_decorate(step)
    steps_mark_for_reading(window.steps, user=request.user, first_index=first_index)
    return window


def _inspector_context(request: AuthedRequest, trace: Trace, show: str) -> dict[str, Any]:
    claim = claim_open_for(user=request.user, project=trace.project)
    overview = step_overview(trace=trace, user=request.user)
    reviews = list(trace.reviews.all())
    reviews_drop_repeats(reviews)
    return {
        "overview": overview,
        "shown_count": overview.count(show),
        "reviews": reviews,
        "is_heuristic": overview.has_heuristic_labels
        or any(r.reviewer == Review.Reviewer.HEURISTIC for r in reviews),
        "machine_versions": overview.versions_text,
        "claim": claim if claim is not None and claim.trace_id == trace.pk else None,
        "labels": Step.Label.choices,
    }


@require_GET
@login_required
def trace_detail(request: AuthedRequest, trace_id: int) -> HttpResponse:
    """The inspector; for htmx, one window of its steps (?after=, ?before=, ?at=), which the
    page asks for as the reader scrolls or jumps; without JS the same links load whole pages."""
    trace = trace_for_inspector(trace_id=trace_id, projects=dashboard_for(request).projects)
    if trace is None:
        raise Http404("trace not found")
    trace_decorate(trace)
    show = request.GET.get("show", "")
    show = show if show in STEP_FILTERS else ""
    window = step_window(trace=trace, show=show, user=request.user, **_window_asked(request))
    context = {"trace": trace, "window": _window_ready(request, trace, window), "show": show}
    if wants_partial(request):
        return vary_on_htmx(render(request, "traces/detail.html#steps", context))
    context.update(_inspector_context(request, trace, show))
    return vary_on_htmx(render(request, "traces/detail.html", context))


@require_GET
@login_required
def step_raw(request: AuthedRequest, trace_id: int, index: int) -> HttpResponse:
    trace = _get_trace_for_user(request, trace_id)
    step = Step.objects.filter(trace=trace, index=index).only("index", "observation_raw").first()
    if step is None:
        raise Http404("step not found")
    dropped = trace.observations_raw_dropped_at if not step.observation_raw else None
    if not wants_partial(request):
        text = step.observation_raw or (
            f"The raw observation was dropped on {dropped:%Y-%m-%d} after the retention time; "
            "the summary on the trajectory page is what is kept.\n"
            if dropped
            else ""
        )
        return vary_on_htmx(HttpResponse(text, content_type="text/plain; charset=utf-8"))
    context = {"trace": trace, "step": step, "dropped": dropped}
    return vary_on_htmx(render(request, "traces/detail.html#raw", context))


@require_POST
@login_required
def step_label(request: AuthedRequest, trace_id: int, index: int) -> HttpResponse:
    trace = _get_trace_for_user(request, trace_id)
    form = RelabelForm(request.POST)
    if not form.is_valid():
        return HttpResponse("label, reason or version is not valid", status=422)
    status, error = 200, ""
    try:
        labels.step_relabel(
            trace=trace, index=index, label=form.cleaned_data["label"],
            reason=form.cleaned_data["reason"], expected_version=form.cleaned_data["version"],
            user=request.user, to_machine=form.cleaned_data["to_machine"],
        )  # fmt: skip
    except LabelConflict as conflict:
        status, error = 409, conflict.detail
    except DomainError as failure:
        raise Http404(failure.detail) from None
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect(f"{reverse('traces:detail', args=[trace.pk])}#step-{index}")
    step = step_for_trace(trace=trace, index=index)
    if step is not None:
        first_index = first_index_of_contents(trace=trace, steps=[step])
        steps_mark_for_reading([step_decorate(step)], user=request.user, first_index=first_index)
    context = {"trace": trace, "step": step, "labels": Step.Label.choices, "conflict": error}
    return render(request, "traces/detail.html#step", context, status=status)


@require_POST
@login_required
def trace_accept(request: AuthedRequest, trace_id: int) -> HttpResponse:
    trace = _get_trace_for_user(request, trace_id)
    seen = parse_label_versions(request.POST.get("versions", ""))
    result = labels.trace_accept_all(trace=trace, seen_versions=seen, user=request.user)
    _say_accepted(request, result)
    url = reverse("traces:detail", args=[trace.pk])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _say_accepted(request: AuthedRequest, result: labels.AcceptResult) -> None:
    messages.success(
        request, f"{len(result.accepted)} machine label(s) confirmed, recorded as accepted as is."
    )
    if result.skipped:
        skipped = ", ".join(str(i) for i in result.skipped)
        messages.warning(request, f"Changed by someone else meanwhile, left as is: step {skipped}.")
