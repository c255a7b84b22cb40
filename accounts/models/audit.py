"""The audit log: who (a user or an API key) did what to which object, with before and after."""

from django.conf import settings
from django.db import models

from accounts.models.tenancy import ApiKey, Project


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
        db_table = "traces_auditevent"  # made in traces/ (moved here with its rows)
        indexes = [
            # The audit page: a project's events, newest first.
            models.Index(fields=["project", "-id"], name="traces_audit_project_id"),
            # The history of one object (a step's relabels, an experience's edits).
            models.Index(fields=["object_type", "object_id", "-id"], name="traces_audit_object"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type}:{self.object_id}"
