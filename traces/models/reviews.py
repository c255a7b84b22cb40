"""Reviews of trajectories (full or local, by the LLM or the heuristic reviewer) and the claims
reviewers hold on trajectories taken from the review queue."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import F, Q

from accounts.models.tenancy import Project
from traces.models.trajectories import Trace


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
    # What "Finish" accepted as is, {index: [machine source, labelled_at]}, and when it was undone
    # (within HINDSIGHT_FINISH_UNDO_MINUTES: the labels go back to the machine, the claim reopens).
    accepted_steps = models.JSONField(default=dict, blank=True)
    finish_undone_at = models.DateTimeField(null=True, blank=True)

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
