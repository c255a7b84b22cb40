"""Tenancy (projects, members, API keys), trajectories and their steps, and the audit log."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q


class Project(models.Model):
    name = models.SlugField(max_length=64, unique=True)
    # What reviewers should know when they work the review queue; written by a project admin,
    # shown as plain text on /queue/.
    review_guidelines = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        REVIEWER = "reviewer"
        ADMIN = "admin"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.REVIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "user"], name="traces_membership_unique_user"
            ),
            models.CheckConstraint(
                condition=Q(role__in=["reviewer", "admin"]), name="traces_membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} ({self.role} of {self.project})"


class ApiKey(models.Model):
    class Scope(models.TextChoices):
        INGEST = "ingest"
        RECALL = "recall"
        ADMIN = "admin"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    # The first characters of the key, shown in lists so a key can be recognised; not secret.
    prefix = models.CharField(max_length=16)
    # sha256 of the whole key: keys are 256-bit random, so a fast hash is enough and keeps auth
    # cheap on every request.
    key_hash = models.CharField(max_length=64, unique=True)
    scopes = ArrayField(models.CharField(max_length=16, choices=Scope.choices))
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(scopes__contained_by=["ingest", "recall", "admin"]),
                name="traces_apikey_scopes_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.project})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Trace(models.Model):
    class TaskType(models.TextChoices):
        QUERY = "query"
        OPERATION = "operation"
        ANALYSIS = "analysis"
        OTHER = "other"

    class Outcome(models.TextChoices):
        SUCCESS = "success"
        FAILURE = "failure"
        PARTIAL = "partial"
        UNKNOWN = "unknown"

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
                condition=Q(outcome__in=["success", "failure", "partial", "unknown"]),
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


class AuditEvent(models.Model):
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_events"
    )
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor_api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # The audit page: a project's events, newest first.
            models.Index(fields=["project", "-id"], name="traces_audit_project_id"),
            # The history of one object (a step's relabels, an experience's edits).
            models.Index(fields=["object_type", "object_id", "-id"], name="traces_audit_object"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type}:{self.object_id}"


class Review(models.Model):
    """One after-the-fact review of a trajectory: a full one, or a local one around an anomaly."""

    class Kind(models.TextChoices):
        FULL = "full"
        LOCAL = "local"

    class Reviewer(models.TextChoices):
        LLM = "llm"
        HEURISTIC = "heuristic"

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="reviews")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # Why it ran: "long_enough" for a full review; "consecutive_failures", "dissatisfaction" or
    # "loop" for a local one.
    trigger = models.CharField(max_length=32)
    window_start = models.PositiveIntegerField()  # step indexes, inclusive
    window_end = models.PositiveIntegerField()
    reviewer = models.CharField(max_length=16, choices=Reviewer.choices)
    model = models.CharField(max_length=200, blank=True)
    prompt_version = models.CharField(max_length=32)
    prompt_chars = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.PositiveIntegerField(default=0)
    goal = models.TextField(blank=True)
    execution_path = models.JSONField(default=list, blank=True)
    effective_steps = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    ineffective_steps = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    key_decisions = models.JSONField(default=list, blank=True)
    improvements = models.JSONField(default=list, blank=True)
    experience = models.TextField(blank=True)  # the reusable experience, in the second person
    is_reference_worthy = models.BooleanField(default=False)
    # The labels this review gave, {index: {label, reason, confidence}}: kept even after humans
    # relabel, to measure agreement and to show what the machine said.
    labels = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # Idempotency: the same review is never applied twice (a redelivered task).
            models.UniqueConstraint(
                fields=["trace", "kind", "window_start", "window_end", "prompt_version"],
                name="traces_review_unique_window",
            ),
            models.CheckConstraint(
                condition=Q(window_end__gte=F("window_start")), name="traces_review_window_order"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["full", "local"]), name="traces_review_kind_valid"
            ),
        ]
        ordering = ["trace_id", "kind", "window_start"]

    def __str__(self) -> str:
        return (
            f"{self.kind} review of trace {self.trace_id} [{self.window_start}-{self.window_end}]"
        )


class ReviewClaim(models.Model):
    """A reviewer's hold on a trajectory taken from the review queue.

    Open while neither finished nor released; it lapses at `expires_at` (released by the next
    claim), so a reviewer who walks away never keeps a trajectory from the others.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="review_claims")
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="review_claims")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="review_claims"
    )
    claimed_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # Two reviewers claiming at the same moment: the database lets only one hold a trace.
            models.UniqueConstraint(
                fields=["trace"],
                condition=Q(finished_at__isnull=True, released_at__isnull=True),
                name="traces_reviewclaim_one_open",
            ),
            models.CheckConstraint(
                condition=Q(expires_at__gt=F("claimed_at")), name="traces_reviewclaim_expiry_order"
            ),
        ]
        indexes = [
            # "My open claim" (queue page, inspector bar) and releasing lapsed claims.
            models.Index(
                fields=["user", "expires_at"],
                condition=Q(finished_at__isnull=True, released_at__isnull=True),
                name="traces_reviewclaim_open_user",
            ),
        ]

    def __str__(self) -> str:
        return f"claim of trace {self.trace_id} by {self.user_id}"

    @property
    def is_open(self) -> bool:
        return self.finished_at is None and self.released_at is None
