"""Two trajectories side by side (their steps aligned), and the other runs of a task."""

import difflib
import re
from typing import Any

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


_RUN_SUFFIX_RE = re.compile(r"[-_.:/#\s]*(?:run|attempt|try|retry|take)?[-_.:#]?\d+$", re.I)
OTHER_RUNS_SHOWN = 20


def external_id_stem(external_id: str) -> str:
    """The run id without its last number ("deploy-web-attempt-3" → "deploy-web"): runs of one
    task often share it. Empty when there is no number to drop or too little is left."""
    stem = _RUN_SUFFIX_RE.sub("", external_id)
    return stem if stem != external_id and len(stem) >= 4 else ""


def trace_other_runs(*, trace: Trace, limit: int = OTHER_RUNS_SHOWN) -> list[Trace]:
    """Other trajectories of the same task in the trace's project: the same task text, or a run
    id of the same stem. A different outcome first (where they parted is the interesting part),
    then newest. Each carries `match`: why it is suggested."""
    project_traces = Trace.objects.filter(project_id=trace.project_id).exclude(pk=trace.pk)
    found: dict[int, Trace] = {}
    query = task_search_query(trace.task)
    if query is not None:  # the GIN index on the task narrows, the equality decides
        same_task = project_traces.filter(task_search=query, task=trace.task)
        for other in same_task.only(*LIST_COLUMNS).order_by("-pk")[: limit * 2]:
            other.match = "same task"  # type: ignore[attr-defined]
            found[other.pk] = other
    stem = external_id_stem(trace.external_id)
    if stem:
        similar = project_traces.filter(external_id__startswith=stem).exclude(pk__in=list(found))
        for other in similar.only(*LIST_COLUMNS).order_by("-pk")[: limit * 5]:
            if external_id_stem(other.external_id) == stem:
                other.match = "run id like this one"  # type: ignore[attr-defined]
                found[other.pk] = other
    ranked = sorted(found.values(), key=lambda t: (t.outcome == trace.outcome, -t.pk))
    return ranked[:limit]
