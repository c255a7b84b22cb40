"""An experience and what hangs on it: the scene it is matched on and the advice it gives
(`Experience`), when recall last returned it (`ExperienceRecall`), the trajectories it came from
(`ExperienceSource`) and its earlier wordings (`ExperienceVersion`)."""

from datetime import datetime

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import HalfVectorField, HnswIndex

from accounts.models import Project
from traces.models import Review, Trace
from traces.review.scene import scene_text

EMBEDDING_DIM = settings.HINDSIGHT_EMBEDDING_DIM


class Experience(models.Model):
    class Polarity(models.TextChoices):
        SUCCESS = "success"  # a strategy that worked
        FAILURE = "failure"  # a lesson from what went wrong

    class Status(models.TextChoices):
        CANDIDATE = "candidate"
        APPROVED = "approved"
        PROMOTED = "promoted"
        ARCHIVED = "archived"
        REJECTED = "rejected"

    # Out of use: never recalled, merged into, induced from or contrasted with.
    INACTIVE_STATUSES = (Status.ARCHIVED, Status.REJECTED)

    class Kind(models.TextChoices):
        EPISODE = "episode"  # what one run taught (its replay kept for the very same case)
        WORKFLOW = "workflow"  # the common ordered calls of a family's successful runs
        INSIGHT = "insight"  # what tells a family's successes from its failures

    class Source(models.TextChoices):
        LLM = "llm"
        HEURISTIC = "heuristic"
        HUMAN = "human"  # derived from human-corrected labels, or edited by a person

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="experiences")
    # Scene features: what a recall matches on.
    task_type = models.CharField(max_length=16, default="other")
    tools = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    environment = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    intent = models.CharField(max_length=500, blank=True)
    agent = models.CharField(max_length=200, blank=True)
    task = models.TextField(blank=True)  # the task of the source trajectory, for matching
    # The informative request in 100-150 characters (traces.review.scene): what people read.
    summary = models.CharField(max_length=300, blank=True)
    # The informative request whole (traces.review.scene.scene_request): what is embedded ('' for
    # experiences stored before it was kept: their summary is).
    request = models.TextField(blank=True)
    # sha1 of the normalised task: runs of the same task find each other (contrast, dedup).
    task_key = models.CharField(max_length=40, blank=True)
    # Identifiers and names of the request and of the path, kept whole for keyword search.
    keywords = models.TextField(blank=True)
    # Keyword search over the scene: summary and keywords weigh more than the full task text.
    # English stemming for words ("shoes" finds "shoe"), the simple parser for identifiers.
    search = models.GeneratedField(
        expression=SearchVector("summary", weight="A", config="english")
        + SearchVector("keywords", weight="A", config="simple")
        + SearchVector("task", weight="B", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    # Strategy advice: what a recall injects, in the second person.
    advice = models.TextField()
    # What worked (tool-usage steps in order) and where it went wrong, from the review: the
    # parts that a success / failure of the same task contrasts with (distillation).
    strategy = models.TextField(blank=True)
    pitfall = models.TextField(blank=True)
    # The ordered necessary steps it came from: [{"trace_id", "index", "tool", "summary"}].
    path = models.JSONField(default=list, blank=True)
    polarity = models.CharField(max_length=8, choices=Polarity.choices)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.EPISODE)
    # Episodes: the run with its literal values (ids, names), served in place of the advice only
    # when the very same case comes again (recall's `same_instance`).
    replay = models.TextField(blank=True)
    # Episodes: the step the lesson forbids and why (traces.review.heuristic.blame), {} if none.
    blame = models.JSONField(default=dict, blank=True)
    # Episodes: every call of the run as a placeholder pattern, with its effect and whether it
    # failed or was necessary ([{"tool", "pattern", "effect", "errored", "necessary"}], effect
    # one of read / write / hand_off / unknown; a write also has its "literal", as the replay
    # shows it, for recall to contrast a failed run with its case's successful one): what
    # the family's workflow and insights are induced from (experiences.services.families).
    calls = models.JSONField(default=list, blank=True)
    # An episode that teaches no way to do another case (experiences.services.distill_drafts:
    # teaches_its_case_only): a success whose only change handed the case to a person, or a
    # failure whose lesson is about its own values (its final answer, a look-up that found
    # nothing). Recall serves it only as the replay of its own case (recall_block.servable).
    same_case_only = models.BooleanField(default=False)
    # The task family it belongs to (episodes) or speaks for (workflows, insights).
    family = models.ForeignKey(
        "experiences.TaskFamily",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="experiences",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CANDIDATE)
    source = models.CharField(max_length=10, choices=Source.choices)
    # Scope: empty lists mean "not limited by this"; all empty is global.
    scope_environments = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    scope_agents = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    scope_users = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    # Evidence.
    support_count = models.PositiveIntegerField(default=1)
    success_count = models.PositiveIntegerField(default=0)
    failure_count = models.PositiveIntegerField(default=0)
    upvotes = models.PositiveIntegerField(default=0)
    downvotes = models.PositiveIntegerField(default=0)
    # When evidence last arrived (distilled, merged, re-derived): time decay counts from here.
    evidence_at = models.DateTimeField(default=timezone.now)
    # The embedding of the scene (`scene_text`: request and intent), with the model that made it
    # (a model change is detected). The advice is not embedded: a reworded advice keeps its vector.
    # Stored as halfvec (16-bit floats): half the table and index pages of a 32-bit vector, so a
    # library of 1M experiences stays in memory; the cosine error is ~1e-4 (test_embeddings).
    embedding = HalfVectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    # Bumped by every change of wording: each version is due for a dedup check (ExperienceDedupDue).
    version = models.PositiveIntegerField(default=1)
    # Set when this experience was merged into another (reversible: see ExperienceMerge).
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="absorbed"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(polarity__in=["success", "failure"]),
                name="experiences_experience_polarity_valid",
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=["candidate", "approved", "promoted", "archived", "rejected"]
                ),
                name="experiences_experience_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(source__in=["llm", "heuristic", "human"]),
                name="experiences_experience_source_valid",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["episode", "workflow", "insight"]),
                name="experiences_experience_kind_valid",
            ),
        ]
        indexes = [
            # The library list and API: a project's experiences, newest first, by status.
            models.Index(fields=["project", "-id"], name="experiences_exp_proj_id"),
            models.Index(fields=["project", "status", "-id"], name="experiences_exp_status_id"),
            # Tool-set overlap and environment filters (`tools && ARRAY[...]`).
            # fastupdate off on the GIN indexes of this read-mostly table: with it on, new
            # entries wait in a pending list (up to 4 MB) that every query reads through in
            # full; the keyword ranking spent ~10 of its ~17 ms on it after a bulk load.
            GinIndex(fields=["tools"], name="experiences_exp_tools_gin", fastupdate=False),
            GinIndex(fields=["environment"], name="experiences_exp_env_gin", fastupdate=False),
            # Recall's keyword ranking (`search @@ websearch_to_tsquery(...)`).
            GinIndex(fields=["search"], name="experiences_exp_search_gin", fastupdate=False),
            # Distillation's contrast: the other runs of the same task in a project.
            models.Index(fields=["project", "task_key"], name="experiences_exp_task_key"),
            # Family induction: a family's episodes, and its workflow and insights.
            models.Index(fields=["family", "kind"], name="experiences_exp_family_kind"),
            # Dedup's scene peers (same project, polarity and exact scope): for a rare scope the
            # planner otherwise scans the whole table (94 ms at 100k rows, now ~2 ms).
            models.Index(
                fields=["project", "polarity", "scope_users", "scope_agents", "scope_environments"],
                name="experiences_exp_scope_peers",
            ),
            # Vector ranking for recall and dedup (cosine distance). m=32, ef_construction=128
            # rather than pgvector's 16 / 64 (with hnsw.ef_search 100, see settings): on the
            # clustered 100k bench library, filtered searches returned 91 % of the exact top-5
            # items instead of 79 %, for ~0.4 ms more per query (1.2 ms at the median).
            HnswIndex(
                name="experiences_exp_embed_hnsw",
                fields=["embedding"],
                m=32,
                ef_construction=128,
                opclasses=["halfvec_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return self.advice[:80]

    @property
    def scene_text(self) -> str:
        return scene_text(
            summary=self.summary or self.task, intent=self.intent, request=self.request
        )

    @property
    def last_recalled_at(self) -> datetime | None:
        """When recall last returned it (None: never); lists read it with
        `select_related("recall_stats")`."""
        try:
            return self.recall_stats.last_recalled_at
        except ExperienceRecall.DoesNotExist:
            return None

    @property
    def is_global(self) -> bool:
        return not (self.scope_environments or self.scope_agents or self.scope_users)


class ExperienceRecall(models.Model):
    """When recall last returned an experience, apart from the row that carries its vector:
    recall writes this narrow row (an in-place update: no index covers the time), never the
    experience, so recalls neither rewrite wide rows nor add entries to the HNSW index."""

    experience = models.OneToOneField(
        Experience, primary_key=True, on_delete=models.CASCADE, related_name="recall_stats"
    )
    last_recalled_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"experience {self.experience_id} recalled {self.last_recalled_at:%Y-%m-%d %H:%M}"


class ExperienceDedupDue(models.Model):
    """An experience whose current wording was never compared with the library (dedup): one row
    while its check is due. Written by database triggers (migration 0015) when an unmerged
    experience is inserted or its `version` changes, so every path that writes a wording, bulk
    writes included, leaves a check due; deleted by the check. Beat re-sends the checks whose
    task was lost (`experience_dedup_enqueue_due`). Apart from the experience row, which carries
    the vector: marking a check done deletes this narrow row; rewriting the wide one added an
    entry to the HNSW index at every check."""

    experience = models.OneToOneField(
        Experience, primary_key=True, on_delete=models.CASCADE, related_name="dedup_due"
    )
    version = models.PositiveIntegerField()  # the wording due
    since = models.DateTimeField()  # when it was written

    class Meta:
        indexes = [models.Index(fields=["since"], name="experiences_dedup_due_since")]

    def __str__(self) -> str:
        return f"experience {self.experience_id} v{self.version} due since {self.since:%H:%M}"


class KeywordFrequency(models.Model):
    """How common a word of the library's search text is (the share of experiences holding it):
    a copy of PostgreSQL's statistics on `Experience.search` (`pg_stats.most_common_elems`),
    kept in step by `keyword_stats_refresh`. Recall weighs its keywords by these; a
    plain table keyed by the word costs a recall ~1 ms less than reading the `pg_stats` view."""

    lexeme = models.TextField(primary_key=True)
    frequency = models.FloatField()
    copied_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.lexeme}: {self.frequency:.4f}"


class ExperienceSource(models.Model):
    """Provenance: which trajectory (and review, and steps) an experience came from."""

    experience = models.ForeignKey(Experience, on_delete=models.CASCADE, related_name="sources")
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="experience_sources")
    review = models.ForeignKey(Review, null=True, blank=True, on_delete=models.SET_NULL)
    step_indexes = ArrayField(models.PositiveIntegerField(), default=list, blank=True)
    # The step labels the experience was last derived from, {index: label}: a re-derivation
    # whose labels are the same says nothing new (and does not ask an LLM to re-word it).
    labels = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["experience", "trace"], name="experiences_source_unique_trace"
            ),
        ]
        indexes = [
            # "The experiences this trajectory produced" (inspector, re-derivation).
            models.Index(fields=["trace", "experience"], name="experiences_src_trace"),
        ]

    def __str__(self) -> str:
        return f"experience {self.experience_id} from trace {self.trace_id}"


class ExperienceVersion(models.Model):
    """Earlier wordings of an experience; a new row each time advice or scene changes."""

    experience = models.ForeignKey(Experience, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    advice = models.TextField()
    scene = models.JSONField(default=dict)
    path = models.JSONField(default=list)
    source = models.CharField(max_length=10)
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["experience", "version"], name="experiences_version_unique"
            ),
        ]
        ordering = ["experience_id", "-version"]

    def __str__(self) -> str:
        return f"experience {self.experience_id} v{self.version}"
