"""The keyword half of recall: identifiers a sentence embedding blurs are matched whole, and the
rows it reads stay within HINDSIGHT_RECALL_KEYWORD_ROWS however common a query's words are."""

import pytest
from django.db import connection

from experiences.embeddings import get_embedder
from experiences.models import Experience
from experiences.services.keyword_stats import keyword_stats_refresh
from experiences.services.recall import _query_text, _query_vector, query_keywords
from experiences.services.recall_candidates import RecallQuery, candidates_sql
from tests.experiences.test_api_recall import make_experience
from traces.review.scene import keywords_of

pytestmark = pytest.mark.django_db

REFUND = "Refund the cancelled flight of reservation {code} for user {user}"


@pytest.fixture
def recall_api(project, make_key, api_for):
    return api_for(make_key(project, ("recall",)))


def refund_experience(project, code: str, user: str) -> Experience:
    summary = REFUND.format(code=code, user=user)
    return make_experience(project, summary=summary, keywords=keywords_of([summary]))


def analyze() -> None:
    assert keyword_stats_refresh(force=True)


def item_of(response, experience: Experience) -> dict:
    (item,) = [i for i in response.json()["items"] if i["experience_id"] == experience.pk]
    return item


def test_an_identifier_in_the_query_finds_its_experience_first(recall_api, project):
    others = [refund_experience(project, f"QX{n:02d}RB", f"noah-k-{n:04d}") for n in range(12)]
    wanted = refund_experience(project, "ZK81QP", "mia-li-3668")
    analyze()

    response = recall_api.post(
        "recall", {"task": "refund reservation ZK81QP, the flight was cancelled", "k": 5}
    )

    assert response.status_code == 200
    first = response.json()["items"][0]
    assert first["experience_id"] == wanted.pk
    assert first["score_parts"]["keyword_rank"] == 1
    # The others share every word but the identifier: none of them outranks it by keyword.
    ranks = [item_of(response, o)["score_parts"]["keyword_rank"] for o in others
             if o.pk in {i["experience_id"] for i in response.json()["items"]}]  # fmt: skip
    assert all(rank == 0 or rank > 1 for rank in ranks)


def test_a_word_that_alone_exceeds_the_row_budget_is_not_read(recall_api, project, settings):
    for n in range(40):  # the rest of the library: other scenes
        summary = f"Rotate the TLS certificate of host-{n:03d} before it expires"
        make_experience(project, "cert", summary=summary, keywords=keywords_of([summary]))
    for n in range(8):
        refund_experience(project, f"QX{n:02d}RB", f"noah-k-{n:04d}")
    wanted = refund_experience(project, "ZK81QP", "mia-li-3668")
    analyze()  # "refund": 9 of 49 rows, under the common-word cut (20 %)
    query = {"task": "refund the reservation ZK81QP", "k": 40, "include_candidates": True}

    settings.HINDSIGHT_RECALL_KEYWORD_ROWS = 100_000  # everything read
    read_all = recall_api.post("recall", query).json()["items"]
    assert sum(i["score_parts"]["keyword_rank"] > 0 for i in read_all) == 9

    # Over a budget of 5 rows "refund" (9 rows) is not read; the identifier is, and its
    # experience is still scored by all the words it holds.
    settings.HINDSIGHT_RECALL_KEYWORD_ROWS = 5
    budgeted = recall_api.post("recall", query).json()["items"]
    by_keyword = [i for i in budgeted if i["score_parts"]["keyword_rank"] > 0]
    assert [i["experience_id"] for i in by_keyword] == [wanted.pk]
    assert budgeted[0]["experience_id"] == wanted.pk


@pytest.mark.slow
def test_the_word_matches_are_never_anded_with_a_bitmap_of_the_filter(project):
    """Given a tool filter, PostgreSQL could AND the few rows holding the query's words with a
    bitmap of every row holding one of the tools (420k rows at 1M experiences: 120 ms). The
    keyword part reads the word matches from the search index alone and filters them row by
    row: with plain and HNSW index scans priced out (bitmaps only), no bitmap is ANDed."""
    template = refund_experience(project, "QX00RB", "noah-k-0000")
    tools = ["docker_logs", "docker_ps", "kubectl", "curl", "helm", "psql"]
    rows = []
    cities = ["Oslo", "Lima", "Pune", "Kyiv", "Perth", "Quito", "Dakar", "Hanoi", "Cusco", "Turin"]
    for n in range(1, 3000):  # words of every frequency, as in a real library's statistics
        summary = REFUND.format(code=f"QX{n:04d}RB", user=f"noah-k-{n:04d}")
        summary += f", flown to {cities[n % 10]} in week {n % 52}"
        rows.append(Experience(
            project=project, task=summary, summary=summary, advice=template.advice,
            keywords=keywords_of([summary]), polarity="success", status="approved", source="llm",
            tools=[tools[n % 6], tools[(n + 1) % 6]], embedding=template.embedding,
            embedding_model=template.embedding_model,
        ))  # fmt: skip
    Experience.objects.bulk_create(rows)
    analyze()
    query = RecallQuery(task="refund reservation QX0006RB", tools=["docker_logs", "kubectl"])
    vector = _query_vector(_query_text(query), get_embedder().model_name)
    sql, params = candidates_sql(
        project=project, query=query, vector=vector, keywords=query_keywords(query)
    )
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")  # bitmaps only, HNSW left out
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(line for (line,) in cursor.fetchall())
        cursor.execute(sql, params)
        found = cursor.fetchall()

    assert "experiences_exp_search_gin" in plan
    assert "BitmapAnd" not in plan, plan
    assert any(row[-1] == "keyword" for row in found)
