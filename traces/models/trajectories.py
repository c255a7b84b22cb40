"""Trajectories and their steps: what an agent did, in order, with the labels reviewers gave."""

from typing import TypeAlias

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q

from accounts.models.tenancy import Project


# How a run ended, as its agent says: the one list of these words. The API's schemas take it as
# their type (traces/schemas.py), the CHECK constraint below its values. Declared out here so
# that Trace.Meta can read it (a nested class body does not see Trace's names); no docstring, as
# the API's JSON schema would show it as the description of "Outcome".
class Outcome(models.TextChoices):
    SUCCESS = "success"
    FAILURE = "failure"
    PARTIAL = "partial"
    UNKNOWN = "unknown"


class Trace(models.Model):
    class TaskType(models.TextChoices):
        QUERY = "query"
        OPERATION = "operation"
        ANALYSIS = "analysis"
        OTHER = "other"

    # An alias mypy reads as the class (a `type` statement would make no class at runtime).
    Outcome: TypeAlias = Outcome  # noqa: UP040

    class ReviewStatus(models.TextChoices):
        PENDING = "pending"
        QUEUED = "queued"
        REVIEWING = "reviewing"
        REVIEWED = "reviewed"
        SKIPPED = "skipped"
        FAILED = "failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="traces")
    external_id = models.CharField(max_length=200)
    agent = models.CharField(max_length=200)
    session_id = models.CharField(max_length=200, blank=True)
    user_ref = models.CharField(max_length=200, blank=True)
    task = models.TextField()
    # Full-text search on the task (words and word prefixes), kept by PostgreSQL itself.
    task_search = models.GeneratedField(
        expression=SearchVector("task", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    task_type = models.CharField(max_length=16, choices=TaskType.choices, default=TaskType.OTHER)
    intent = models.CharField(max_length=500, blank=True)
    environment = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    # Distinct tool names of the tool_call steps, kept in step order of first use.
    tools = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.UNKNOWN)
    feedback = models.TextField(blank=True)
    final_answer = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.BigIntegerField(null=True, blank=True)
    # Null while a streamed trace is still open; a trace is reviewed only once complete.
    completed_at = models.DateTimeField(null=True, blank=True)
    review_status = models.CharField(
        max_length=16, choices=ReviewStatus.choices, default=ReviewStatus.PENDING
    )
    review_status_reason = models.TextField(blank=True)
    review_status_at = models.DateTimeField(auto_now_add=True)
    # The Celery worker (its hostname) that set `reviewing`: when that worker comes back after
    # dying mid-review, it hands the trace back to review at once (review_queue).
    review_worker = models.CharField(max_length=200, blank=True)
    # A human relabel sets labels_changed_at; re-derivation of the experiences sets
    # experiences_derived_at. Beat re-derives traces where the first is newer (a lost task).
    labels_changed_at = models.DateTimeField(null=True, blank=True)
    experiences_derived_at = models.DateTimeField(null=True, blank=True)
    # When its steps' raw observations were dropped after the retention time (summaries stay;
    # traces.services.retention). Null: the raw text is kept.
    observations_raw_dropped_at = models.DateTimeField(null=True, blank=True)
    # Where it stands in the review queue (traces/selectors/queue.py, QueueReason), kept by a
    # trigger on its steps (migrations 0011_queue_priority, 0012_queue_rank: reason * 1000 + the
    # lowest unchecked confidence in thousandths); NULL: no machine label to check.
    queue_priority = models.SmallIntegerField(null=True, editable=False)
    step_count = models.PositiveIntegerField(default=0)
    tool_call_count = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)
    # sha256 of the canonical request body: the same external_id with the same content is a
    # harmless retry (200), with other content a conflict (409).
    content_hash = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="traces_trace_unique_external_id"
            ),
            models.CheckConstraint(
                condition=Q(task_type__in=["query", "operation", "analysis", "other"]),
                name="traces_trace_task_type_valid",
            ),
            models.CheckConstraint(
                condition=Q(outcome__in=Outcome.values),
                name="traces_trace_outcome_valid",
            ),
            models.CheckConstraint(
                condition=Q(
                    review_status__in=[
                        "pending",
                        "queued",
                        "reviewing",
                        "reviewed",
                        "skipped",
                        "failed",
                    ]
                ),
                name="traces_trace_review_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True)
                | Q(started_at__isnull=True)
                | Q(ended_at__gte=F("started_at")),
                name="traces_trace_ends_after_start",
            ),
        ]
        indexes = [
            # The trace list, newest first, keyset-paginated on id within a project.
            models.Index(fields=["project", "-id"], name="traces_trace_project_id"),
            # Filtered lists: by review status (the queue, the beat sweep), agent and outcome.
            models.Index(fields=["project", "review_status", "-id"], name="traces_trace_status_id"),
            models.Index(fields=["project", "agent", "-id"], name="traces_trace_agent_id"),
            models.Index(fields=["project", "outcome", "-id"], name="traces_trace_outcome_id"),
            # The beat sweep: complete traces stuck in pending/queued/reviewing, oldest first.
            models.Index(
                fields=["review_status", "review_status_at"],
                condition=Q(review_status__in=["pending", "queued", "reviewing"]),
                name="traces_trace_sweep",
            ),
            # Retention: reviewed traces still holding raw observations, oldest first.
            models.Index(
                fields=["created_at"],
                condition=Q(observations_raw_dropped_at__isnull=True)
                & Q(review_status__in=["reviewed", "skipped"]),
                name="traces_trace_raw_due",
            ),
            # environment/tool filters: `environment @> ARRAY[...]`, `tools @> ARRAY[...]`.
            GinIndex(fields=["environment"], name="traces_trace_environment_gin"),
            GinIndex(fields=["tools"], name="traces_trace_tools_gin"),
            # Text search on the task: `task_search @@ to_tsquery(...)`.
            GinIndex(fields=["task_search"], name="traces_trace_task_search"),
            # The review queue's pages, most urgent first: a page is an index range.
            models.Index(
                fields=["project", "queue_priority", "id"],
                condition=Q(queue_priority__isnull=False, completed_at__isnull=False),
                name="traces_trace_queue",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.agent})"

    @property
    def is_complete(self) -> bool:
        return self.completed_at is not None


class Step(models.Model):
    class Kind(models.TextChoices):
        USER_INPUT = "user_input"
        LLM_REASONING = "llm_reasoning"
        TOOL_CALL = "tool_call"
        SYSTEM = "system"
        STATE_CHANGE = "state_change"

    class Label(models.TextChoices):
        NECESSARY = "necessary"
        REDUNDANT = "redundant"
        MISLEADING = "misleading"
        FAILED = "failed"

    class LabelSource(models.TextChoices):
        LLM = "llm"
        HEURISTIC = "heuristic"
        HUMAN = "human"

    # Labels a reviewer (not a person) gave: what "Accept all" confirms, what agreement compares.
    MACHINE_LABEL_SOURCES = (LabelSource.LLM, LabelSource.HEURISTIC)

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    # The acting agent when several agents share a trajectory; defaults to the trace's agent.
    agent = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    tool = models.CharField(max_length=200, blank=True)
    arguments = models.JSONField(default=dict, blank=True)
    content = models.TextField(blank=True)
    observation = models.TextField(blank=True)  # the summary the reviewer sees
    observation_raw = models.TextField(blank=True)  # up to HINDSIGHT_OBSERVATION_RAW_CAP
    is_observation_truncated = models.BooleanField(default=False)
    is_error = models.BooleanField(default=False)
    error_type = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.BigIntegerField(null=True, blank=True)
    context = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)

    label = models.CharField(max_length=16, choices=Label.choices, blank=True)
    label_source = models.CharField(max_length=16, choices=LabelSource.choices, blank=True)
    label_reason = models.TextField(blank=True)
    label_confidence = models.FloatField(null=True, blank=True)
    labelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    labelled_at = models.DateTimeField(null=True, blank=True)
    # Incremented on every label change; a relabel names the version it saw (conflict check).
    label_version = models.PositiveIntegerField(default=0)
    # A person confirmed the machine's label wholesale ("Accept all", "Finish & next") without
    # judging this step: it counts as checked, but not as human agreement on /stats/.
    is_accepted_as_is = models.BooleanField(default=False)

    class Meta:
        ordering = ["trace_id", "index"]
        indexes = [
            # "Traces with steps labelled by <source>" (list filter, queue): an index-only probe.
            models.Index(fields=["trace", "label_source"], name="traces_step_trace_source"),
            # Dashboard search over the steps (traces.selectors.trace_list.STEP_SEARCH, the
            # same expression): `to_tsvector(...) @@ query`; built concurrently (0013).
            GinIndex(
                SearchVector("tool", "error_type", "content", "observation", config="simple"),
                name="traces_step_search",
            ),
            # /stats/ agreement: the latest steps people judged one by one, newest first.
            models.Index(
                fields=["-id"],
                condition=Q(label_source="human", is_accepted_as_is=False),
                name="traces_step_judged",
            ),
        ]
        constraints = [
            # Also the index behind "the steps of a trace in order".
            models.UniqueConstraint(fields=["trace", "index"], name="traces_step_unique_index"),
            models.CheckConstraint(
                condition=Q(
                    kind__in=["user_input", "llm_reasoning", "tool_call", "system", "state_change"]
                ),
                name="traces_step_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(label__in=["", "necessary", "redundant", "misleading", "failed"]),
                name="traces_step_label_valid",
            ),
            models.CheckConstraint(
                condition=Q(label_source__in=["", "llm", "heuristic", "human"]),
                name="traces_step_label_source_valid",
            ),
            models.CheckConstraint(
                condition=Q(label_confidence__isnull=True)
                | Q(label_confidence__gte=0, label_confidence__lte=1),
                name="traces_step_confidence_range",
            ),
        ]

    def __str__(self) -> str:
        return f"step {self.index} of trace {self.trace_id}"
