"""Re-embedding the library after an embedding model change (detected per vector)."""

from collections.abc import Callable

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q

from experiences.embeddings import embed_in_batches, get_embedder
from experiences.models import Experience, ExperienceSource
from experiences.services.dedup import dedup_due_mark
from traces.models import Trace
from traces.review.scene import scene_request
from traces.review.service import step_view

HNSW_INDEX = "experiences_exp_embed_hnsw"


def embedding_column_dimensions() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT atttypmod FROM pg_attribute "
            "WHERE attrelid = 'experiences_experience'::regclass AND attname = 'embedding'"
        )
        row = cursor.fetchone()
    return row[0] if row and row[0] > 0 else None


def embedding_column_resize(dimensions: int) -> None:
    """Change the vector column's size; every stored vector is dropped (they are recomputed)."""
    with transaction.atomic(), connection.cursor() as cursor:
        # Deferred foreign-key checks of earlier writes in this transaction would block ALTER.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f'DROP INDEX IF EXISTS "{HNSW_INDEX}"')
        cursor.execute(
            "ALTER TABLE experiences_experience "
            f"ALTER COLUMN embedding TYPE halfvec({int(dimensions)}) USING NULL"
        )
        cursor.execute("UPDATE experiences_experience SET embedding_model = ''")
        hnsw_index_build()


def hnsw_index_build() -> None:
    """(Re)build the vector index as the model declares it (m, ef_construction), with memory
    enough to build the graph in one pass (HINDSIGHT_HNSW_BUILD_MEMORY; the default 64 MB makes
    a 100k build ~4x slower)."""
    index = next(i for i in Experience._meta.indexes if i.name == HNSW_INDEX)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL maintenance_work_mem = '{settings.HINDSIGHT_HNSW_BUILD_MEMORY}'")
        cursor.execute(f'DROP INDEX IF EXISTS "{HNSW_INDEX}"')
        cursor.execute(
            f'CREATE INDEX "{HNSW_INDEX}" ON experiences_experience USING hnsw '
            f"(embedding {index.opclasses[0]}) WITH (m = {int(index.m)}, "
            f"ef_construction = {int(index.ef_construction)})"
        )


def experiences_to_reembed(*, everything: bool = False):
    queryset = Experience.objects.all()
    if not everything:
        model = get_embedder().model_name
        queryset = queryset.filter(Q(embedding__isnull=True) | ~Q(embedding_model=model))
    return queryset.order_by("pk")


def experiences_reembed(
    *, everything: bool = False, on_progress: Callable[[int], None] | None = None
) -> int:
    """Recompute vectors in batches; returns how many were re-embedded.

    Each re-embedded experience is due for a dedup check again (beat's sweep sends it): its
    similarities to the rest of the library moved with the model.
    """
    model = get_embedder().model_name
    batch = settings.HINDSIGHT_EMBEDDING_BATCH * 4
    ids = list(experiences_to_reembed(everything=everything).values_list("pk", flat=True))
    done = 0
    for start in range(0, len(ids), batch):
        rows = list(
            Experience.objects.filter(pk__in=ids[start : start + batch]).only(
                "pk", "task", "summary", "request", "intent", "version", "merged_into_id"
            )
        )
        vectors = embed_in_batches([e.scene_text for e in rows])
        for experience, vector in zip(rows, vectors, strict=True):
            experience.embedding = vector
            experience.embedding_model = model
        with transaction.atomic():
            Experience.objects.bulk_update(rows, ["embedding", "embedding_model"])
            dedup_due_mark(rows)  # a new vector: compare it with the library again
        done += len(rows)
        if on_progress:
            on_progress(len(rows))
    return done


def _request_of(trace: Trace) -> str:
    """The trace's informative request; its steps are read lazily, and scene_request stops at
    the first tool call."""
    steps = trace.steps.order_by("index").iterator(chunk_size=20)
    return scene_request(trace.task, (step_view(step) for step in steps))


def experiences_requests_fill(*, on_progress: Callable[[int], None] | None = None) -> int:
    """Experiences stored before the whole request was kept (`request` empty) get it from their
    first source trajectory, and their vector is marked for re-embedding (`embedding_model`
    cleared: `experiences_reembed` then makes it from the request). Returns how many."""
    filled = 0
    pending = Experience.objects.filter(request="", sources__isnull=False).distinct()
    ids = list(pending.order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), 200):
        chunk = ids[start : start + 200]
        first_source: dict[int, int] = {}
        for experience_id, trace_id in (
            ExperienceSource.objects.filter(experience_id__in=chunk)
            .order_by("experience_id", "id")
            .values_list("experience_id", "trace_id")
        ):
            first_source.setdefault(experience_id, trace_id)
        traces = Trace.objects.in_bulk(set(first_source.values()))
        for experience_id, trace_id in first_source.items():
            request = _request_of(traces[trace_id])
            if request:
                filled += Experience.objects.filter(pk=experience_id, request="").update(
                    request=request, embedding_model=""
                )
        if on_progress:
            on_progress(len(chunk))
    return filled
