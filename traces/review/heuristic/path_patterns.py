"""A run's calls as a path: the strategy's order of calls, each as its placeholders
(`placeholders.call_pattern`), a long path with its changes, its first call and the calls
nearest its end kept; and the literal path of the same case's replay."""

from collections.abc import Callable, Sequence

from traces.review.heuristic.placeholders import Sources, call_pattern, is_aside, literal_call
from traces.review.tool_effects import ToolEffect
from traces.review.types import StepView


def path_pattern(
    calls: Sequence[StepView],
    sources: Sources,
    limit: int = 4,
    effect: Callable[[StepView], ToolEffect] | None = None,
) -> str:
    """Calls in order as placeholders; the same pattern again reads 'for each' once, or
    "again" after a change came between.

    Over `limit` patterns (by more than one: "then 1 more call" says less than the call), the
    ones kept are, in this order, those that changed something (`effect`: a change left out
    would be a way the agent is not told), the first (how the run found its footing) and those
    nearest the end (what led to the call the path comes before: a test run before the submit,
    the look-up before the change); each gap reads "then N more look-up(s)", or "call(s)" when
    not all of it only read."""
    patterns: dict[str, list[StepView]] = {}
    changed_at = -1  # the index of the latest call that changed something
    for call in calls:
        if is_aside(call):
            continue
        pattern = call_pattern(call, sources)
        if pattern in patterns and patterns[pattern][-1].index < changed_at:
            pattern += " again"  # a check of the change (the tests run again after the edit)
        patterns.setdefault(pattern, []).append(call)
        if effect is not None and effect(call).changes_state:
            changed_at = call.index
    order = list(patterns)
    shown = set(range(len(order)))
    if len(order) > limit + 1:
        changes = [
            i
            for i, pattern in enumerate(order)
            if effect and any(effect(c).changes_state for c in patterns[pattern])
        ]
        preferred = [*changes, 0, *range(len(order) - 1, 0, -1)]
        shown = set(list(dict.fromkeys(preferred))[:limit])
    parts: list[str] = []
    left_out: list[list[StepView]] = []
    for i, pattern in enumerate(order):
        if i not in shown:
            left_out.append(patterns[pattern])
            continue
        if left_out:
            parts.append(_left_out(left_out, bool(parts), effect))
            left_out = []
        parts.append(f"{pattern} (each)" if len(patterns[pattern]) > 1 else pattern)
    if left_out:
        parts.append(_left_out(left_out, True, effect))
    return ", then ".join(parts)


def _left_out(
    patterns: list[list[StepView]],
    more: bool,
    effect: Callable[[StepView], ToolEffect] | None,
) -> str:
    """A gap of a path: how many patterns were left out, look-ups when they all only read."""
    reads = effect is not None and all(effect(c).is_read_only for p in patterns for c in p)
    what = "look-up(s)" if reads else "call(s)"
    return f"{len(patterns)} more {what}" if more else f"{len(patterns)} {what}"


def literal_path(calls: Sequence[StepView], limit: int = 5) -> str:
    """The calls as they were made, in order; an aside (a `think`) is the run's own thinking,
    not a step."""
    phrases = list(dict.fromkeys(literal_call(c) for c in calls if not is_aside(c)))
    text = ", then ".join(phrases[:limit])
    if len(phrases) > limit:
        text += f", then {len(phrases) - limit} more"
    return text
