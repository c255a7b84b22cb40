"""A task family: runs of one kind of task, whose episodes a workflow and insights are induced
from (experiences.services.families). What is declared (the agent, the intent) must be the
same; where nothing more is declared, a successful run's family is the set of state-changing
tools it used (the kind of change it made: cancel a reservation, book one, change flights), and
a failed run joins the family whose requests its own is nearest to."""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from pgvector.django import HalfVectorField

from accounts.models import Project
from experiences.models.experience import EMBEDDING_DIM


class TaskFamily(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="task_families")
    agent = models.CharField(max_length=200, blank=True)
    intent = models.CharField(max_length=500, blank=True)
    # The state-changing tools its successful runs used, sorted and comma-joined ('' for runs
    # that only read and answered).
    signature = models.CharField(max_length=1000, blank=True)
    # Every tool its runs used: recall's tool filter reads the family's items by these.
    tools = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    environment = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    # The mean of its members' scene vectors (normalised): a failed run joins the nearest, and
    # recall matches the family's workflow and insights on it.
    centroid = HalfVectorField(dimensions=EMBEDDING_DIM)
    size = models.PositiveIntegerField(default=0)  # member runs
    # A member's request, what people read as the family's scene.
    example_request = models.TextField(blank=True)
    # Members when its workflow and insights were last induced (0: never); below `size`, an
    # induction is due (beat re-sends lost ones).
    induced_size = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # A run's family is found (or created) by these: ingest workers race on it.
            models.UniqueConstraint(
                fields=["project", "agent", "intent", "signature"],
                name="experiences_family_unique",
            ),
        ]
        indexes = [
            # Beat: families whose induction is due.
            models.Index(
                fields=["updated_at"],
                condition=models.Q(induced_size__lt=models.F("size")),
                name="experiences_family_due",
            ),
        ]

    def __str__(self) -> str:
        return f"family {self.pk}: {self.signature or 'reads only'} ({self.size} runs)"
