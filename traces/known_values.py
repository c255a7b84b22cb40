"""Reads of the values a project's trajectories have already shown (agents, environments, tools,
users), to suggest them in filters and scope fields and to warn about a value nobody has ever
used (the audit log's own: accounts.selectors.audit).

Bounded on purpose: the values come from the project's latest traces only, and at most
MAX_VALUES of each kind, so a project with a million traces pays for a window read
through the (project, -id) index, never a table scan. A value last seen before the window is
then "unknown": the warning that follows says so, and saving stays allowed.
"""

from dataclasses import dataclass

from django.db import connection

from accounts.models import Project
from core.list_filters import MAX_VALUES
from traces.models import Trace

RECENT_TRACES = 5_000


@dataclass(frozen=True)
class KnownTraceValues:
    agents: list[str]
    environments: list[str]
    tools: list[str]
    users: list[str]


# One statement: the window is read once, each kind is de-duplicated and capped on its own.
# Served by traces_trace_project_id (project, -id) for the window.
_TRACE_VALUES_SQL = """
WITH recent AS (
    SELECT agent, environment, tools, user_ref FROM {table}
    WHERE project_id = %(project)s ORDER BY id DESC LIMIT %(window)s
)
(SELECT 'agents', v FROM (SELECT DISTINCT agent AS v FROM recent) a
  WHERE v <> '' ORDER BY v LIMIT %(cap)s)
UNION ALL
(SELECT 'environments', v FROM (SELECT DISTINCT unnest(environment) AS v FROM recent) e
  WHERE v <> '' ORDER BY v LIMIT %(cap)s)
UNION ALL
(SELECT 'tools', v FROM (SELECT DISTINCT unnest(tools) AS v FROM recent) t
  WHERE v <> '' ORDER BY v LIMIT %(cap)s)
UNION ALL
(SELECT 'users', v FROM (SELECT DISTINCT user_ref AS v FROM recent) u
  WHERE v <> '' ORDER BY v LIMIT %(cap)s)
"""


def trace_known_values(*, project: Project) -> KnownTraceValues:
    """The distinct agents, environments, tools and users of the project's latest traces."""
    found: dict[str, list[str]] = {"agents": [], "environments": [], "tools": [], "users": []}
    sql = _TRACE_VALUES_SQL.format(table=connection.ops.quote_name(Trace._meta.db_table))
    with connection.cursor() as cursor:
        cursor.execute(sql, {"project": project.pk, "window": RECENT_TRACES, "cap": MAX_VALUES})
        for kind, value in cursor.fetchall():
            found[kind].append(value)
    return KnownTraceValues(**found)
