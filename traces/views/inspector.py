"""The trace inspector: the page, a step's raw observation, relabelling a step, accepting all."""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from accounts.dashboard import object_in_projects
from accounts.services.audit import audit_event
from core.errors import DomainError
from core.http import AuthedRequest
from core.pages import navigate, render_page_or_partial, vary_on_htmx, wants_partial
from traces.forms import RelabelForm
from traces.models import Review, ReviewClaim, Step, Trace
from traces.presentation import (
    reviews_drop_repeats,
    run_details,
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
    trace_in_projects,
    trace_models,
)
from traces.selectors.queue import claim_live_on, claim_open_for, queue_reason_of
from traces.services import labels
from traces.services.labels import LabelConflict


def _get_trace_for_user(request: AuthedRequest, trace_id: int) -> Trace:
    """A trace of one of the user's projects, or 404 (never 403: ids of others stay unknown)."""
    return object_in_projects(request, trace_in_projects, "trace", trace_id=trace_id)


# The claims of others this browser chose to label through ("Label anyway"), by claim id.
SESSION_OVERRIDES = "hindsight_claims_overridden"


def _claim_of_another(request: AuthedRequest, trace: Trace) -> ReviewClaim | None:
    claim = claim_live_on(trace=trace)
    return claim if claim is not None and claim.user_id != request.user.pk else None


def _claim_in_the_way(request: AuthedRequest, trace: Trace) -> ReviewClaim | None:
    """Another reviewer's live queue claim on the trace, unless this user chose to override it:
    a label or "Accept all" is then refused (the page asks first, see hindsight.js)."""
    claim = _claim_of_another(request, trace)
    if claim is None or claim.pk in request.session.get(SESSION_OVERRIDES, []):
        return None
    return claim


def _held_text(claim: ReviewClaim) -> str:
    until = timezone.localtime(claim.expires_at)
    return (
        f"{claim.user.get_username()} is reviewing this trajectory from the queue until "
        f"{until:%H:%M %Z}: nothing was saved. Choose “Label anyway” above to override the claim"
    )


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
    held = _claim_of_another(request, trace)
    mine = claim if claim is not None and claim.trace_id == trace.pk else None
    return {
        "queue_reason": queue_reason_of(trace) if mine is not None else None,
        "details": run_details(trace, step_models=trace_models(trace=trace)),
        "low_threshold": f"{round(100 * settings.HINDSIGHT_LOW_CONFIDENCE)} %",
        "held_claim": held,
        "claim_overridden": held is not None
        and held.pk in request.session.get(SESSION_OVERRIDES, []),
        "overview": overview,
        "shown_count": overview.count(show),
        "reviews": reviews,
        "is_heuristic": overview.has_heuristic_labels
        or any(r.reviewer == Review.Reviewer.HEURISTIC for r in reviews),
        "machine_versions": overview.versions_text,
        "claim": mine,
        "labels": Step.Label.choices,
    }


@require_GET
@login_required
def trace_detail(request: AuthedRequest, trace_id: int) -> HttpResponse:
    """The inspector; for htmx, one window of its steps (?after=, ?before=, ?at=), which the
    page asks for as the reader scrolls or jumps; without JS the same links load whole pages."""
    trace = object_in_projects(request, trace_for_inspector, "trace", trace_id=trace_id)
    trace_decorate(trace)
    show = request.GET.get("show", "")
    show = show if show in STEP_FILTERS else ""
    window = step_window(trace=trace, show=show, user=request.user, **_window_asked(request))
    context = {"trace": trace, "window": _window_ready(request, trace, window), "show": show}
    return render_page_or_partial(
        request, "traces/detail.html", "steps", context,
        page_context=lambda: _inspector_context(request, trace, show),
    )  # fmt: skip


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


def _relabel(
    request: AuthedRequest, trace: Trace, index: int, form: RelabelForm
) -> tuple[int, str]:
    """(status, why nothing was saved): 409 for a stale version or another reviewer's claim."""
    if (held := _claim_in_the_way(request, trace)) is not None:
        return 409, _held_text(held)
    try:
        labels.step_relabel(
            trace=trace, index=index, label=form.cleaned_data["label"],
            reason=form.cleaned_data["reason"], expected_version=form.cleaned_data["version"],
            user=request.user, to_machine=form.cleaned_data["to_machine"],
        )  # fmt: skip
    except LabelConflict as conflict:
        return 409, conflict.detail
    except DomainError as failure:
        raise Http404(failure.detail) from None
    return 200, ""


@require_POST
@login_required
def step_label(request: AuthedRequest, trace_id: int, index: int) -> HttpResponse:
    trace = _get_trace_for_user(request, trace_id)
    form = RelabelForm(request.POST)
    if not form.is_valid():
        return HttpResponse("label, reason or version is not valid", status=422)
    status, error = _relabel(request, trace, index, form)
    if not wants_partial(request):
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
    if (asking := accept_asked_first(request, trace=trace, seen=seen)) is not None:
        return asking
    if (held := _claim_in_the_way(request, trace)) is not None:
        messages.error(request, _held_text(held) + ".")
    else:
        result = labels.trace_accept_all(trace=trace, seen_versions=seen, user=request.user)
        _say_accepted(request, result)
    url = reverse("traces:detail", args=[trace.pk])
    return navigate(request, url)


@require_POST
@login_required
def claim_override(request: AuthedRequest, trace_id: int, claim_id: int) -> HttpResponse:
    """ "Label anyway": this user labels a trajectory another reviewer holds from the queue.
    Recorded in the audit log once per claim; the holder's claim itself stays as it is."""
    trace = _get_trace_for_user(request, trace_id)
    claim = _claim_of_another(request, trace)
    url = reverse("traces:detail", args=[trace.pk])
    if claim is None or claim.pk != claim_id:  # lapsed, finished or released meanwhile
        return HttpResponse(status=204) if wants_partial(request) else redirect(url)
    overridden = request.session.get(SESSION_OVERRIDES, [])
    if claim.pk not in overridden:
        request.session[SESSION_OVERRIDES] = [*overridden, claim.pk][-50:]
        audit_event(
            action="queue.override", object_type="trace", object_id=trace.pk,
            project=trace.project, user=request.user,
            before={"claim": claim.pk, "held_by": claim.user.get_username(),
                    "until": claim.expires_at.isoformat()},
            after={"labelled_by": request.user.get_username()},
        )  # fmt: skip
    if wants_partial(request):
        return HttpResponse(status=204)
    messages.warning(request, f"You label this trajectory although {claim.user} holds it.")
    return redirect(url)


def accept_asked_first(
    request: AuthedRequest, *, trace: Trace, seen: dict[int, int], finishing: bool = False
) -> HttpResponse | None:
    """Without JavaScript, "Accept all" and "Finish & next" (Ctrl+Enter's form) ask first too:
    a page naming the machine labels they would accept, whose button sends them again with
    `confirmed`. With htmx the page asked already (hindsight.js)."""
    if wants_partial(request) or request.POST.get("confirmed") or not seen:
        return None
    indexes = sorted(seen)
    context = {
        "trace": trace, "indexes": indexes[:12], "more": max(len(indexes) - 12, 0),
        "count": len(indexes), "versions": request.POST.get("versions", ""),
        "action": request.path, "finishing": finishing,
    }  # fmt: skip
    return render(request, "traces/accept_confirm.html", context)


def _say_accepted(request: AuthedRequest, result: labels.AcceptResult) -> None:
    messages.success(
        request, f"{len(result.accepted)} machine label(s) confirmed, recorded as accepted as is."
    )
    if result.skipped:
        skipped = ", ".join(str(i) for i in result.skipped)
        messages.warning(request, f"Changed by someone else meanwhile, left as is: step {skipped}.")
