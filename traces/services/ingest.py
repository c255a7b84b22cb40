"""Storing complete trajectories: one transaction per trajectory, idempotent on external_id."""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import ApiKey, AuditEvent, Project
from accounts.services.audit import audit_event
from core.errors import Conflict
from traces.models import Step, Trace
from traces.observations import as_text, cap, summarize
from traces.schemas import StepIn, TraceHeaderIn, TraceIn
from traces.services.digests import content_digest, digest_matches
from traces.services.review_queue import review_enqueue
from traces.services.tool_profiles import tool_profiles_declare

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IngestResult:
    trace: Trace
    created: bool


def step_hash(step: StepIn, *, legacy: bool = False) -> str:
    return content_digest(step.model_dump(mode="json"), legacy=legacy)


def payload_digest(payload: TraceIn, *, legacy: bool = False) -> tuple[str, list[str]]:
    """The trace's content digest and its steps' (each step is serialised once, not twice);
    `legacy`: as written before v2 (traces.services.digests)."""
    hashes = [step_hash(s, legacy=legacy) for s in payload.steps]
    # Without declared tools the header reads as it did before `tools` existed, so a retry of a
    # trace stored then still matches its digest.
    unset = {"steps"} if payload.tools else {"steps", "tools"}
    header = payload.model_dump(mode="json", exclude=unset)
    return content_digest({"trace": header, "steps": hashes}, legacy=legacy), hashes


def payload_matches(stored: str, digest: str, payload: TraceIn) -> bool:
    """Whether `payload` (of digest `digest`) is the content of a stored trace's `stored`."""
    return digest_matches(stored, digest, lambda: payload_digest(payload, legacy=True)[0])


def step_build(*, trace: Trace, step: StepIn) -> Step:
    return Step(trace=trace, **step_values(trace=trace, step=step, digest=step_hash(step)))


def step_values(*, trace: Trace, step: StepIn, digest: str) -> dict[str, Any]:
    raw_text = as_text(step.observation)
    raw, truncated = cap(raw_text, limit=settings.HINDSIGHT_OBSERVATION_RAW_CAP)
    if step.observation_summary is not None:
        summary = step.observation_summary
    else:
        summary = summarize(raw_text, chars=settings.HINDSIGHT_OBSERVATION_SUMMARY_CHARS)
    return dict(
        index=step.index,
        agent=step.agent or trace.agent,
        kind=step.kind,
        tool=step.tool,
        arguments=step.arguments if step.arguments is not None else {},
        content=step.content,
        observation=summary,
        observation_raw=raw,
        is_observation_truncated=truncated,
        is_error=step.is_error,
        error_type=step.error_type,
        started_at=step.started_at,
        duration_ms=step.duration_ms,
        context=step.context.model_dump() if step.context is not None else {},
        content_hash=digest,
    )


class StepFacts(Protocol):
    """What the trace's counters and timing read: a stored Step or an incoming StepIn."""

    @property
    def kind(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def is_error(self) -> bool: ...
    @property
    def started_at(self) -> datetime | None: ...
    @property
    def duration_ms(self) -> int | None: ...


def trace_count_steps(trace: Trace, steps: Sequence[StepFacts]) -> None:
    """Add `steps` to the trace's counters and tool set (steps may arrive in several appends)."""
    tools = list(trace.tools)
    for step in steps:
        trace.step_count += 1
        if step.kind == Step.Kind.TOOL_CALL:
            trace.tool_call_count += 1
        if step.is_error:
            trace.error_count += 1
        if step.tool and step.tool not in tools:
            tools.append(step.tool)
    trace.tools = tools


def trace_set_timing(trace: Trace, steps: Sequence[StepFacts]) -> None:
    """Fill missing start/end from the steps' own timestamps; duration from the two."""
    timed = [(s.started_at, s.duration_ms or 0) for s in steps if s.started_at is not None]
    sent_start, sent_end = trace.started_at, trace.ended_at
    if trace.started_at is None and timed:
        trace.started_at = min(started_at for started_at, _ in timed)
    if trace.ended_at is None and timed:
        last_started_at, last_duration_ms = max(timed, key=lambda t: t[0])
        try:
            trace.ended_at = last_started_at + timedelta(milliseconds=last_duration_ms)
        except OverflowError:  # a duration running past year 9999: the end is unknown
            pass
    if trace.started_at and trace.ended_at and trace.ended_at < trace.started_at:
        # A time filled from the steps that contradicts the one sent: it stays unknown (the
        # sent pair itself is checked by the schema), never a database error.
        trace.started_at, trace.ended_at = sent_start, sent_end
    if trace.started_at and trace.ended_at and trace.ended_at >= trace.started_at:
        trace.duration_ms = int((trace.ended_at - trace.started_at).total_seconds() * 1000)


def trace_build(*, project: Project, payload: TraceHeaderIn, digest: str) -> Trace:
    return Trace(
        project=project,
        external_id=payload.external_id,
        agent=payload.agent,
        session_id=payload.session_id,
        user_ref=payload.user,
        task=payload.task,
        task_type=payload.task_type,
        intent=payload.intent,
        environment=payload.environment,
        started_at=payload.started_at,
        metadata=payload.metadata,
        content_hash=digest,
    )


def complete_trace_build(
    *, project: Project, payload: TraceIn, digest: str
) -> tuple[Trace, list[StepIn]]:
    """A finished trajectory's row (not saved) and its steps in order."""
    trace = trace_build(project=project, payload=payload, digest=digest)
    trace.outcome = payload.outcome
    trace.ended_at = payload.ended_at
    trace.feedback = payload.feedback
    trace.final_answer = payload.final_answer
    trace.completed_at = timezone.now()
    return trace, sorted(payload.steps, key=lambda s: s.index)


def _hand_over(trace: Trace) -> None:
    """After commit: publish the review task; the response then shows `queued`."""
    if review_enqueue(trace_ids=[trace.pk]):
        trace.review_status = Trace.ReviewStatus.QUEUED


def _existing_result(existing: Trace, digest: str, payload: TraceIn) -> IngestResult:
    if not payload_matches(existing.content_hash, digest, payload):
        raise Conflict(
            f"a trace with external_id '{existing.external_id}' already exists with different "
            "content; use a new external_id for a new trajectory"
        )
    return IngestResult(trace=existing, created=False)


def ingest_audit_event(trace: Trace, api_key: ApiKey | None) -> AuditEvent:
    """The audit event of a stored trajectory (not saved)."""
    return audit_event(
        action="trace.ingest",
        object_type="trace",
        object_id=trace.pk,
        project=trace.project,
        api_key=api_key,
        after={"external_id": trace.external_id, "steps": trace.step_count},
        save=False,
    )


def trace_ingest(
    *, project: Project, payload: TraceIn, api_key: ApiKey | None = None
) -> IngestResult:
    """Store one complete trajectory and hand it to review once committed."""
    digest, _ = payload_digest(payload)
    existing = Trace.objects.filter(project=project, external_id=payload.external_id).first()
    if existing is not None:
        return _existing_result(existing, digest, payload)
    trace, step_inputs = complete_trace_build(project=project, payload=payload, digest=digest)
    steps = [step_build(trace=trace, step=s) for s in step_inputs]
    trace_count_steps(trace, steps)
    trace_set_timing(trace, steps)
    try:
        with transaction.atomic():
            trace.save()
            Step.objects.bulk_create(steps)
            tool_profiles_declare(project_id=project.pk, declarations=payload.tools)
            if settings.HINDSIGHT_AUDIT_INGEST:
                ingest_audit_event(trace, api_key).save()
            transaction.on_commit(partial(_hand_over, trace))
    except IntegrityError:
        # Two identical requests raced past the lookup; the loser answers like a retry.
        existing = Trace.objects.filter(project=project, external_id=payload.external_id).first()
        if existing is None:
            raise
        return _existing_result(existing, digest, payload)
    return IngestResult(trace=trace, created=True)


# ---------------------------------------------------------------------------- batch
