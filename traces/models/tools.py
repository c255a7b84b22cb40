"""What a project knows of each tool: what agents declared of it and how it behaved in the
reviewed runs (traces.review.tool_effects reads both to tell a look-up from a change)."""

from django.db import models

from accounts.models.tenancy import Project


class ToolProfile(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tool_profiles")
    name = models.CharField(max_length=200)
    # Declared by an agent (the latest declaration wins): the native `tools` list's `read_only`,
    # MCP's readOnlyHint / destructiveHint; the description of an OpenAI / Anthropic schema.
    declared_read_only = models.BooleanField(null=True)
    description = models.TextField(blank=True)
    # Behaviour over the reviewed runs (traces.services.tool_profiles): calls, calls whose result
    # fed a later step, runs it was called in, runs it ended, successful runs it ended.
    calls = models.PositiveIntegerField(default=0)
    fed_calls = models.PositiveIntegerField(default=0)
    runs = models.PositiveIntegerField(default=0)
    final_in_runs = models.PositiveIntegerField(default=0)
    final_in_successes = models.PositiveIntegerField(default=0)
    # The arguments of the calls that ended runs, {argument summary: runs} (the most frequent
    # 20): a tool whose runs all end on the same argument ("click Buy Now") commits with that
    # one; its other calls navigate.
    final_arguments = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # One profile per tool of a project: ingest and review upsert on it.
            models.UniqueConstraint(fields=["project", "name"], name="traces_toolprofile_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.project_id})"
