"""Recall's candidates: the rule pre-filter and the two rankings (vector, keyword) as one SQL
statement, and the columns of each candidate row (`Recalled`). Scoring them is recall.py's.

The statement reads the experiences table in plain SQL (the ORM spent ~2.5 ms per recall
compiling a query and building 40 model instances). The vector ranking is exact over a small
filtered set and the HNSW walk over a big one (see `candidates_sql`); the keyword ranking is
PostgreSQL full-text search weighted by each word's inverse frequency (see `_KEYWORD_QUERY`).
"""

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from django.conf import settings

from accounts.models import Project
from experiences.models import Experience

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RecallQuery:
    task: str
    task_type: str | None = None
    intent: str | None = None
    environment: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    agent: str | None = None
    user: str | None = None
    k: int = 5
    include_candidates: bool = False
    include_warnings: bool = True


@dataclass(frozen=True)
class Recalled:
    """The columns of an experience that recall scores and returns (no model instance: the hot
    path reads 40 candidate rows per request)."""

    id: int
    advice: str
    polarity: str
    kind: str
    status: str
    environment: list[str]
    tools: list[str]
    path: list[dict]
    evidence_at: datetime
    upvotes: int
    downvotes: int
    support_count: int
    family_id: int | None  # the task family it belongs to (episodes) or speaks for
    same_case_only: bool  # served only as its own case's replay (Experience.same_case_only)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> "Recalled":
        values = dict(zip(RECALLED_COLUMNS, row, strict=True))
        if isinstance(values["path"], str):  # Django's psycopg setup leaves jsonb undecoded
            values["path"] = json.loads(values["path"])
        return cls(**values)


# In the order of the candidate query's columns (`fields()` costs ~0.6 ms per recall of 80 rows).
RECALLED_COLUMNS = tuple(f.name for f in fields(Recalled))


def _filters(*, project: Project, query: RecallQuery) -> tuple[list[str], list]:
    """The rule pre-filter, shared by both rankings: the project; status (approved and promoted,
    candidates when asked); scope entitlement (each of environments / agents / users
    unrestricted, or matching the asker); tool overlap when tools are given; task type when
    given."""
    statuses = [Experience.Status.APPROVED.value, Experience.Status.PROMOTED.value]
    if query.include_candidates:
        statuses.append(Experience.Status.CANDIDATE.value)
    where = [
        "project_id = %s",
        "status = ANY(%s::varchar[])",
        "embedding IS NOT NULL",
        "merged_into_id IS NULL",
    ]
    params: list = [project.pk, statuses]
    for column, asked in (
        ("scope_environments", query.environment),
        ("scope_agents", [query.agent] if query.agent else []),
        ("scope_users", [query.user] if query.user else []),
    ):
        if asked:
            where.append(f"({column} = '{{}}' OR {column} && %s::varchar[])")
            params.append(asked)
        else:
            where.append(f"{column} = '{{}}'")
    if query.tools:
        where.append("tools && %s::varchar[]")
        params.append(query.tools)
    if query.task_type:
        where.append("task_type = %s")
        params.append(query.task_type)
    return where, params


# The keyword query: the query's words (English stems) and identifiers (whole), each weighted by
# its inverse document frequency from PostgreSQL's own statistics (ANALYZE keeps the most common
# elements of a tsvector column with their frequencies, copied into KeywordFrequency by
# keyword_stats_refresh; a lexeme not among them is taken at half the rarest listed frequency,
# as PostgreSQL's own estimate does). Lexemes in more than HINDSIGHT_RECALL_COMMON_TERM of the
# library are left out: words every experience shares ("need", "price") tell no tasks apart.
# The rows read are those holding the rarest words, as many words as keep the estimated rows
# within HINDSIGHT_RECALL_KEYWORD_ROWS (a word that alone matches more is no identifier: that
# part is the vector ranking's); each row read is scored by the sum of the weights of all the
# words it holds.
_KEYWORD_QUERY = """
    keyword_terms AS (
        SELECT t.lexeme, quote_literal(t.lexeme)::tsquery AS q, greatest(coalesce(
            (SELECT frequency FROM experiences_keywordfrequency WHERE lexeme = t.lexeme),
            (SELECT min(frequency) / 2 FROM experiences_keywordfrequency), 0.01), 0.0001) AS freq
        FROM unnest(to_tsvector('english', %s) || to_tsvector('simple', %s)) AS t
    ),
    kept_terms AS (
        SELECT lexeme, q, -ln(freq) AS idf, freq FROM keyword_terms WHERE freq < %s
    ),
    read_terms AS (
        SELECT q FROM (
            SELECT q, sum(freq) OVER (ORDER BY freq, lexeme) AS upto FROM kept_terms
        ) ranked
        WHERE upto * (SELECT greatest(reltuples, 1) FROM pg_class
                       WHERE oid = 'experiences_experience'::regclass) < %s
    ),
    keyword_query AS (SELECT string_agg(q::text, ' | ')::tsquery AS q FROM read_terms)"""

# A row's keyword score: the share of the query's kept keyword weight that its words hold.
_KEYWORD_SCORE = (
    "coalesce((SELECT sum(k.idf) FROM kept_terms k WHERE search @@ k.q) / "
    "nullif((SELECT sum(idf) FROM kept_terms), 0), 0)::real"
)


# The vector ranking has two ways to find a scene's nearest experiences, chosen per statement:
#
# * exact: the distance of every row passing the pre-filter, sorted. Cheap while the filtered
#   set is small (a small project in a big shared library, a selective tool filter), and always
#   complete. The distances are computed in a materialized CTE, where no index can serve them:
#   PostgreSQL cannot turn that sort into an approximate HNSW walk behind our back.
# * index: the HNSW walk (iterative scan, see settings), for a filtered set above
#   HINDSIGHT_RECALL_EXACT_ROWS. pgvector filters the walk's candidates after the fact; when
#   another project's near-duplicates or dead rows crowd the query's neighbourhood, the walk
#   spends hnsw.max_scan_tuples (or its memory, hnsw.scan_mem_multiplier × work_mem) before
#   enough rows pass and comes back short, or empty (issue 26: 39 of 40 recalls empty while
#   exact search had 40 matches). `candidate_rows` then takes the exact way over the whole set.
#
# The choice is made inside the statement: the rows passing the filter are counted up to the
# limit + 1 (ids only, no distances), and each way sits behind a one-time filter on that count,
# so PostgreSQL runs only one of the two scans. A 'filtered' row returns the count (as its
# distance), so the caller knows which way ran even when nothing matched.
_COUNTED = (
    "counted AS MATERIALIZED (SELECT count(*) AS n FROM (SELECT 1 FROM experiences_experience "
    "WHERE {condition} LIMIT %s) passing)"
)
_EXACT = (
    "exact AS MATERIALIZED (SELECT id AS exact_id, embedding <=> %s::halfvec AS distance "
    "FROM experiences_experience WHERE {condition})"
)


def candidates_sql(
    *,
    project: Project,
    query: RecallQuery,
    vector: str,
    keywords: tuple[str, str] | None = None,
    exact_rows: int | None = -1,
) -> tuple[str, list]:
    """The pre-filter and both rankings as one statement (plain SQL: the ORM spent ~2.5 ms per
    recall compiling a query and building 40 model instances): the nearest scenes by vector,
    exactly when at most `exact_rows` rows pass the filter (-1: HINDSIGHT_RECALL_EXACT_ROWS;
    None: whatever their number), else by the HNSW index; and, with `keywords` (words,
    identifiers), the best keyword matches (the GIN index on `search`; the distance is computed
    for the best ones only). Each row says which list it came from (`vector`, `keyword`);
    `candidates_scored` fuses them. One more row, ranking `filtered`, has the number of rows
    passing the filter (up to `exact_rows` + 1) as its distance: `candidate_rows` reads it."""
    if exact_rows == -1:
        exact_rows = settings.HINDSIGHT_RECALL_EXACT_ROWS
    where, params = _filters(project=project, query=query)
    columns = ", ".join(RECALLED_COLUMNS)
    limit = max(settings.HINDSIGHT_RECALL_CANDIDATES, query.k)
    condition = " AND ".join(where)
    keyword_score = "0.0::real" if keywords is None else _KEYWORD_SCORE
    nulls = ", ".join(["NULL"] * len(RECALLED_COLUMNS))
    # The nearest ids first, then their rows (joining first made PostgreSQL hash-join and sort
    # every filtered row: 430 ms instead of ~70 for 64k rows).
    by_exact = (
        f"(SELECT {columns}, distance, {keyword_score} AS keyword, 'vector' AS ranking FROM ("
        f"SELECT {columns}, search, distance FROM (SELECT exact_id, distance FROM exact "
        f"ORDER BY distance, exact_id LIMIT %s) best "
        f"JOIN experiences_experience ON id = best.exact_id) nearest"
    )
    if exact_rows is None:
        ctes = [_EXACT.format(condition=condition)]
        cte_params: list = [vector, *params]
        vector_part = (
            f"{by_exact}) UNION ALL "
            f"SELECT {nulls}, count(*)::float8, 0.0::real, 'filtered' FROM exact"
        )
        vector_params: list = [limit]
    else:
        ctes = [_COUNTED.format(condition=condition), _EXACT.format(condition=condition)]
        cte_params = [*params, exact_rows + 1, vector, *params]
        vector_part = (
            f"{by_exact} WHERE (SELECT n FROM counted) <= %s) UNION ALL "
            f"(SELECT {columns}, distance, {keyword_score} AS keyword, 'vector' AS ranking FROM ("
            f"SELECT {columns}, search, embedding <=> %s::halfvec AS distance "
            f"FROM experiences_experience WHERE {condition} ORDER BY distance LIMIT %s) nearest "
            f"WHERE (SELECT n FROM counted) > %s) UNION ALL "
            f"SELECT {nulls}, n::float8, 0.0::real, 'filtered' FROM counted"
        )
        vector_params = [limit, exact_rows, vector, *params, limit, exact_rows]
    if keywords is None:
        return f"WITH {', '.join(ctes)} {vector_part}", [*cte_params, *vector_params]
    words, identifiers = keywords
    # The rows holding the query's words come from the search index alone, and the pre-filter
    # is applied to them one by one (OFFSET 0 keeps the planner from merging the two): given
    # both, PostgreSQL would AND the few word matches with a bitmap of every row that passes
    # the filter (a tool filter: 420k rows, 120 ms at 1M experiences).
    keyword_part = (
        f"(SELECT {columns}, embedding <=> %s::halfvec AS distance, best.keyword, "
        f"'keyword' AS ranking FROM (SELECT id AS best_id, {_KEYWORD_SCORE} AS keyword "
        f"FROM (SELECT e.* FROM experiences_experience e, keyword_query "
        f"WHERE e.search @@ keyword_query.q OFFSET 0) matched WHERE {condition} "
        f"ORDER BY keyword DESC, id LIMIT %s) best "
        f"JOIN experiences_experience ON id = best.best_id)"
    )
    sql = f"WITH {', '.join(ctes)}, {_KEYWORD_QUERY} {vector_part} UNION ALL {keyword_part}"
    common = settings.HINDSIGHT_RECALL_COMMON_TERM
    rows = settings.HINDSIGHT_RECALL_KEYWORD_ROWS
    return sql, [
        *cte_params, words, identifiers, common, rows, *vector_params, vector, *params, limit,
    ]  # fmt: skip


def candidate_rows(
    cursor: Any,
    *,
    project: Project,
    query: RecallQuery,
    vector: str,
    keywords: tuple[str, str] | None = None,
) -> tuple[list[tuple], str]:
    """The candidate rows of a recall (for `candidates_scored`) and the way the vector ranking
    found them: 'exact' (the filtered set is small), 'index' (the HNSW walk found a full pool),
    'index-short' (the walk came back short, but with k items above the relevance floor) or
    'index+exact' (the walk came back too short for k items: the filtered set was scanned
    exactly, as it would have been had it been small).

    So an answer has min(k, what exact search finds above the floor) items: a short walk is
    never taken for "nothing (more) matches"."""
    sql, params = candidates_sql(project=project, query=query, vector=vector, keywords=keywords)
    cursor.execute(sql, params)
    rows = cursor.fetchall()
    (filtered,) = [row[-3] for row in rows if row[-1] == "filtered"]
    rows = [row for row in rows if row[-1] != "filtered"]
    if filtered <= settings.HINDSIGHT_RECALL_EXACT_ROWS:
        return rows, "exact"
    # A full pool from the walk is trusted: its rows come in (nearly) the order of distance, so
    # a floor cut through it leaves nothing nearer behind.
    pool = max(settings.HINDSIGHT_RECALL_CANDIDATES, query.k)
    if sum(row[-1] == "vector" for row in rows) >= pool:
        return rows, "index"
    # A short walk that still found k items answers in full (an exact scan of a big filtered
    # set costs ~0.5 ms per thousand rows).
    floor = settings.HINDSIGHT_RECALL_MIN_SIMILARITY
    found = {row[0] for row in rows if row[-1] == "keyword" or 1 - row[-3] >= floor}
    if len(found) >= query.k:
        return rows, "index-short"
    logger.debug("recall: the HNSW walk came back short (project %s); exact scan", project.pk)
    sql, params = candidates_sql(
        project=project, query=query, vector=vector, keywords=keywords, exact_rows=None
    )
    cursor.execute(sql, params)
    return [row for row in cursor.fetchall() if row[-1] != "filtered"], "index+exact"
