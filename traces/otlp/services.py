"""Receiving exported spans: buffer them per trace, store the trace once it is complete.

Why a buffer: exporters send spans as they *end* (a parent after its children) and in batches
that may split a trace over several requests, while the streaming ingest appends steps strictly
in index order. So the spans of a trace wait in `OtelSpan` (unique on span id: a retried export
adds nothing) and become one trajectory, in start-time order, through the streaming ingest
(`trace_open`, `trace_append_steps`, `trace_complete`) when the trace completes:

* when its root arrives: a span without a parent, or an agent span whose parent is in another
  process (the span's flags say the parent is remote);
* or when no span of it has arrived for HINDSIGHT_OTLP_IDLE_SECONDS (beat: `otel_traces_sweep`).

Storing a complete trace is completion.py's.

An export is buffered in one transaction of a few statements whatever its size (a collector's
default batch is 8,192 spans). The first HINDSIGHT_OTLP_INLINE_TRACES traces it completes are
stored before the answer, so their errors reach the exporter in the partial success; the rest
are stored by the worker (`otlp.complete_traces`, COMPLETE_CHUNK traces a task), and a task lost
while the broker was down is made up by the sweep after ROOTED_GRACE_SECONDS.

Spans of a completed trace that are new (not a resend) are rejected in the export's partial
success. One row lock per trace (`OtelTrace`, taken in trace-id order) serialises concurrent
exports of the same trace, so a trace is never completed while another request adds to it.
"""

from dataclasses import dataclass, field
from typing import cast

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Field
from django.utils import timezone
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from accounts.models import ApiKey, Project
from core.copy_rows import rows_copy
from core.publish import tasks_publish
from traces.otlp.completion import otel_trace_complete
from traces.otlp.conventions import (
    SpanFacts,
    attributes_dict,
    root_facts,
    span_facts,
    storable_json,
    text,
)
from traces.otlp.models import OtelSpan, OtelTrace

# Span.flags bits (trace.proto): whether the parent's span context is known to be remote.
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
_MAX_NS = 2**63 - 1  # bigint; OTLP times are fixed64
_MAX_MESSAGES = 5
COMPLETE_TASK = "otlp.complete_traces"
COMPLETE_CHUNK = 50  # traces per task of a big export


@dataclass
class ExportResult:
    rejected_spans: int = 0
    reasons: list[str] = field(default_factory=list)

    def reject(self, count: int, reason: str) -> None:
        if count <= 0:
            return
        self.rejected_spans += count
        if reason not in self.reasons and len(self.reasons) < _MAX_MESSAGES:
            self.reasons.append(reason)

    @property
    def error_message(self) -> str:
        return "; ".join(self.reasons)[:2000]


@dataclass(frozen=True)
class _Received:
    trace_id: str
    span_id: str
    parent_span_id: str
    is_root: bool
    role: str
    start_ns: int
    end_ns: int
    facts: str  # JSON text, as the buffer's jsonb column stores it


def _error_of(span: Span, attrs: dict) -> tuple[bool, str, str]:
    """(is_error, error text, error type) from the status and the `exception` events."""
    exception = next(
        (attributes_dict(e.attributes) for e in span.events if e.name == "exception"), {}
    )
    is_error = span.status.code == Status.STATUS_CODE_ERROR
    message = span.status.message or text(exception.get("exception.message"))
    error_type = text(attrs.get("error.type") or exception.get("exception.type"))
    return is_error, message if is_error else "", error_type if is_error else ""


def _receive(span: Span, resource: dict) -> _Received | str | None:
    """The span as buffered, why it is rejected, or None: of no GenAI kind and not a root."""
    if len(span.trace_id) != 16 or not any(span.trace_id):
        return "spans need a 16-byte, non-zero trace_id"
    if len(span.span_id) != 8 or not any(span.span_id):
        return "spans need an 8-byte, non-zero span_id"
    if len(span.parent_span_id) not in (0, 8):
        return "parent_span_id must be empty or 8 bytes"
    attrs = {**resource, **attributes_dict(span.attributes)}
    has_parent = any(span.parent_span_id)
    remote_parent = bool(span.flags & _HAS_IS_REMOTE) and bool(span.flags & _IS_REMOTE)
    facts: SpanFacts | None = span_facts(span.name, attrs, is_root=not has_parent)
    if facts is None and has_parent:
        return None
    is_root = not has_parent or (facts is not None and facts.role == "agent" and remote_parent)
    if facts is None:  # a root of no GenAI kind: its status and times still count
        facts = root_facts(attrs)
    facts.is_error, facts.error_text, facts.error_type = _error_of(span, attrs)
    data = vars(facts) | {"service_name": text(resource.get("service.name"))[:200]}
    return _Received(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex() if has_parent else "",
        is_root=is_root,
        role=facts.role,
        start_ns=min(span.start_time_unix_nano, _MAX_NS),
        end_ns=min(span.end_time_unix_nano, _MAX_NS),
        facts=storable_json(data),
    )


def otlp_export(
    *, project: Project, request: ExportTraceServiceRequest, api_key: ApiKey | None = None
) -> ExportResult:
    """Buffer the export's agent spans (one transaction for the whole export); store the traces
    it completes: up to HINDSIGHT_OTLP_INLINE_TRACES before answering (their errors in the
    partial success), the rest in the worker (`otlp.complete_traces`). Never raises for data."""
    result = ExportResult()
    by_trace: dict[str, list[_Received]] = {}
    for resource_spans in request.resource_spans:
        resource = attributes_dict(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                received = _receive(span, resource)
                if isinstance(received, str):
                    result.reject(1, received)
                elif received is not None:
                    by_trace.setdefault(received.trace_id, []).append(received)
    rooted = _buffer(project=project, by_trace=by_trace, result=result)
    inline, later = (
        rooted[: settings.HINDSIGHT_OTLP_INLINE_TRACES],
        rooted[settings.HINDSIGHT_OTLP_INLINE_TRACES :],
    )
    for pk, fresh in inline:
        error = otel_trace_complete(pk, api_key=api_key)
        if error:
            result.reject(fresh.spans, f"trace {fresh.trace_id} could not be stored: {error}")
    # The rest in the worker; a lost message is picked up by the sweep (otel_traces_sweep).
    key_id = api_key.pk if api_key is not None else None
    tasks_publish(
        COMPLETE_TASK,
        [([pk for pk, _ in later[i : i + COMPLETE_CHUNK]], key_id)
         for i in range(0, len(later), COMPLETE_CHUNK)],
    )  # fmt: skip
    return result


@dataclass(frozen=True)
class _Fresh:
    trace_id: str
    spans: int  # spans this export added to the trace


def _buffer(
    *, project: Project, by_trace: dict[str, list[_Received]], result: ExportResult
) -> list[tuple[int, _Fresh]]:
    """Add the export's spans to their traces' buffers in one transaction, a few statements
    whatever its size; (OtelTrace pk, what was added) of the open traces that now have their
    root, in trace-id order."""
    if not by_trace:
        return []
    spans_of = {t: list({s.span_id: s for s in spans}.values()) for t, spans in by_trace.items()}
    # A trace is buffered from its first agent, LLM or tool span; a root alone (of no GenAI
    # kind) of a trace we hold nothing of is just an ordinary trace: ignored.
    meaningful = sorted(
        t for t, spans in spans_of.items() if any(s.role != OtelSpan.Role.ROOT for s in spans)
    )
    now = timezone.now()
    with transaction.atomic():
        # Trace-id order, for the inserts and the row locks alike: two exports that share
        # traces take them in the same order (no deadlock).
        _traces_open(project, meaningful, now)
        # Arrays, not IN lists: a collector's 1,024 trace ids and 8,192 span ids made
        # statements psycopg spent 0.1 s splitting.
        traces = list(
            OtelTrace.objects.raw(
                "SELECT * FROM otlp_oteltrace WHERE project_id = %s AND trace_id = ANY(%s) "
                "ORDER BY trace_id FOR UPDATE",
                [project.pk, sorted(spans_of)],
            )
        )
        open_traces = []
        for otel_trace in traces:
            if otel_trace.completed_at is None:
                open_traces.append(otel_trace)
                continue
            known = set(otel_trace.span_ids)
            why = (
                f"trace {otel_trace.trace_id} could not be stored: {otel_trace.error}"
                if otel_trace.error
                else f"trace {otel_trace.trace_id} was already stored as a trajectory; later "
                "spans are dropped"
            )
            late = spans_of[otel_trace.trace_id]
            result.reject(
                sum(1 for s in late if s.role != OtelSpan.Role.ROOT and s.span_id not in known),
                why,
            )
        if not open_traces:
            return []
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT otel_trace_id, span_id FROM otlp_otelspan WHERE otel_trace_id = ANY(%s) "
                "AND span_id = ANY(%s)",
                [
                    [t.pk for t in open_traces],
                    [s.span_id for t in open_traces for s in spans_of[t.trace_id]],
                ],
            )
            stored = set(cursor.fetchall())
        steps = dict(
            OtelSpan.objects.filter(
                otel_trace__in=open_traces, role__in=[OtelSpan.Role.LLM, OtelSpan.Role.TOOL]
            )
            .values("otel_trace_id")
            .annotate(n=Count("id"))
            .values_list("otel_trace_id", "n")
        )
        rows: list[tuple] = []
        rooted: list[tuple[int, _Fresh]] = []
        new_roots: list[int] = []
        for otel_trace in open_traces:
            fresh = [
                s for s in spans_of[otel_trace.trace_id] if (otel_trace.pk, s.span_id) not in stored
            ]
            fresh = _within_step_limit(steps.get(otel_trace.pk, 0), fresh, result)
            rows.extend(_row(otel_trace.pk, s) for s in fresh)
            if not otel_trace.has_root and any(s.is_root for s in fresh):
                new_roots.append(otel_trace.pk)
            if otel_trace.has_root or any(s.is_root for s in fresh):
                rooted.append((otel_trace.pk, _Fresh(otel_trace.trace_id, len(fresh))))
        rows_copy(OtelSpan, _SPAN_COLUMNS, rows)  # COPY: a collector's 8,192 rows in one stream
        OtelTrace.objects.filter(pk__in=[t.pk for t in open_traces]).update(last_received_at=now)
        if new_roots:
            OtelTrace.objects.filter(pk__in=new_roots).update(has_root=True)
    return rooted


# The buffer's rows are written as values, not model instances: building and preparing 8,192
# OtelSpan instances took a third of a collector's export.
_SPAN_COLUMNS = [
    cast(Field, OtelSpan._meta.get_field(name))
    for name in ("otel_trace", "span_id", "parent_span_id", "role", "is_root", "start_ns",
                 "end_ns", "facts")
]  # fmt: skip


def _row(otel_trace_id: int, span: _Received) -> tuple:
    return (otel_trace_id, span.span_id, span.parent_span_id, span.role, span.is_root,
            span.start_ns, span.end_ns, span.facts)  # fmt: skip


_OPEN_TRACES = """
    INSERT INTO otlp_oteltrace (project_id, trace_id, has_root, last_received_at, completed_by,
        error, span_ids, created_at)
    SELECT %s, t, false, %s, '', '', '{}', %s FROM unnest(%s::varchar[]) AS t
    ON CONFLICT DO NOTHING
"""


def _traces_open(project: Project, trace_ids: list[str], now) -> None:
    """A buffer row for each trace id not held yet (one statement; `bulk_create` of a
    collector's 1,024 traces compiled and parsed a statement of 10,000 values)."""
    if trace_ids:
        with connection.cursor() as cursor:
            cursor.execute(_OPEN_TRACES, [project.pk, now, now, trace_ids])


def _within_step_limit(steps: int, fresh: list[_Received], result: ExportResult) -> list[_Received]:
    """The fresh spans that fit under HINDSIGHT_MAX_STEPS, given the trace's `steps` so far."""
    limit = settings.HINDSIGHT_MAX_STEPS
    kept: list[_Received] = []
    refused = 0
    for span in sorted(fresh, key=lambda s: (s.start_ns, s.span_id)):
        if span.role in (OtelSpan.Role.LLM, OtelSpan.Role.TOOL):
            if steps >= limit:
                refused += 1
                continue
            steps += 1
        kept.append(span)
    result.reject(refused, f"at most {limit} LLM and tool spans per trace (HINDSIGHT_MAX_STEPS)")
    return kept
