"""Storing a buffered OpenTelemetry trace as a trajectory once it is complete (services.py
buffers the spans): when its root came (inline for an export's first traces, else the worker's
`otlp.complete_traces`), or by beat's sweep when it went idle or its completion task was lost.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from pydantic import ValidationError

from accounts.models import ApiKey
from core.errors import DomainError
from traces.otlp import assembly
from traces.otlp.models import OtelTrace
from traces.schemas import StepsAppendIn
from traces.services import streaming

logger = logging.getLogger(__name__)

# A trace whose root came but that is still open this long after its last span: its
# completion task was lost (the broker was down); the sweep stores it.
ROOTED_GRACE_SECONDS = 60


def otel_trace_complete(pk: int, *, api_key: ApiKey | None) -> str:
    """Store one buffered trace whose root came, if it is still open; '' or why it failed.
    Its own transaction, with the trace's row locked (an export adding to it waits)."""
    with transaction.atomic():
        otel_trace = (
            OtelTrace.objects.select_for_update()
            .select_related("project")
            .filter(pk=pk, completed_at__isnull=True)
            .first()
        )
        if otel_trace is None:
            return ""  # stored already (a resent task, or the sweep came first)
        return _complete(otel_trace, completed_by=OtelTrace.CompletedBy.ROOT, api_key=api_key)


def otel_traces_complete(pks: list[int], *, api_key_id: int | None) -> int:
    """The worker's half of a big export: store each trace (how many were stored now)."""
    api_key = ApiKey.objects.filter(pk=api_key_id).first() if api_key_id else None
    done = 0
    for pk in pks:
        otel_trace_complete(pk, api_key=api_key)
        done += 1
    return done


def _complete(otel_trace: OtelTrace, *, completed_by: str, api_key: ApiKey | None) -> str:
    """Store the buffered trace as a trajectory and close the buffer; '' or why it failed.

    Call with the OtelTrace row locked. The review is enqueued when the transaction commits.
    """
    spans = list(otel_trace.spans.all())
    buffered = [
        assembly.BufferedSpan(
            span_id=s.span_id,
            role=s.role,
            is_root=s.is_root,
            start_ns=s.start_ns,
            end_ns=s.end_ns,
            facts=s.facts,
        )
        for s in spans
    ]
    project = otel_trace.project
    error = ""
    trace = None
    try:
        with transaction.atomic():
            built = assembly.trajectory_build(
                trace_id=otel_trace.trace_id,
                spans=buffered,
                completed_by=completed_by,
                service_name=next(
                    (s.facts.get("service_name", "") for s in spans if s.facts.get("service_name")),
                    "",
                ),
            )
            trace = streaming.trace_open(
                project=project, payload=built.header, api_key=api_key
            ).trace
            if built.steps:
                streaming.trace_append_steps(
                    project=project, trace_id=trace.pk, payload=StepsAppendIn(steps=built.steps)
                )
            trace = streaming.trace_complete(
                project=project, trace_id=trace.pk, payload=built.completion, api_key=api_key
            )
    except (DomainError, ValidationError) as failure:
        error = failure.detail if isinstance(failure, DomainError) else _first_error(failure)
        logger.warning("otel trace %s not stored: %s", otel_trace.trace_id, error)
        trace = None
    otel_trace.completed_at = timezone.now()
    otel_trace.completed_by = completed_by
    otel_trace.trajectory = trace
    otel_trace.error = error
    otel_trace.span_ids = [s.span_id for s in spans]
    otel_trace.save(
        update_fields=["completed_at", "completed_by", "trajectory", "error", "span_ids"]
    )
    otel_trace.spans.all().delete()
    return error


def _first_error(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


def otel_traces_sweep(*, limit: int = 200) -> int:
    """Complete traces whose root never came (nothing arrived for HINDSIGHT_OTLP_IDLE_SECONDS),
    and those whose root came but whose completion was never run (its task was lost while the
    broker was down) after ROOTED_GRACE_SECONDS."""
    now = timezone.now()
    before = now - timedelta(seconds=settings.HINDSIGHT_OTLP_IDLE_SECONDS)
    rooted_before = now - timedelta(seconds=ROOTED_GRACE_SECONDS)
    ids = list(
        OtelTrace.objects.filter(completed_at__isnull=True, last_received_at__lt=rooted_before)
        .filter(Q(last_received_at__lt=before) | Q(has_root=True))
        .order_by("last_received_at")
        .values_list("pk", flat=True)[:limit]
    )
    done = 0
    for pk in ids:
        with transaction.atomic():
            # skip_locked: a trace an export is adding to right now is not idle.
            otel_trace = (
                OtelTrace.objects.select_for_update(skip_locked=True)
                .filter(pk=pk, completed_at__isnull=True, last_received_at__lt=rooted_before)
                .select_related("project")
                .first()
            )
            idle = otel_trace is not None and otel_trace.last_received_at < before
            if otel_trace is None or not (otel_trace.has_root or idle):
                continue
            by = OtelTrace.CompletedBy.ROOT if otel_trace.has_root else OtelTrace.CompletedBy.IDLE
            _complete(otel_trace, completed_by=by, api_key=None)
            done += 1
    return done
