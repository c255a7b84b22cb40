"""Hybrid recall: rule pre-filter in SQL, vector and keyword rankings fused, explainable scoring.
The candidates' statement (filter and both rankings) is recall_candidates.py; this module
scores its rows, orders and words the answer (recall_block.py) and logs it.

score = relevance × decay × environment × evidence, each part returned to the caller:

* relevance — a weighted sum of two scores in [0, 1] of each candidate of the pre-filtered
  library: its cosine similarity to the query's scene (its informative request and intent; the
  vector ranking, HNSW index) and the share of the query's keyword information it holds (the
  inverse-frequency weights of the query's words and identifiers it contains over those of all
  of them; PostgreSQL full-text search over summary, identifiers and task, GIN index; words
  every experience shares left out). Scores, not ranks: a near-repeat of the task (similarity
  0.9) stays ahead of a loosely related scene (0.65) whatever the evidence factors say, which
  rank fusion (1 / (60 + rank)) flattened into a few percent. `score_parts` shows
  `similarity`, `keyword` and each list's rank (`vector_rank`, `keyword_rank`; 0: not in it).
* decay — 0.5 ** (age / half-life), age since the last evidence; half-life 30 days for success
  strategies, 90 for failure lessons (settings).
* environment — 1 when the environments overlap or either is unknown; HINDSIGHT_RECALL_ENV_MISMATCH
  (0.6) when both are known and disjoint; such items are flagged `environment_match: false`.
* evidence — human status (approved ×1.1, promoted ×1.2) × votes (1 + 0.05 per net vote, within
  0.5–1.5) × support (1 + 0.1·log2(support count); 1 for a family's workflow and insights,
  which are matched on the family's centroid: their run count is shown, not scored).
"""

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import connections, router
from django.utils import timezone

from accounts.models import ApiKey, Project
from experiences.embeddings import get_embedder
from experiences.models import Experience
from experiences.services.recall_block import (
    FamilyVote,
    family_ways,
    ordered,
    prompt_block,
    servable,
    served_items,
    with_cases,
)
from experiences.services.recall_candidates import (
    RECALLED_COLUMNS,
    Recalled,
    RecallQuery,
    candidate_rows,
)
from experiences.services.recall_cases import (
    Case,
    contrasted,
    same_case_of,
    without_longer_ways,
)
from experiences.services.recall_log import recall_log_write
from experiences.services.warnings import WarningItem, warnings_for_tools
from traces.review.scene import keywords_of, query_request, scene_text

STATUS_BONUS = {"approved": 1.1, "promoted": 1.2}


@dataclass(frozen=True)
class RecallItem:
    experience: Recalled
    score: float
    score_parts: dict[str, float]
    environment_match: bool | None
    case: Case = Case()  # the same case as the query, and then its replay (recall_cases)


@dataclass(frozen=True)
class RecallResult:
    log_id: int
    items: list[RecallItem]
    prompt_block: str
    warnings: list[WarningItem]


def decay_factor(*, age_days: float, polarity: str) -> float:
    half_life = (
        settings.HINDSIGHT_RECALL_FAILURE_HALF_LIFE_DAYS
        if polarity == Experience.Polarity.FAILURE
        else settings.HINDSIGHT_RECALL_HALF_LIFE_DAYS
    )
    return 0.5 ** (max(age_days, 0.0) / half_life)


def environment_match(asked: list[str], experience_env: list[str]) -> bool | None:
    if not asked or not experience_env:
        return None  # unknown on one side: neither confirmed nor contradicted
    return bool(set(asked) & set(experience_env))


def evidence_factor(*, status: str, upvotes: int, downvotes: int, support_count: int) -> float:
    votes = min(1.5, max(0.5, 1 + 0.05 * (upvotes - downvotes)))
    support = 1 + 0.1 * math.log2(max(support_count, 1))
    return STATUS_BONUS.get(status, 1.0) * votes * support


# Where candidates_sql puts each column of Recalled.
_AT = {name: i for i, name in enumerate(RECALLED_COLUMNS)}


def candidates_scored(
    rows: Sequence[Sequence[Any]], *, query: RecallQuery, now: datetime, limit: int | None = None
) -> list[RecallItem]:
    """Rows of `candidates_sql` as items, best score first (the best `limit` of them).

    relevance = (1 - HINDSIGHT_RECALL_KEYWORD_WEIGHT) × similarity + weight × keyword share,
    then decay (by the evidence's age in whole hours), environment and evidence. A candidate
    below HINDSIGHT_RECALL_MIN_SIMILARITY that no keyword found is dropped; a keyword match is
    kept whatever its vector. Every candidate is scored from its columns; only the items
    returned are built (their path decoded): building all 80 cost ~1 ms per recall.
    """
    found: dict[int, tuple[list[Any], float, float]] = {}
    vector_rows, keyword_rows = [], []
    for row in rows:
        *columns, distance, keyword, ranking = row
        found.setdefault(columns[0], (columns, distance, keyword))
        if ranking == "vector":
            vector_rows.append((distance, columns[0]))
        else:
            keyword_rows.append((-keyword, distance, columns[0]))
    ranks: dict[int, dict[str, int]] = {i: {} for i in found}
    for rank, (*_, experience_id) in enumerate(sorted(vector_rows), start=1):
        ranks[experience_id].setdefault("vector", rank)
    for rank, (*_, experience_id) in enumerate(sorted(keyword_rows), start=1):
        ranks[experience_id].setdefault("keyword", rank)
    weight = settings.HINDSIGHT_RECALL_KEYWORD_WEIGHT
    minimum = settings.HINDSIGHT_RECALL_MIN_SIMILARITY
    mismatch = settings.HINDSIGHT_RECALL_ENV_MISMATCH
    scored = []
    for experience_id, (columns, distance, keyword) in found.items():
        similarity = 1 - distance
        if "keyword" not in ranks[experience_id] and similarity < minimum:
            continue
        match = environment_match(query.environment, columns[_AT["environment"]])
        # In whole hours: two recalls a moment apart rank alike (an age in seconds reordered
        # near-ties from one call to the next), and a half-life of hours still decays.
        age_days = (now - columns[_AT["evidence_at"]]) // timedelta(hours=1) / 24
        decay = round(decay_factor(age_days=age_days, polarity=columns[_AT["polarity"]]), 4)
        environment = mismatch if match is False else 1.0
        evidence = round(
            evidence_factor(
                status=columns[_AT["status"]],
                upvotes=columns[_AT["upvotes"]],
                downvotes=columns[_AT["downvotes"]],
                # A family's workflow or insight speaks for its runs by its centroid already: its
                # run count is shown, not added to its score (it would bury the same case).
                support_count=columns[_AT["support_count"]]
                if columns[_AT["kind"]] == "episode"
                else 1,
            ),
            4,
        )
        relevance = (1 - weight) * max(similarity, 0.0) + weight * keyword
        score = round(relevance * decay * environment * evidence, 4)
        parts = (relevance, keyword, similarity, decay, environment, evidence)
        scored.append((score, round(similarity, 4), experience_id, parts, match))
    scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
    items = []
    for score, _, experience_id, parts, match in scored[:limit]:
        relevance, keyword, similarity, decay, environment, evidence = parts
        score_parts = {
            "relevance": round(relevance, 4),
            "keyword": round(keyword, 4),
            "vector_rank": ranks[experience_id].get("vector") or 0,
            "keyword_rank": ranks[experience_id].get("keyword") or 0,
            "similarity": round(similarity, 4),
            "decay": decay,
            "environment": environment,
            "evidence": evidence,
        }
        experience = Recalled.from_row(found[experience_id][0])
        items.append(RecallItem(experience, score, score_parts, match))
    return items


def _query_text(query: RecallQuery) -> str:
    return scene_text(summary=query_request(query.task), intent=query.intent or "")


def query_keywords(query: RecallQuery) -> tuple[str, str]:
    """The words (the whole task and intent) and the identifiers and names for keyword search,
    written like an experience's keywords."""
    text = f"{query.task}\n{query.intent}" if query.intent else query.task
    return text, keywords_of([text])


@lru_cache(maxsize=2048)
def _query_vector(text: str, model_name: str) -> str:
    # An agent recalls for the same task at every step of a session: a cache hit costs nothing,
    # the local model ~2 ms. Kept as pgvector's text form, ready to bind. Keyed by model name
    # so a model change never serves a stale vector.
    (vector,) = get_embedder().embed([text])
    # Six significant digits are more than halfvec keeps (~3.3); pgvector's own str(float) of
    # each of 384 values took 0.45 ms per recall, this 0.2 ms.
    return "[" + ",".join(map("{:.6g}".format, vector)) + "]"


def experience_recall(
    *, project: Project, query: RecallQuery, api_key: ApiKey | None = None
) -> RecallResult:
    started = time.perf_counter()
    vector = _query_vector(_query_text(query), get_embedder().model_name)
    # A read replica when one is configured (DATABASE_REPLICA_URL) and answers, else the primary.
    with connections[router.db_for_read(Experience, replica=True)].cursor() as cursor:
        rows, _ = candidate_rows(
            cursor, project=project, query=query, vector=vector, keywords=query_keywords(query)
        )
    now = timezone.now()
    scored = candidates_scored(rows, query=query, now=now)
    vote = FamilyVote.of(scored, k=query.k)
    servable_items, known = servable(scored, query.task)
    # The same case's longer ways are left out before the k are taken (recall_cases): the cases
    # of twice k candidates, the asked family's workflow among them, are read in one query.
    pool = served_items(servable_items, k=2 * query.k, family_id=vote.asked)
    known = {**known, **same_case_of(pool, query.task, known)}
    items = served_items(without_longer_ways(pool, known), k=query.k, family_id=vote.asked)
    warnings = (
        warnings_for_tools(project=project, tools=query.tools) if query.include_warnings else []
    )
    log_id = recall_log_write(
        project=project,
        api_key=api_key,
        query=asdict(query),
        returned=[(item.experience.id, item.score) for item in items],
        now=now,
        latency_ms=round((time.perf_counter() - started) * 1000, 2),
    )
    cases = contrasted(items, same_case_of(items, query.task, known))
    # The asked family's workflow goes first only when the vote is clear; a split vote is said.
    items = ordered(
        with_cases(items, cases),
        family_id=vote.asked if vote.clear else None,
        unanimous=vote.unanimous,
    )
    block = prompt_block(items, cases, query.environment, ways=family_ways(vote))
    return RecallResult(log_id=log_id, items=items, prompt_block=block, warnings=warnings)
