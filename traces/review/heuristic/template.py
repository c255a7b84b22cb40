"""The review template (goal, path, decisions, improvements, the second-person experience),
built from the labels, so a human relabel re-derives the same way.

The experience is a strategy that transfers, in the injection form the seeds ask for: a success
reads "When you use <the call that changed state>, first <the calls before it>, then …", a
failure "When you use <tool>: do not <the blamed call>: <what happened>. Instead, <what worked>."
A success that handed the case to a person after its changes is taught by its changes: a
hand-off is an exit, not a way to do the task (traces.review.tool_effects).
The wording of that advice is `lesson`; the calls are placeholders (`placeholders`: the values
that came from the request or an earlier result are named by where they came from), the blamed
step is the one the evidence blames (`blame`), and the request is not quoted (the scene it is
matched on is stored apart). The literal run, ids included, is the `replay`: served only when
the very same case comes again.
"""

from collections.abc import Mapping

from traces.review.heuristic.blame import ENDED, Blame, blame_of
from traces.review.heuristic.lesson import (
    blamed_advice,
    fed_look_ups,
    lesson,
    strategy_of,
    unblamed_advice,
)
from traces.review.heuristic.path_patterns import literal_path, path_pattern
from traces.review.heuristic.placeholders import Sources, literal_call
from traces.review.heuristic.replay import replay_of
from traces.review.heuristic.signals import error_text
from traces.review.scene import action_phrase, scene_summary
from traces.review.types import ReviewRequest, ReviewTemplate, StepJudgement, StepView


def _decisions(
    by_label: Mapping[str, list[StepView]], necessary_calls: list[StepView]
) -> list[str]:
    """The key decisions: what the run did after each failure, and where it went the wrong way."""
    decisions = []
    for failure in by_label["failed"]:
        next_other = next((s for s in necessary_calls if s.index > failure.index), None)
        if next_other is not None:
            decisions.append(
                f"after {action_phrase(failure)} failed at step {failure.index} "
                f"({error_text(failure)}), {action_phrase(next_other)} at step {next_other.index}"
            )
    for step in by_label["misleading"]:
        if step.tool:
            decisions.append(f"step {step.index} ({action_phrase(step)}) went the wrong way")
    return decisions


def _improvements(by_label: Mapping[str, list[StepView]]) -> list[str]:
    """What to skip (calls that did not matter) and what to avoid (calls that failed)."""
    improvements = []
    redundant_calls = [s for s in by_label["redundant"] if s.tool]
    if redundant_calls:
        improvements.append(
            f"skip {literal_path(redundant_calls, 3)}: {len(redundant_calls)} call(s) "
            "did not affect the result"
        )
    failed_phrases = list(dict.fromkeys(action_phrase(s) for s in by_label["failed"] if s.tool))
    if failed_phrases:
        improvements.append(f"avoid {'; '.join(failed_phrases[:3])}: it failed")
    return improvements


def _blame_improvement(blame: Blame, labels: Mapping[int, StepJudgement]) -> str | None:
    """The blamed step as an improvement (a failed one is listed with the failures already)."""
    if blame.evidence == ENDED:
        return (
            f"before the final reply, check every part of the request is done: "
            f"{blame.consequence} ({blame.evidence})"
        )
    if labels[blame.step.index].label != "failed":
        return (
            f"do not {literal_call(blame.step) if blame.step.tool else 'end so'}: "
            f"{blame.consequence} ({blame.evidence})"
        )
    return None


def build_template(request: ReviewRequest, labels: Mapping[int, StepJudgement]) -> ReviewTemplate:
    """The review template, built from labels (machine or human-corrected)."""
    steps = request.steps
    by_label = {
        name: [s for s in steps if labels[s.index].label == name]
        for name in ("necessary", "redundant", "misleading", "failed")
    }
    summary = scene_summary(request.trace.task, steps)
    necessary_calls = [s for s in by_label["necessary"] if s.tool]
    decisions = _decisions(by_label, necessary_calls)
    improvements = _improvements(by_label)
    sources = Sources.of(request.trace.task, steps, request.trace)
    strategy = (
        path_pattern(necessary_calls, sources, effect=request.trace.call_effect)
        if necessary_calls
        else ""
    )
    way = sorted(
        necessary_calls + fed_look_ups(by_label["failed"], necessary_calls, request, sources),
        key=lambda s: s.index,
    )
    when_strategy = strategy_of(way, request, sources) if necessary_calls else ""
    blame = blame_of(request, {i: j.label for i, j in labels.items()})
    if blame is not None:
        advice, pitfall = lesson(blame, necessary_calls, request, sources)
        if (improvement := _blame_improvement(blame, labels)) is not None:
            improvements.append(improvement)
        advice = blamed_advice(advice, pitfall, blame, when_strategy, request, sources)
    else:
        advice, pitfall = unblamed_advice(request, when_strategy, sources)
    replay = replay_of(request, necessary_calls, blame)
    # Worth referencing when it shows a way (a strategy, an answer) or a way not to go.
    worth = bool(strategy or pitfall or request.trace.final_answer)
    return ReviewTemplate(
        goal=summary,
        scene_summary=summary,
        execution_path=[action_phrase(s) for s in by_label["necessary"]],
        effective_steps=[s.index for s in by_label["necessary"]],
        ineffective_steps=[s.index for s in steps if labels[s.index].label != "necessary"],
        key_decisions=decisions,
        improvements=improvements,
        experience=advice,
        strategy=strategy,
        pitfall=pitfall,
        replay=replay,
        blamed_step=blame.step.index if blame is not None else None,
        worth_reference=worth,
        labels=[labels[s.index] for s in steps],
    )
