"""Failure patterns: recurring ways a tool call fails, the raw material of warnings."""

from django.contrib.postgres.fields import ArrayField
from django.db import models

from accounts.models import Project


class FailurePattern(models.Model):
    """A recurring way a tool call fails: the raw material for warnings before risky calls."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="failure_patterns")
    tool = models.CharField(max_length=200)
    # The argument keys and value kinds, e.g. {"force": "bool", "path": "path"}.
    argument_shape = models.JSONField(default=dict)
    # A normalised error line (numbers, ids and paths replaced), e.g. "permission denied: <path>".
    error_signature = models.TextField()
    # sha256 of tool + shape + signature: one pattern per distinct failure.
    signature_hash = models.CharField(max_length=64)
    instead = models.TextField(blank=True)  # what to do instead, when the trajectory shows it
    example_arguments = models.JSONField(default=dict, blank=True)
    environment = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    agents = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    occurrences = models.PositiveIntegerField(default=1)
    # [{"trace_id", "index"}], the most recent first, capped.
    sources = models.JSONField(default=list, blank=True)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "signature_hash"], name="experiences_pattern_unique_signature"
            ),
        ]
        indexes = [
            # Warnings: the patterns of one tool in a project, most frequent first.
            models.Index(fields=["project", "tool", "-occurrences"], name="experiences_pat_tool"),
        ]

    def __str__(self) -> str:
        return f"{self.tool}: {self.error_signature[:60]}"
