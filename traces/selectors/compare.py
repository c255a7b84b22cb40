"""Two trajectories side by side (their steps aligned), and the other runs of a task."""

import difflib
from typing import Any

from django.db.models import QuerySet

from traces.models import Step, Trace
from traces.selectors.trace_list import LIST_COLUMNS, task_search_query


def _signature(step: Step) -> str:
    return f"{step.kind}:{step.tool}"


def steps_aligned(a: Trace, b: Trace) -> list[dict[str, Any]]:
    """The steps of two traces side by side, aligned on (kind, tool) like a diff of two files:
    rows of `left`, `right` (a step or None), `same_action`, and `differs` as far as the steps'
    data tell (traces.presentation.compare_rows adds the word-diffed texts)."""
    left, right = list(a.steps.all()), list(b.steps.all())
    matcher = difflib.SequenceMatcher(
        None, [_signature(s) for s in left], [_signature(s) for s in right], autojunk=False
    )
    rows: list[dict[str, Any]] = []
    for _, i1, i2, j1, j2 in matcher.get_opcodes():
        for offset in range(max(i2 - i1, j2 - j1)):
            one = left[i1 + offset] if i1 + offset < i2 else None
            two = right[j1 + offset] if j1 + offset < j2 else None
            same_action = one is not None and two is not None and _signature(one) == _signature(two)
            rows.append({
                "left": one,
                "right": two,
                "same_action": same_action,
                "differs": not same_action or (
                    one.arguments != two.arguments  # type: ignore[union-attr]
                    or one.is_error != two.is_error  # type: ignore[union-attr]
                    or one.label != two.label  # type: ignore[union-attr]
                ),
            })  # fmt: skip
    return rows


OTHER_RUNS_SHOWN = 20
# Candidates of the same scene read before ranking them (newest first, one index range).
SCENE_CANDIDATES = 200


def _same_task(trace: Trace, runs: QuerySet[Trace], limit: int) -> list[Trace]:
    query = task_search_query(trace.task)
    if query is None:
        return []
    # The search index narrows to the runs with the task's first words, the equality decides.
    same = runs.filter(task_search=query, task=trace.task).only(*LIST_COLUMNS)
    return list(same.order_by("-pk")[:limit])


def _same_scene(trace: Trace, runs: QuerySet[Trace], limit: int) -> list[Trace]:
    """Runs of the same scene (DESIGN: the features an experience is matched on): the same task
    type and environment, sharing a tool (or both calling none); most tools in common first,
    then a different outcome, the same intent, newest."""
    scene = runs.filter(task_type=trace.task_type, environment=trace.environment)
    scene = scene.filter(tools__overlap=trace.tools) if trace.tools else scene.filter(tools=[])
    candidates = list(scene.only(*LIST_COLUMNS).order_by("-pk")[:SCENE_CANDIDATES])
    tools = set(trace.tools)

    def shared(other: Trace) -> float:
        both = tools | set(other.tools)
        return len(tools & set(other.tools)) / len(both) if both else 1.0

    for other in candidates:
        other.shared_tools = shared(other)  # type: ignore[attr-defined]
    candidates.sort(
        key=lambda t: (-t.shared_tools, t.outcome == trace.outcome, t.intent != trace.intent, -t.pk)  # type: ignore[attr-defined]
    )
    return candidates[:limit]


def trace_other_runs(*, trace: Trace, limit: int = OTHER_RUNS_SHOWN) -> list[Trace]:
    """Other trajectories of the same task in the trace's project: the same task text first,
    then the same scene (task type, environment, tools). Within each, a different outcome
    first (where they parted is the interesting part), then newest; scene runs with more tools
    in common first. Each carries `match`: why it is suggested."""
    runs = Trace.objects.filter(project_id=trace.project_id).exclude(pk=trace.pk)
    same_task = _same_task(trace, runs, limit)
    same_task.sort(key=lambda t: (t.outcome == trace.outcome, -t.pk))
    for other in same_task:
        other.match = "same task"  # type: ignore[attr-defined]
    scene = _same_scene(trace, runs.exclude(pk__in=[t.pk for t in same_task]), limit)
    for other in scene:
        environment = ", ".join(trace.environment) or "no environment"
        other.match = (  # type: ignore[attr-defined]
            f"same scene: {trace.task_type}, {environment}, "
            f"{round(100 * other.shared_tools)} % of the tools"  # type: ignore[attr-defined]
        )
    return (same_task + scene)[:limit]
