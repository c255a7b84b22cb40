"""Reads for the scope fields of the curation pages: the environments, agents and users a
project's agents actually use, and which typed scope values are not among them.

"Known" means seen where an agent speaks: in the project's latest traces (traces.known_values)
and in its latest recall requests. A value saved in another experience's scope does not count:
that is how a typo ("dokcer") would spread. Unknown values are a warning, never a refusal: an
environment may be new.
"""

import difflib
from dataclasses import dataclass, field

from django.db import connection

from accounts.models import Project
from core.list_filters import MAX_VALUES
from experiences.models import RecallLog
from traces.known_values import trace_known_values

RECENT_RECALLS = 2_000
KINDS = ("environments", "agents", "users")

# The agents, users and environments of the latest recalls; served by
# experiences_recall_proj_id (project, -id) for the window.
_RECALL_VALUES_SQL = """
WITH recent AS (
    SELECT query FROM {table} WHERE project_id = %(project)s ORDER BY id DESC LIMIT %(window)s
)
(SELECT 'agents', v FROM (SELECT DISTINCT query->>'agent' AS v FROM recent) a
  WHERE v <> '' ORDER BY v LIMIT %(cap)s)
UNION ALL
(SELECT 'users', v FROM (SELECT DISTINCT query->>'user' AS v FROM recent) u
  WHERE v <> '' ORDER BY v LIMIT %(cap)s)
UNION ALL
(SELECT 'environments', v FROM (
    SELECT DISTINCT jsonb_array_elements_text(query->'environment') AS v FROM recent
    WHERE jsonb_typeof(query->'environment') = 'array'
  ) e WHERE v <> '' ORDER BY v LIMIT %(cap)s)
"""


@dataclass(frozen=True)
class KnownScopes:
    environments: list[str]
    agents: list[str]
    users: list[str]
    tools: list[str] = field(default_factory=list)  # for the library's tool filter

    def of(self, kind: str) -> list[str]:
        return list(getattr(self, kind))


def scope_known_values(*, project: Project) -> KnownScopes:
    """Two queries: the trace window and the recall window."""
    traces = trace_known_values(project=project)
    found: dict[str, set[str]] = {
        "environments": set(traces.environments),
        "agents": set(traces.agents),
        "users": set(traces.users),
    }
    sql = _RECALL_VALUES_SQL.format(table=connection.ops.quote_name(RecallLog._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(sql, {"project": project.pk, "window": RECENT_RECALLS, "cap": MAX_VALUES})
        for kind, value in cursor.fetchall():
            found[kind].add(value)
    return KnownScopes(
        **{kind: sorted(values)[:MAX_VALUES] for kind, values in found.items()},
        tools=traces.tools,
    )


@dataclass(frozen=True)
class UnknownValue:
    kind: str  # "environments", "agents" or "users"
    value: str
    suggestion: str | None  # the closest known value, for "did you mean"

    @property
    def noun(self) -> str:
        return self.kind[:-1]


def scope_unknown_values(
    *, known: KnownScopes, environments: list[str], agents: list[str], users: list[str]
) -> list[UnknownValue]:
    """The typed values no trace or recall of the project used, each with a near match if any.

    Environments are compared lower-cased, as they are saved; agents and users exactly, as
    recall compares them.
    """
    unknown = []
    for kind, values in zip(KINDS, (environments, agents, users), strict=True):
        pool = known.of(kind)
        for value in values:
            typed = value.strip().lower() if kind == "environments" else value.strip()
            if not typed or typed in pool:
                continue
            same_but_case = [v for v in pool if v.lower() == typed.lower()]
            close = same_but_case or difflib.get_close_matches(typed, pool, n=1, cutoff=0.75)
            suggestion = close[0] if close else None
            unknown.append(UnknownValue(kind=kind, value=typed, suggestion=suggestion))
    return unknown


def unknown_values_text(unknown: list[UnknownValue]) -> str:
    """One sentence for a message: "'dokcer' (environment; did you mean 'docker'?)"."""
    parts = []
    for item in unknown:
        hint = f"; did you mean '{item.suggestion}'?" if item.suggestion else ""
        parts.append(f"'{item.value}' ({item.noun}{hint})")
    return ", ".join(parts)
