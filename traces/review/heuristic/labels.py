"""The labels of a trajectory's steps: `label_steps` applies the rules below in order. A step
*feeds* a later one as `flow` says (a value of its output in the later step's input).

**Labels**, first rule that fits:

1. **failed** — the step itself failed: flagged `is_error` (confidence 0.95), or its result
   opens like an error, a refusal or an empty answer ("Could not find", "No results", "Invalid
   …", "permission denied", "HTTP 404", 0.8); or, in a run that failed, the final action whose
   result is a verdict against it ("incorrect", "rejected", a score of 0) or is empty (0.85 / 0.6).
2. **redundant** — an identical repeat of an earlier call that did not fail (0.9); a call of the
   same tool whose informative result (100+ characters) repeats an earlier one: nothing new
   (0.8); a back / undo / cancel navigation (0.6).
3. **necessary** — the first user input (it states the request, 0.9); in a run that succeeded
   (or partly did), its last successful call (it produced the result) and every step whose
   output feeds a necessary step or the final answer (0.85 with a verbatim link, 0.75 with a
   value link), walking back from the end; then a successful call the agent did not reject or
   undo whose arguments act on the request (share a word with it) or on a necessary step's
   result (0.6). In a run that failed, steps before its wrong turn that fed it, or acted on the
   request, are necessary too (0.55): the right first moves.
4. **misleading** — where it went wrong:
   * in a run that failed or partly failed, the **wrong turn**: the last choice of something an
     earlier result offered (its argument comes from that result, not from the request) on the
     way to the end; in a failed run every later call that acted on it (0.6); the step whose
     text produced a refused answer (0.7); a call the user complained about right after (0.7);
   * in any run, a call whose result the agent rejected in its next thought ("does not", "not
     what", "instead", "too expensive" …) or undid with a back / undo / cancel action (0.55);
   * the final committing action of a run that failed without a verdict (0.6).
5. **reasoning takes the label of the call it decides** (the next call before another thought):
   deciding a necessary call is necessary (0.7), a misleading one misleading; deciding a failed
   call is redundant on the first failure (a try) and misleading once a call had failed before
   (it kept to a failing path, 0.55); in a failed run, deciding a repeat is misleading. A
"""

from traces.review.heuristic.flow import Facts
from traces.review.heuristic.signals import (
    REJECTION,
    UNDO,
    VERDICT_AGAINST,
    acts_on,
    error_opening,
    error_text,
    is_choice,
    next_call,
    next_thought,
)
from traces.review.scene import cut_at_word
from traces.review.triggers import call_key, is_dissatisfied
from traces.review.types import Label, ReviewRequest, StepJudgement, StepView, counts_as_success
from traces.review.values import argument_values, key_values, names


def label_steps(request: ReviewRequest) -> dict[int, StepJudgement]:
    """Every step's label, reason and confidence, by the rules of the module docstring."""
    steps, trace = request.steps, request.trace
    facts = Facts.of(request)
    judged: dict[int, StepJudgement] = {}
    outcome = trace.outcome
    failed_run = outcome == "failure"
    partial_run = outcome == "partial"
    calls = [s for s in steps if s.kind == "tool_call"]
    last_call = calls[-1] if calls else None

    def judge(step: StepView, label: Label, reason: str, confidence: float) -> None:
        if step.index not in judged:
            judged[step.index] = StepJudgement(
                index=step.index, label=label, reason=reason, confidence=round(confidence, 2)
            )

    # 1. failed
    for step in calls:
        if step.is_error:
            judge(step, "failed", f"the step failed: {error_text(step)}", 0.95)
        elif error_opening(step):
            judge(step, "failed", f"its result is an error or empty: {error_text(step)}", 0.8)
    if failed_run and last_call is not None and last_call.index not in judged:
        result = (last_call.observation_raw or last_call.observation).strip()
        if VERDICT_AGAINST.search(result[-400:]):
            judge(last_call, "failed", f"the result was refused: {error_text(last_call)}", 0.85)
        elif not result:
            judge(last_call, "failed", "the final action returned nothing and the run failed", 0.6)
    failed_calls = [s for s in calls if s.index in judged]

    # 2. redundant repeats
    first_seen: dict[str, int] = {}
    first_seen_repeats: set[int] = set()
    for step in calls:
        if step.index in judged:
            continue
        key = call_key(step)
        if key in first_seen:
            judge(step, "redundant", f"repeats step {first_seen[key]} with the same arguments", 0.9)
            first_seen_repeats.add(step.index)
        elif step.index in facts.duplicate_of:
            earlier = facts.duplicate_of[step.index]
            judge(step, "redundant", f"its result repeats step {earlier}: nothing new", 0.8)
        else:
            first_seen[key] = step.index
    undo_calls = {s.index for s in calls if any(UNDO.match(v) for v in argument_values(s))}
    for index in undo_calls:
        step = next(s for s in calls if s.index == index)
        judge(step, "redundant", "goes back: navigation, not progress", 0.6)

    # Rejected or undone results: the agent turned them down itself.
    rejected: dict[int, str] = {}
    for step in calls:
        if step.index in judged:
            continue
        thought = next_thought(steps, step)
        following = next_call(steps, step)
        if thought is not None and thought.kind == "llm_reasoning":
            if REJECTION.search(thought.content) and not acts_on(thought, step, facts):
                rejected[step.index] = f"the agent turned its result down at step {thought.index}"
        if following is not None and any(UNDO.match(v) for v in argument_values(following)):
            rejected[step.index] = f"undone at step {following.index}"

    # The wrong turn of a run that did not succeed: the last choice of something an earlier
    # result offered (not something the request named) on the way to the end.
    # In a failed run it is the first such choice: what came after it built on it.
    wrong_turn: StepView | None = None
    if failed_run or partial_run:
        for step in calls if failed_run else reversed(calls):
            if step.index in judged or step.index in undo_calls or step.index in rejected:
                continue
            if is_choice(step, facts) and step is not last_call:
                wrong_turn = step
                break

    # Final answer: the step whose text produced it.
    answer = trace.final_answer.strip().lower()
    answer_source: StepView | None = None
    if answer:
        answer_source = next(
            (s for s in reversed(steps)
             if s.kind != "user_input" and s is not last_call
             and (answer in facts.outputs_lower[s.index] or s.kind == "llm_reasoning"
                  and facts.values[s.index] & (key_values(answer) | names(trace.final_answer)))),
            None,
        )  # fmt: skip

    # 3/4. walk back from the end.
    necessary: dict[int, tuple[str, float]] = {}
    misleading: dict[int, tuple[str, float]] = {}
    first_input = next((s for s in steps if s.kind == "user_input"), None)
    if first_input is not None:
        judge(first_input, "necessary", "states the request", 0.9)

    succeeded = counts_as_success(outcome)  # an unknown outcome proves no result
    roots: list[tuple[StepView, str, float]] = []
    last_success = next((s for s in reversed(calls) if s.index not in judged), None)
    if succeeded and last_success is not None and last_success is not last_call:
        if not partial_run:
            roots.append((last_success, "the last successful call: it produced the result", 0.8))
    if succeeded and last_call is not None and last_call.index not in judged:
        if partial_run:
            misleading[last_call.index] = (
                "it committed a result that only partly met the request",
                0.6,
            )
        else:
            roots.append((last_call, "the last successful call: it produced the result", 0.8))
    if answer_source is not None and answer_source.index not in judged:
        if failed_run:
            misleading[answer_source.index] = ("it produced the answer that was refused", 0.7)
        else:
            roots.append((answer_source, "it produced the final answer", 0.8))
    if succeeded and not partial_run and answer:
        # The values the final answer states (ids, codes, names not in the request) come from
        # the latest step that produced each: "exit code 137: OOMKilled" cites the logs.
        stated = (key_values(trace.final_answer) | names(trace.final_answer)) - facts.task_values
        for step in reversed(calls):
            used = stated & facts.values[step.index]
            stated -= used
            if used and step.index not in judged and step.index not in facts.duplicate_of:
                roots.append((step, "the final answer states its result", 0.75))
    if failed_run and last_call is not None and last_call.index not in judged:
        misleading.setdefault(
            last_call.index, ("the run failed after this final action committed it", 0.6)
        )
    if wrong_turn is not None:
        misleading[wrong_turn.index] = (
            "the wrong turn: the choice the unsuccessful result rests on",
            0.6,
        )
        if failed_run:
            for step in calls:
                if step.index > wrong_turn.index and step.index not in judged:
                    misleading.setdefault(
                        step.index, (f"acted on the wrong turn at step {wrong_turn.index}", 0.6)
                    )
    first_call_index = calls[0].index if calls else None
    for step in steps:  # a user complaint right after a call
        after_action = first_call_index is not None and step.index > first_call_index
        if step.kind == "user_input" and after_action and is_dissatisfied(step.content):
            before = next((s for s in reversed(calls) if s.index < step.index), None)
            if before is not None and before.index not in judged:
                misleading.setdefault(
                    before.index, (f"the user complained right after it (step {step.index})", 0.7)
                )

    frontier = list(roots)
    if failed_run:  # what fed the wrong path was still a right move, up to the wrong turn
        frontier += [(s, "", 0.0) for s in steps if s.index in misleading]
    for step, reason, confidence in roots:
        necessary[step.index] = (reason, confidence)
    seen: set[int] = set()
    while frontier:
        step, _, _ = frontier.pop()
        if step.index in seen:
            continue
        seen.add(step.index)
        for source_index, strength in facts.producers(step):
            source = next(s for s in steps if s.index == source_index)
            if source_index in judged or source_index in misleading or source_index in necessary:
                continue
            if source_index in undo_calls:
                continue
            if failed_run and wrong_turn is not None and source_index > wrong_turn.index:
                reason = f"built on the wrong turn at step {wrong_turn.index} (step {step.index})"
                misleading[source_index] = (reason, 0.55)
                frontier.append((source, "", 0.0))
                continue
            strength = min(strength, 0.55) if failed_run else strength
            link = "its result is used verbatim" if strength >= 0.8 else "its value is used"
            necessary[source_index] = (f"{link} by step {step.index}", strength)
            frontier.append((source, "", 0.0))

    for step in calls:  # successful calls acting on the request or on a necessary result
        index = step.index
        if index in judged or index in misleading or index in necessary or index in rejected:
            continue
        if index in undo_calls:
            continue
        if failed_run and wrong_turn is not None and index > wrong_turn.index:
            continue
        # Acting on the request is evidence only where the result is the final state (no final
        # answer to trace back from) or the agent read the result (a thought followed it):
        # a blind restart of a service the request names is correlated, not causal.
        thought = next_thought(steps, step)
        read = thought is not None and thought.kind == "llm_reasoning"
        relevant = [v for v in argument_values(step) if facts.in_request(v)]
        if relevant and (read or not answer):
            confidence = 0.55 if failed_run or partial_run else 0.6
            shown = cut_at_word(relevant[0], 40)
            necessary[index] = (f"acts on the request ('{shown}')", confidence)

    for index, reason in rejected.items():
        if index not in judged and index not in necessary:
            misleading.setdefault(index, (f"a detour: {reason}", 0.55))
    for step in steps:  # a thought that turned down a result the run then used
        if step.kind != "llm_reasoning" or not REJECTION.search(step.content):
            continue
        before = next((s for s in reversed(calls) if s.index < step.index), None)
        if before is not None and before.index in necessary and before.index in rejected:
            misleading.setdefault(
                step.index, (f"turned down step {before.index}, whose result was used later", 0.55)
            )

    for index, (reason, confidence) in misleading.items():
        judge(next(s for s in steps if s.index == index), "misleading", reason, confidence)
    for index, (reason, confidence) in necessary.items():
        judge(next(s for s in steps if s.index == index), "necessary", reason, confidence)

    # 5. reasoning takes the label of the call it decides.
    for step in steps:
        if step.kind != "llm_reasoning" or step.index in judged:
            continue
        decided = next_call(steps, step)
        if decided is None or decided.index not in judged:
            continue
        label = judged[decided.index].label
        if label == "necessary":
            judge(step, "necessary", f"decides step {decided.index}, which was necessary", 0.7)
        elif label == "misleading":
            judge(step, "misleading", f"decides step {decided.index}, which misled", 0.6)
        elif label == "failed":
            if any(s.index < decided.index for s in failed_calls):
                reason = f"decides step {decided.index}: it kept to a path that had failed before"
                judge(step, "misleading", reason, 0.55)
            else:
                judge(step, "redundant", f"decides step {decided.index}, a failed attempt", 0.55)
        elif label == "redundant" and failed_run and decided.index in first_seen_repeats:
            judge(
                step,
                "misleading",
                f"decides step {decided.index}: a repeat in a run that failed",
                0.55,
            )
        elif label == "redundant":
            judge(step, "redundant", f"decides step {decided.index}, which did not matter", 0.6)

    # 6. everything else
    for step in steps:
        judge(step, "redundant", "nothing later used its result", 0.55)
    return judged
