"""Warnings before risky tool calls, from failure patterns seen often enough.

Only patterns of the same tool, seen at least HINDSIGHT_WARN_MIN_OCCURRENCES times, whose
argument shape is at least HINDSIGHT_WARN_MIN_SIMILARITY alike (Jaccard of key/kind pairs) warn:
agents should not be made timid by a single bad experience.
"""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q

from accounts.models import Project
from experiences.models import FailurePattern
from experiences.services.patterns import argument_shape, shape_similarity

MAX_WARNINGS = 5
# What a warning is made of: the hot path before every tool call loads nothing else.
WARNING_FIELDS = ("id", "tool", "argument_shape", "error_signature", "instead", "occurrences")


@dataclass(frozen=True)
class WarningItem:
    pattern_id: int
    tool: str
    message: str
    occurrences: int
    instead: str
    similarity: float


def _message(*, tool: str, occurrences: int, error_signature: str, instead: str) -> str:
    text = f"Similar calls to {tool} failed {occurrences} times ({error_signature})."
    if instead:
        text += f" Instead, {instead}."
    return text


def _frequent(project: Project):
    return FailurePattern.objects.filter(
        project=project, occurrences__gte=settings.HINDSIGHT_WARN_MIN_OCCURRENCES
    ).order_by("-occurrences", "-id")


def warnings_for_call(
    *, project: Project, tool: str, arguments: Any, environment: list[str] | None = None
) -> list[WarningItem]:
    shape = argument_shape(arguments)
    patterns = _frequent(project).filter(tool=tool)
    if environment:  # a failure seen only elsewhere says little about this environment
        patterns = patterns.filter(Q(environment=[]) | Q(environment__overlap=environment))
    items = []
    for pattern in patterns.only(*WARNING_FIELDS)[:50]:
        similarity = shape_similarity(shape, pattern.argument_shape)
        if similarity < settings.HINDSIGHT_WARN_MIN_SIMILARITY:
            continue
        items.append(
            WarningItem(
                pattern.pk,
                pattern.tool,
                _message(
                    tool=pattern.tool,
                    occurrences=pattern.occurrences,
                    error_signature=pattern.error_signature,
                    instead=pattern.instead,
                ),
                pattern.occurrences,
                pattern.instead,
                round(similarity, 3),
            )
        )
    return items[:MAX_WARNINGS]


# Per tool, the index (project, tool, -occurrences) yields its top patterns in order, so each
# of the agent's tools costs a few index rows; `tool IN (...)` instead made PostgreSQL collect
# every pattern of those tools and sort them, on the hot path of every recall.
TOP_PATTERNS_OF_TOOLS_SQL = f"""
SELECT p.id, p.tool, p.error_signature, p.instead, p.occurrences
FROM unnest(%s::varchar[]) AS asked(tool)
CROSS JOIN LATERAL (
    SELECT id, tool, error_signature, instead, occurrences
    FROM experiences_failurepattern
    WHERE project_id = %s AND tool = asked.tool AND occurrences >= %s
    ORDER BY occurrences DESC, id DESC
    LIMIT {MAX_WARNINGS}
) AS p
ORDER BY p.occurrences DESC, p.id DESC
LIMIT {MAX_WARNINGS}
"""


def warnings_for_tools(*, project: Project, tools: list[str]) -> list[WarningItem]:
    """For recall: the most frequent failure patterns of the tools the agent has."""
    if not tools:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            TOP_PATTERNS_OF_TOOLS_SQL,
            [sorted(set(tools)), project.pk, settings.HINDSIGHT_WARN_MIN_OCCURRENCES],
        )
        rows = cursor.fetchall()
    return [
        WarningItem(
            pattern_id,
            tool,
            _message(tool=tool, occurrences=n, error_signature=signature, instead=instead),
            n,
            instead,
            1.0,
        )
        for pattern_id, tool, signature, instead, n in rows
    ]
