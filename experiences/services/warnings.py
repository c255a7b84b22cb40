"""Warnings before risky tool calls, from failure patterns seen often enough.

Only patterns of the same tool, seen at least HINDSIGHT_WARN_MIN_OCCURRENCES times, whose
argument shape is at least HINDSIGHT_WARN_MIN_SIMILARITY alike (Jaccard of key/kind pairs) warn:
agents should not be made timid by a single bad experience.
"""

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q

from experiences.models import FailurePattern
from experiences.services.patterns import argument_shape, shape_similarity
from traces.models import Project

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


def _message(pattern: FailurePattern) -> str:
    text = (
        f"Similar calls to {pattern.tool} failed {pattern.occurrences} times "
        f"({pattern.error_signature})."
    )
    if pattern.instead:
        text += f" Instead, {pattern.instead}."
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
                _message(pattern),
                pattern.occurrences,
                pattern.instead,
                round(similarity, 3),
            )
        )
    return items[:MAX_WARNINGS]


def warnings_for_tools(*, project: Project, tools: list[str]) -> list[WarningItem]:
    """For recall: the most frequent failure patterns of the tools the agent has."""
    if not tools:
        return []
    return [
        WarningItem(p.pk, p.tool, _message(p), p.occurrences, p.instead, 1.0)
        for p in _frequent(project).filter(tool__in=tools).only(*WARNING_FIELDS)[:MAX_WARNINGS]
    ]
