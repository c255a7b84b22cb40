"""Lessons written before the project knew its tools are written again once it does.

A run reviewed early is judged by what little the project knew of its tools then: a navigation
`click` is "not known to be read-only" until enough runs show that they end on `click "Buy
Now"` and its other calls only navigate (traces.review.tool_effects, behaviour). So an early
lesson may blame a call that is now known to only read. When a review's own run changes what
the project knows of a tool that way (it **matured**), the episodes whose lesson
blamed a call of that tool are re-derived from their labels with what is known now
(`hindsight.rederive_trace`, the same re-derivation a human relabel runs).
"""

from collections.abc import Mapping

from django.db.models import Q

from experiences.models import Experience
from traces.review.tool_effects import ToolEffect
from traces.services.tool_profiles import tool_effects_for

MAX_TRACES = 500  # re-derived per matured review; an older lesson beyond it stays as it was


def _reads_somewhere(effect: ToolEffect) -> bool:
    return effect.is_read_only or effect.commit_arguments is not None


def tools_matured(before: Mapping[str, ToolEffect], after: Mapping[str, ToolEffect]) -> list[str]:
    """The tools some of whose calls were not known to only read and now are: the tool reads,
    or it commits with one argument only (`click "Buy Now"`) and its other calls navigate."""
    return sorted(
        tool
        for tool, now in after.items()
        if tool in before and _reads_somewhere(now) and not _reads_somewhere(before[tool])
    )


def traces_to_rederive(
    *, project_id: int, before: Mapping[str, ToolEffect]
) -> tuple[list[int], str]:
    """The traces whose episode blamed or made a call of a tool this review's run made mature,
    and why they are re-derived (the version's reason)."""
    # Only a tool not yet known to read anywhere can mature: most reviews of a project that
    # knows its tools read nothing more here.
    unknown = [t for t, effect in before.items() if not _reads_somewhere(effect)]
    if not unknown:
        return [], ""
    after = tool_effects_for(project_id=project_id, tools=unknown)
    matured = tools_matured(before, after)
    if not matured:
        return [], ""
    made = Q(blame__tool__in=matured)
    for tool in matured:
        made |= Q(calls__contains=[{"tool": tool}])
    ids = list(
        Experience.objects.filter(made, project_id=project_id, kind=Experience.Kind.EPISODE)
        .exclude(status__in=Experience.INACTIVE_STATUSES)
        .values_list("sources__trace_id", flat=True)
        .distinct()[:MAX_TRACES]
    )
    known = "; ".join(f"{t}: {after[t].evidence}" for t in matured)
    return ids, f"re-derived: the project now knows more of its tools ({known})"
