"""The review template (goal, path, decisions, improvements, the second-person experience),
built from the labels, so a human relabel re-derives the same way: a success yields a strategy
("When you …, Search …, then …"), a failure a lesson ("When you …, do not …: it led to …;
instead …").
"""

import json
import re
from collections.abc import Mapping

from traces.review.heuristic.signals import error_opening, error_text
from traces.review.scene import action_phrase, cut_at_word, first_sentence, scene_summary
from traces.review.types import ReviewRequest, ReviewTemplate, StepJudgement, StepView


def _when(request: ReviewRequest, summary: str) -> str:
    env = request.trace.environment
    where = f" ({', '.join(env)})" if env else ""
    return f'When you work on "{summary}"{where}'


def _path_phrase(calls: list[StepView], limit: int = 5) -> str:
    phrases = [action_phrase(s) for s in calls]
    unique = list(dict.fromkeys(phrases))
    text = ", then ".join(unique[:limit])
    if len(unique) > limit:
        text += f", then {len(unique) - limit} more step(s)"
    return text


def _json_result(result: str) -> str | None:
    """A JSON result in words ("no results", "3 results", "a result with id, status"): its
    first sentence would be a cut-off bracket, which reads as nothing ("…")."""
    if not result.startswith(("[", "{")):
        return None
    try:
        value = json.loads(result)
    except ValueError:
        return None
    if isinstance(value, list):
        return "no results" if not value else f"{len(value)} result{'s' * (len(value) > 1)}"
    if isinstance(value, dict):
        keys = ", ".join(str(k) for k in list(value)[:3])
        return f"a result with {keys}" if keys else "an empty result"
    return None


def _consequence(step: StepView, request: ReviewRequest) -> str:
    if step.is_error or error_opening(step):
        return f"an error ({error_text(step)})"
    result = (step.observation_raw or step.observation).strip()
    if (in_words := _json_result(result)) is not None:
        return in_words
    if result:
        last = re.sub(r"(\d+\.\d{2})\d+", r"\1", result.splitlines()[-1])  # 0.6666… -> 0.66
        return f'"{first_sentence(last, 80)}"'
    return f"a {request.trace.outcome}"


def _first_reply(steps: list[StepView]) -> str:
    reply = next((s for s in steps if s.kind == "llm_reasoning" and s.content.strip()), None)
    return f' (the first reply was "{first_sentence(reply.content, 80)}")' if reply else ""


def build_template(request: ReviewRequest, labels: Mapping[int, StepJudgement]) -> ReviewTemplate:
    """The review template, built from labels (machine or human-corrected)."""
    steps = request.steps
    by_label = {
        name: [s for s in steps if labels[s.index].label == name]
        for name in ("necessary", "redundant", "misleading", "failed")
    }
    summary = scene_summary(request.trace.task, steps)
    necessary_calls = [s for s in by_label["necessary"] if s.tool]
    decisions = []
    for failure in by_label["failed"]:
        next_other = next(
            (s for s in necessary_calls if s.index > failure.index),
            None,
        )
        if next_other is not None:
            decisions.append(
                f"after {action_phrase(failure)} failed at step {failure.index} "
                f"({error_text(failure)}), {action_phrase(next_other)} at step {next_other.index}"
            )
    for step in by_label["misleading"]:
        if step.tool:
            decisions.append(f"step {step.index} ({action_phrase(step)}) went the wrong way")
    improvements = []
    redundant_calls = [s for s in by_label["redundant"] if s.tool]
    if redundant_calls:
        improvements.append(
            f"skip {_path_phrase(redundant_calls, 3)}: {len(redundant_calls)} call(s) "
            "did not affect the result"
        )
    failed_phrases = list(dict.fromkeys(action_phrase(s) for s in by_label["failed"] if s.tool))
    if failed_phrases:
        improvements.append(f"avoid {'; '.join(failed_phrases[:3])}: it failed")
    for step in by_label["misleading"][:2]:
        if step.tool:
            improvements.append(f"do not {action_phrase(step)}: it led the wrong way")

    outcome = request.trace.outcome
    when = _when(request, summary)
    strategy = _path_phrase(necessary_calls) if necessary_calls else ""
    pitfall = ""
    wrong = [s for s in by_label["misleading"] + by_label["failed"] if s.tool]
    wrong.sort(key=lambda s: s.index)
    if wrong:
        first_wrong = next((s for s in wrong if s in by_label["misleading"]), wrong[0])
        end = wrong[-1]
        pitfall = f"{action_phrase(first_wrong)}: it led to {_consequence(end, request)}"
        repeats = len([s for s in by_label["failed"] if s.tool])
        if repeats > 1:
            pitfall += f" ({repeats} failed calls in all)"
    if outcome == "failure":
        if pitfall:
            advice = f"{when}, do not {pitfall}."
            recovered = [s for s in necessary_calls if s.index > wrong[0].index]
            if recovered:
                advice += f" Instead, {_path_phrase(recovered, 3)}."
            elif strategy:
                advice += f" What did work: {strategy}."
        elif strategy:
            advice = f"{when}, {strategy} was not enough: the run failed."
        elif calls := [s for s in steps if s.tool]:
            advice = f"{when}, this approach failed: {_path_phrase(calls, 3)}."
        else:
            # No tool was called at all: the way not to go is answering from the conversation
            # alone, and the first reply is where the run chose it.
            pitfall = "answer without calling a tool" + _first_reply(steps)
            advice = f"{when}, do not {pitfall}: the run failed."
    else:
        if strategy:
            advice = f"{when}, {strategy}."
        elif request.trace.final_answer:
            advice = f'{when}, the answer was "{cut_at_word(request.trace.final_answer, 80)}".'
        else:
            advice = (
                f"{when}, {_path_phrase([s for s in steps if s.tool], 3) or 'answer directly'}."
            )
        if pitfall:
            advice += f" Do not {pitfall}."
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
        worth_reference=worth,
        labels=[labels[s.index] for s in steps],
    )
