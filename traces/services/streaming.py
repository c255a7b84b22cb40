"""Streamed trajectories: open, append steps as they happen, complete.

A long-running agent persists each event as it happens; the trace stays visibly incomplete and
is never reviewed until it is completed. Every call is idempotent so a client may retry freely.
"""

from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import ApiKey, Project
from accounts.services.audit import audit_event
from core.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge
from traces.models import Step, Trace
from traces.schemas import StepsAppendIn, TraceCompleteIn, TraceOpenIn
from traces.services.digests import content_digest, digest_matches
from traces.services.ingest import (
    IngestResult,
    step_build,
    step_hash,
    trace_build,
    trace_count_steps,
    trace_set_timing,
)
from traces.services.review_queue import review_enqueue
from traces.services.tool_profiles import tool_profiles_declare


def trace_open(
    *, project: Project, payload: TraceOpenIn, api_key: ApiKey | None = None
) -> IngestResult:
    # Without declared tools the opening reads as it did before `tools` existed (its digest).
    opening = {
        "open": payload.model_dump(mode="json", exclude=None if payload.tools else {"tools"})
    }
    digest = content_digest(opening)
    existing = Trace.objects.filter(project=project, external_id=payload.external_id).first()
    if existing is None:
        trace = trace_build(project=project, payload=payload, digest=digest)
        try:
            with transaction.atomic():
                trace.save()
                tool_profiles_declare(project_id=project.pk, declarations=payload.tools)
                audit_event(
                    action="trace.open",
                    object_type="trace",
                    object_id=trace.pk,
                    project=project,
                    api_key=api_key,
                    after={"external_id": trace.external_id},
                )
            return IngestResult(trace=trace, created=True)
        except IntegrityError:
            existing = Trace.objects.filter(
                project=project, external_id=payload.external_id
            ).first()
            if existing is None:
                raise
    if not digest_matches(
        existing.content_hash, digest, lambda: content_digest(opening, legacy=True)
    ):
        raise Conflict(
            f"a trace with external_id '{payload.external_id}' already exists "
            "with different content"
        )
    return IngestResult(trace=existing, created=False)


def _locked_trace(project: Project, trace_id: int) -> Trace:
    trace = Trace.objects.select_for_update().filter(project=project, pk=trace_id).first()
    if trace is None:
        raise NotFound(f"trace {trace_id} not found")
    return trace


def trace_append_steps(*, project: Project, trace_id: int, payload: StepsAppendIn) -> Trace:
    """Append steps in index order; a step already stored with the same content is skipped."""
    with transaction.atomic():
        # The row lock serialises concurrent appends to one trace (index order, counters).
        trace = _locked_trace(project, trace_id)
        existing = dict(
            Step.objects.filter(
                trace=trace, index__in=[s.index for s in payload.steps]
            ).values_list("index", "content_hash")
        )
        new_steps: list[Step] = []
        expected = trace.step_count
        for step_in in sorted(payload.steps, key=lambda s: s.index):
            step = step_build(trace=trace, step=step_in)
            if step_in.index in existing:
                if not digest_matches(
                    existing[step_in.index],
                    step.content_hash,
                    partial(step_hash, step_in, legacy=True),
                ):
                    raise Conflict(
                        f"step {step_in.index} is already recorded with different content"
                    )
                continue
            if trace.is_complete:
                raise Conflict("the trace is complete; no steps can be added")
            if step_in.index != expected:
                raise Conflict(
                    "steps must be appended in order: "
                    f"expected index {expected}, got {step_in.index}"
                )
            expected += 1
            new_steps.append(step)
        if not new_steps:
            return trace
        limit = settings.HINDSIGHT_MAX_STEPS
        if trace.step_count + len(new_steps) > limit:
            raise PayloadTooLarge(f"at most {limit} steps per trajectory")
        Step.objects.bulk_create(new_steps)
        trace_count_steps(trace, new_steps)
        trace.save(
            update_fields=["step_count", "tool_call_count", "error_count", "tools", "updated_at"]
        )
    return trace


def trace_complete(
    *, project: Project, trace_id: int, payload: TraceCompleteIn, api_key: ApiKey | None = None
) -> Trace:
    with transaction.atomic():
        trace = _locked_trace(project, trace_id)
        if trace.is_complete:
            if trace.outcome != payload.outcome:
                raise Conflict(f"the trace was already completed with outcome '{trace.outcome}'")
            return trace
        trace.outcome = payload.outcome
        trace.ended_at = payload.ended_at
        trace.feedback = payload.feedback
        trace.final_answer = payload.final_answer
        trace.completed_at = timezone.now()
        trace.review_status_at = trace.completed_at
        trace_set_timing(trace, list(trace.steps.all()))
        if trace.started_at and trace.ended_at and trace.ended_at < trace.started_at:
            raise InvalidInput("ended_at is before the trace's started_at")
        trace.save()
        audit_event(
            action="trace.complete",
            object_type="trace",
            object_id=trace.pk,
            project=project,
            api_key=api_key,
            after={"outcome": trace.outcome, "steps": trace.step_count},
        )
        transaction.on_commit(partial(review_enqueue, trace_ids=[trace.pk]))
    return trace
