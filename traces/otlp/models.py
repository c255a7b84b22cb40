"""The receive buffer: spans of an OpenTelemetry trace wait here until the trace is complete.

Spans arrive in end order, over several export requests, and may be sent twice; the streaming
ingest only appends in step order. So spans are kept here (one row per span id, the natural key
that makes a resent export harmless) and turned into one trajectory when the trace completes.
"""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from accounts.models import Project
from traces.models import Trace


class OtelTrace(models.Model):
    """One OpenTelemetry trace id of a project: buffering until complete, then its trajectory."""

    class CompletedBy(models.TextChoices):
        ROOT = "root"  # its root span arrived
        IDLE = "idle"  # no span for HINDSIGHT_OTLP_IDLE_SECONDS (beat's sweep)

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="otel_traces")
    trace_id = models.CharField(max_length=32)  # lower-case hex, as in OTLP/JSON
    has_root = models.BooleanField(default=False)
    last_received_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    completed_by = models.CharField(max_length=8, choices=CompletedBy.choices, blank=True)
    # Why storing the trajectory failed (e.g. the external id was taken); the buffer is closed.
    error = models.TextField(blank=True)
    # the trajectory it became (trace_id is the OpenTelemetry id, hence not `trace`)
    trajectory = models.ForeignKey(
        Trace, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Span ids stored in the trajectory: once the buffer is emptied, a resent span is recognised
    # as a duplicate (accepted) rather than a late one (rejected).
    span_ids = ArrayField(models.CharField(max_length=16), default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "trace_id"], name="otlp_oteltrace_unique_trace_id"
            ),
            models.CheckConstraint(
                condition=Q(completed_by__in=["", "root", "idle"]),
                name="otlp_oteltrace_completed_by_valid",
            ),
        ]
        indexes = [
            # The idle sweep: open buffers, least recently fed first.
            models.Index(
                fields=["last_received_at"],
                condition=Q(completed_at__isnull=True),
                name="otlp_oteltrace_idle",
            ),
        ]

    def __str__(self) -> str:
        return f"otel {self.trace_id} ({self.project})"


class OtelSpan(models.Model):
    """A received span that means something to a trajectory (agent run, LLM call, tool call)."""

    class Role(models.TextChoices):
        AGENT = "agent"  # an agent run: gives the task, the agent name, the final answer
        LLM = "llm"  # an llm_reasoning step
        TOOL = "tool"  # a tool_call step
        ROOT = "root"  # the trace's root, of no GenAI kind: only its timing and status count

    otel_trace = models.ForeignKey(OtelTrace, on_delete=models.CASCADE, related_name="spans")
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    role = models.CharField(max_length=8, choices=Role.choices)
    is_root = models.BooleanField(default=False)
    # Nanoseconds since the epoch, as sent: the step order is start time, then end time.
    start_ns = models.BigIntegerField()
    end_ns = models.BigIntegerField()
    # The mapped facts (conventions.SpanFacts as JSON): names, arguments, texts, status.
    facts = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["otel_trace", "span_id"], name="otlp_otelspan_unique_span_id"
            ),
            models.CheckConstraint(
                condition=Q(role__in=["agent", "llm", "tool", "root"]),
                name="otlp_otelspan_role_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} span {self.span_id}"
