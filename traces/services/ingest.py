"""Storing complete trajectories: one transaction per trajectory, idempotent on external_id."""

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Protocol

import orjson
from django.conf import settings
from django.db import DataError, IntegrityError, transaction
from django.utils import timezone
from psycopg import DataError as CopyDataError
from psycopg import IntegrityError as CopyIntegrityError
from pydantic import ValidationError

from accounts.models import ApiKey, AuditEvent, Project
from accounts.services.audit import audit_event
from core.copy_rows import columns_of, instances_copy, rows_copy
from core.errors import Conflict
from core.inputs import is_storable_text
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


def _complete_trace_build(
    *, project: Project, payload: TraceIn, digest: str
) -> tuple[Trace, list[StepIn]]:
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


def _ingest_audit(trace: Trace, api_key: ApiKey | None) -> AuditEvent:
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
    trace, step_inputs = _complete_trace_build(project=project, payload=payload, digest=digest)
    steps = [step_build(trace=trace, step=s) for s in step_inputs]
    trace_count_steps(trace, steps)
    trace_set_timing(trace, steps)
    try:
        with transaction.atomic():
            trace.save()
            Step.objects.bulk_create(steps)
            tool_profiles_declare(project_id=project.pk, declarations=payload.tools)
            if settings.HINDSIGHT_AUDIT_INGEST:
                _ingest_audit(trace, api_key).save()
            transaction.on_commit(partial(_hand_over, trace))
    except IntegrityError:
        # Two identical requests raced past the lookup; the loser answers like a retry.
        existing = Trace.objects.filter(project=project, external_id=payload.external_id).first()
        if existing is None:
            raise
        return _existing_result(existing, digest, payload)
    return IngestResult(trace=trace, created=True)


# ---------------------------------------------------------------------------- batch


def _validation_detail(error: ValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]}
        for e in error.errors(include_url=False)
    ]


def trace_ingest_batch(
    *,
    project: Project,
    items: list[Any],
    api_key: ApiKey | None = None,
    parse: Callable[[Any], TraceIn] = TraceIn.model_validate,
) -> list[dict[str, Any]]:
    """Store many trajectories; every item gets its own result, one bad item fails only itself.

    `parse` reads one item into a TraceIn or raises a ValidationError (transcript imports pass
    their own). Fast path: all new, valid items in one transaction with bulk inserts. If that
    transaction hits a unique-key race (or the database refuses a value validation let
    through), each item is retried on its own (the single-trace path), so only the item at fault
    fails.
    """
    results: list[dict[str, Any] | None] = [None] * len(items)
    step_hashes: dict[str, list[str]] = {}
    accepted: dict[str, tuple[int, TraceIn, str]] = {}
    for position, raw in enumerate(items):
        external_id = raw.get("external_id") if isinstance(raw, dict) else None
        try:
            payload = parse(raw)
        except ValidationError as error:
            echoed = isinstance(external_id, str) and is_storable_text(external_id)
            results[position] = {
                "external_id": external_id if echoed else None,
                "status": "invalid",
                "detail": _validation_detail(error),
            }
            continue
        digest, hashes = payload_digest(payload)
        earlier = accepted.get(payload.external_id)
        if earlier is not None:
            same = earlier[2] == digest
            results[position] = {
                "external_id": payload.external_id,
                "status": "duplicate" if same else "conflict",
                "detail": None
                if same
                else "same external_id earlier in this batch with other content",
            }
            continue
        accepted[payload.external_id] = (position, payload, digest)
        step_hashes[payload.external_id] = hashes

    existing = {
        t.external_id: t
        for t in Trace.objects.filter(project=project, external_id__in=list(accepted))
    }
    fresh: list[tuple[int, TraceIn, str]] = []
    for external_id, (position, payload, digest) in accepted.items():
        found = existing.get(external_id)
        if found is None:
            fresh.append((position, payload, digest))
        elif payload_matches(found.content_hash, digest, payload):
            results[position] = {"external_id": external_id, "status": "duplicate", "id": found.pk}
        else:
            results[position] = {
                "external_id": external_id,
                "status": "conflict",
                "id": found.pk,
                "detail": "a trace with this external_id exists with different content",
            }

    try:
        created = _bulk_create(
            project=project, fresh=fresh, api_key=api_key, step_hashes=step_hashes
        )
    except (IntegrityError, DataError, CopyIntegrityError, CopyDataError):  # COPY's are raw
        created = {}
        for position, payload, _ in fresh:
            try:
                result = trace_ingest(project=project, payload=payload, api_key=api_key)
            except Conflict as error:
                results[position] = {
                    "external_id": payload.external_id,
                    "status": "conflict",
                    "detail": error.detail,
                }
                continue
            except DataError as error:
                # Validation should refuse whatever the database would: this is a gap in it.
                logger.exception("batch item %s refused by the database", payload.external_id)
                results[position] = {
                    "external_id": payload.external_id,
                    "status": "invalid",
                    "detail": f"the database refused this trajectory: {str(error).strip()}",
                }
                continue
            created[position] = (result.trace, result.created)
    for position, (trace, was_created) in created.items():
        results[position] = {
            "external_id": trace.external_id,
            "status": "created" if was_created else "duplicate",
            "id": trace.pk,
        }
    return [r for r in results if r is not None]


def _bulk_create(
    *,
    project: Project,
    fresh: list[tuple[int, TraceIn, str]],
    api_key: ApiKey | None,
    step_hashes: dict[str, list[str]],
) -> dict[int, tuple[Trace, bool]]:
    if not fresh:
        return {}
    traces: list[Trace] = []
    for _, payload, digest in fresh:
        trace, step_inputs = _complete_trace_build(project=project, payload=payload, digest=digest)
        trace_count_steps(trace, step_inputs)  # counters read kind/tool/is_error/timing only
        trace_set_timing(trace, step_inputs)
        traces.append(trace)
    with transaction.atomic():
        instances_copy(traces, with_ids=True)  # the steps' rows point at these ids
        rows = (
            (trace, step_values(trace=trace, step=step, digest=digest))
            for trace, (_, payload, _) in zip(traces, fresh, strict=True)
            for step, digest in zip(payload.steps, step_hashes[payload.external_id], strict=True)
        )
        steps_copy(rows)
        declared = [d for _, payload, _ in fresh for d in payload.tools]
        tool_profiles_declare(project_id=project.pk, declarations=declared)
        if settings.HINDSIGHT_AUDIT_INGEST:
            instances_copy([_ingest_audit(t, api_key) for t in traces])
        ids = [t.pk for t in traces]
        transaction.on_commit(partial(review_enqueue, trace_ids=ids))
    return {position: (trace, True) for (position, _, _), trace in zip(fresh, traces, strict=True)}


def _json_text(value: Any) -> str:
    """A JSON column's text for COPY (PostgreSQL parses it into jsonb; orjson is ~8x faster than
    json here, and refuses only integers beyond 64 bits, which json writes)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value)


def steps_copy(rows) -> None:
    """COPY steps in (≈ 6x faster than bulk_create's INSERT for hundreds of wide rows)."""
    fields = columns_of(Step)
    plan = [(f.attname, f.get_internal_type() == "JSONField", f.get_default()) for f in fields]

    def values_of(trace: Trace, values: dict[str, Any]) -> list[Any]:
        values["trace_id"] = trace.pk
        row = []
        for attname, is_json, default in plan:
            value = values.get(attname, default)
            row.append(_json_text(value) if is_json else value)
        return row

    rows_copy(Step, fields, (values_of(trace, values) for trace, values in rows))
