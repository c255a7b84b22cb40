"""Recall is never silently short: it returns min(k, what exact search finds above the relevance
floor), however the other projects of a shared library crowd the HNSW index (issue 26)."""

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.utils import timezone
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from accounts.models import Project
from experiences.embeddings import get_embedder
from experiences.models import Experience
from experiences.services.recall import _query_text, _query_vector, candidates_scored
from experiences.services.recall_candidates import RecallQuery, candidate_rows

pytestmark = pytest.mark.django_db

TASK = "the web container keeps restarting after the deploy"
TOOLS = ["docker_logs", "kubectl_get", "shell"]


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def query_vector() -> np.ndarray:
    return np.array(get_embedder().embed([_query_text(RecallQuery(task=TASK))])[0])


def rows(project: Project, vectors: np.ndarray, *, tools=None, status="approved") -> list:
    """Experiences with these scene vectors; their words share none with TASK (the keyword
    ranking finds nothing: only the vector ranking is under test)."""
    return [
        Experience(
            project=project, task="alpha beta", summary="alpha beta", advice="Use gamma.",
            polarity="success", status=status, source="llm",
            tools=[tools[i % len(tools)]] if tools else ["shell"],
            embedding=vector.tolist(), embedding_model="test",
        )
        for i, vector in enumerate(vectors)
    ]  # fmt: skip


def walk_the_index_as_a_big_library(*, shrunk: bool = True) -> None:
    """Plan and walk as on a big library, scaled down to a test's: the planner takes the HNSW
    index for the nearest rows (on a few hundred rows it would sort them all, which is exact),
    and the walk's limits shrink with the library (production searches 100 wide and gives up
    after 20,000 tuples; a flood of 20,000 near-duplicates was measured to empty it)."""
    with connection.cursor() as cursor:
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            cursor.execute(f"SET LOCAL {setting} = off")
        if shrunk:
            cursor.execute("SET LOCAL hnsw.ef_search = 10")
            cursor.execute("SET LOCAL hnsw.max_scan_tuples = 30")


def flooded_library(make_project, *, mine: int, deleted: int, flood: int, seed: int = 3):
    """Issue 26's library: a small project, another project's near-duplicates of the very task
    it asks about (closer to the query than its own experiences), and deletes (dead rows stay
    in the graph until a vacuum)."""
    rng = np.random.default_rng(seed)
    q = query_vector()
    small, other = make_project("small"), make_project("shared")
    Experience.objects.bulk_create(rows(small, unit(q + rng.normal(0, 0.02, (mine, 384)))))
    doomed = Experience.objects.bulk_create(
        rows(small, unit(q + rng.normal(0, 0.02, (deleted, 384))))
    )
    Experience.objects.bulk_create(rows(other, unit(q + rng.normal(0, 0.005, (flood, 384)))))
    Experience.objects.filter(pk__in=[e.pk for e in doomed]).delete()
    return small


def test_recall_is_full_for_a_small_project_beside_a_flood_of_near_duplicates(
    make_project, make_key, api_for
):
    small = flooded_library(make_project, mine=45, deleted=50, flood=300)
    api = api_for(make_key(small, ("recall",)))
    walk_the_index_as_a_big_library()

    for k in (1, 5, 10):
        items = api.post("recall", {"task": TASK, "k": k}).json()["items"]
        assert len(items) == k
        assert all(i["score_parts"]["similarity"] > 0.8 for i in items)


def test_a_walk_too_short_for_k_items_is_followed_by_an_exact_scan(make_project, settings):
    settings.HINDSIGHT_RECALL_EXACT_ROWS = 10  # the small project's 45 rows go to the index
    small = flooded_library(make_project, mine=45, deleted=50, flood=300)
    walk_the_index_as_a_big_library()
    found = {}
    for k in (2, 20):
        query = RecallQuery(task=TASK, k=k)
        vector = _query_vector(_query_text(query), get_embedder().model_name)
        with connection.cursor() as cursor:
            rows, path = candidate_rows(cursor, project=small, query=query, vector=vector)
        found[k] = path, len(candidates_scored(rows, query=query, now=timezone.now(), limit=k))

    # The shrunk walk reaches a few of the project's rows among the flood: enough for 2.
    assert found == {2: ("index-short", 2), 20: ("index+exact", 20)}


def library(**fields) -> dict:
    return {
        "seed": 1, "near": 15, "far": 10, "archived": 5, "deleted": 10, "flood": 100,
        "others": [10], "tools": [], "k": 5, "exact_rows": 1000, "shrunk": True, "pool": 40,
        **fields,
    }  # fmt: skip


@st.composite
def libraries(draw) -> dict:
    return {
        "seed": draw(st.integers(0, 2**16)),
        "near": draw(st.integers(0, 25)),  # the project's own matches (similarity ~0.93)
        "far": draw(st.integers(0, 30)),  # its experiences of other tasks (~0, below the floor)
        "archived": draw(st.integers(0, 20)),  # near, but filtered out by their status
        "deleted": draw(st.integers(0, 60)),  # near, deleted: dead rows in the graph
        "flood": draw(st.integers(0, 200)),  # another project's near-duplicates (~0.99)
        "others": draw(st.lists(st.integers(0, 40), max_size=2)),  # more projects, loosely near
        "tools": draw(st.sampled_from([[], [TOOLS[0]], TOOLS[1:]])),  # the recall's tool filter
        "k": draw(st.integers(1, 10)),
        "exact_rows": draw(st.sampled_from([0, 1000])),  # 0: every recall walks the index first
        "shrunk": draw(st.booleans()),  # the walk's limits scaled down, or production's
        "pool": draw(st.sampled_from([40, 10])),  # candidates the vector ranking fetches
    }


@pytest.mark.slow
def test_recall_agrees_with_exact_search_in_shared_libraries(make_project, settings):
    """Multi-project libraries with near-duplicate floods and deletes: recall returns as many
    items as exact search finds above the floor (up to k), and only those."""
    q = query_vector()
    floor = django_settings.HINDSIGHT_RECALL_MIN_SIMILARITY
    paths: list[str] = []

    @hypothesis_settings(
        max_examples=8, derandomize=True, database=None, deadline=None,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    @given(library=libraries())
    @example(library=library())  # exact: the project's filtered set is small
    @example(library=library(exact_rows=0, shrunk=False, pool=10))  # a full walk
    @example(library=library(exact_rows=0))  # the walk comes back short, then exact
    def check(library: dict) -> None:
        rng = np.random.default_rng(library["seed"])
        near = lambda n, noise=0.02: unit(q + rng.normal(0, noise, (n, 384)))  # noqa: E731
        with transaction.atomic():
            settings.HINDSIGHT_RECALL_EXACT_ROWS = library["exact_rows"]
            settings.HINDSIGHT_RECALL_CANDIDATES = library["pool"]
            mine = make_project()
            matches = Experience.objects.bulk_create(rows(mine, near(library["near"]), tools=TOOLS))
            Experience.objects.bulk_create(rows(mine, unit(rng.normal(size=(library["far"], 384)))))
            Experience.objects.bulk_create(rows(mine, near(library["archived"]), status="archived"))
            doomed = Experience.objects.bulk_create(rows(mine, near(library["deleted"])))
            Experience.objects.bulk_create(rows(make_project(), near(library["flood"], 0.005)))
            for size in library["others"]:
                Experience.objects.bulk_create(rows(make_project(), near(size, 0.2)))
            Experience.objects.filter(pk__in=[e.pk for e in doomed]).delete()
            walk_the_index_as_a_big_library(shrunk=library["shrunk"])
            query = RecallQuery(task=TASK, k=library["k"], tools=library["tools"])
            vector = _query_vector(_query_text(query), get_embedder().model_name)
            with connection.cursor() as cursor:
                found, path = candidate_rows(cursor, project=mine, query=query, vector=vector)
            items = candidates_scored(found, query=query, now=timezone.now(), limit=query.k)
            paths.append(path)
            expected = {e.pk for e in matches if not query.tools or set(e.tools) & set(query.tools)}
            assert all(float(np.dot(q, e.embedding)) > floor for e in matches)
            got = {item.experience.id for item in items}
            assert len(got) == min(query.k, len(expected)) and got <= expected, path
            transaction.set_rollback(True)

    check()
    assert {"exact", "index", "index+exact"} <= set(paths), paths
