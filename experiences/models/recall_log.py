"""The recall log: every recall, what it returned, and the agent's feedback on it."""

from django.contrib.postgres.fields import ArrayField
from django.db import models

from accounts.models import Project


class RecallLog(models.Model):
    """Every recall: what was asked and what was returned, and the agent's feedback on it."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="recalls")
    api_key = models.ForeignKey(
        "accounts.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    query = models.JSONField(default=dict)
    # [{"experience_id", "score", "rank"}] in the order returned.
    returned = models.JSONField(default=list)
    helpful = ArrayField(models.BigIntegerField(), default=list, blank=True)
    unhelpful = ArrayField(models.BigIntegerField(), default=list, blank=True)
    feedback_at = models.DateTimeField(null=True, blank=True)
    latency_ms = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # Stats: recalls of a project over time, and the hit rate of those with feedback.
            models.Index(fields=["project", "-id"], name="experiences_recall_proj_id"),
        ]

    def __str__(self) -> str:
        return f"recall {self.pk} ({len(self.returned)} items)"
