"""What people and dedup decide about experiences: merges (reversible), merge proposals,
votes, and the knowledge-base articles promoted experiences are written into."""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from accounts.models import Project
from experiences.models.experience import Experience


class ExperienceMerge(models.Model):
    """One merge of `absorbed` into `survivor`, with enough of both to undo it exactly."""

    class Kind(models.TextChoices):
        AUTO = "auto"
        MANUAL = "manual"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="merges")
    survivor = models.ForeignKey(Experience, on_delete=models.CASCADE, related_name="merges_kept")
    absorbed = models.ForeignKey(Experience, on_delete=models.CASCADE, related_name="merges_lost")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    similarity = models.FloatField()
    # Field values of both experiences before the merge, and the ids of the absorbed one's sources.
    before = models.JSONField()
    merged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The merge history page, newest first.
            models.Index(fields=["project", "-id"], name="experiences_merge_proj_id"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} merge of {self.absorbed_id} into {self.survivor_id}"


class MergeProposal(models.Model):
    """Two experiences similar enough to ask an admin whether they are the same."""

    class Status(models.TextChoices):
        OPEN = "open"
        MERGED = "merged"
        DISMISSED = "dismissed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="merge_proposals")
    # first.id < second.id, so a pair is proposed once whichever of the two arrived last.
    first = models.ForeignKey(Experience, on_delete=models.CASCADE, related_name="+")
    second = models.ForeignKey(Experience, on_delete=models.CASCADE, related_name="+")
    similarity = models.FloatField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["first", "second"], name="experiences_proposal_unique_pair"
            ),
            models.CheckConstraint(
                condition=Q(first__lt=models.F("second")), name="experiences_proposal_pair_order"
            ),
        ]
        indexes = [
            # The merge queue: open proposals of a project, most similar first.
            models.Index(
                fields=["project", "-similarity"],
                condition=Q(status="open"),
                name="experiences_proposal_open",
            ),
        ]

    def __str__(self) -> str:
        return f"proposal {self.first_id} ~ {self.second_id} ({self.status})"


class ExperienceVote(models.Model):
    """A reviewer's vote on an experience: one per person; changing it moves the counts."""

    experience = models.ForeignKey(Experience, on_delete=models.CASCADE, related_name="votes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    value = models.SmallIntegerField()  # +1 or -1
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["experience", "user"], name="experiences_vote_unique_user"
            ),
            models.CheckConstraint(
                condition=Q(value__in=[1, -1]), name="experiences_vote_value_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.value:+d} on experience {self.experience_id}"


class KbArticle(models.Model):
    """A knowledge-base article: promoted experiences of one tool or task type as best practice."""

    class Generator(models.TextChoices):
        LLM = "llm"
        TEMPLATE = "template"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="kb_articles")
    # "tool:docker_logs" or "task_type:operation": what the article groups by.
    key = models.CharField(max_length=250)
    title = models.CharField(max_length=300)
    body = models.TextField()
    experience_ids = ArrayField(models.BigIntegerField(), default=list)
    generated_by = models.CharField(max_length=10, choices=Generator.choices)
    # An article edited by a person is not overwritten by a rebuild.
    is_edited = models.BooleanField(default=False)
    edited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="experiences_kb_unique_key"),
        ]
        ordering = ["project_id", "key"]

    def __str__(self) -> str:
        return self.title
