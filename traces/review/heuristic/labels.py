"""The labels of a trajectory's steps: `label_steps` applies the rules below in order. A step
*feeds* a later one as `flow` says (a value of its output in the later step's input).

**Labels**, first rule that fits:

1. **failed** — the step itself failed: flagged `is_error` (confidence 0.95), or its result
   opens like an error, a refusal or an empty answer ("Could not find", "No results", "Invalid
   …", "permission denied", "HTTP 404", 0.8); or, in a run that failed, the final action whose
   result is a verdict against it ("incorrect", "rejected", a score of 0) or is empty (0.85 / 0.6).
2. **redundant** — an identical repeat of an earlier call that did not fail (0.9; not when a
   change came between and the result differs: the tests run again after the edit check it); a
   call of the same tool whose informative result (100+ characters) repeats an earlier one:
   nothing new (0.8); a back / undo / cancel navigation (0.6).
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

from collections.abc import Callable
from dataclasses import dataclass, field

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


@dataclass
class _Labelling:
    """What the rules read and write while one trajectory is labelled."""

    request: ReviewRequest
    facts: Facts
    steps: list[StepView]
    calls: list[StepView]
    last_call: StepView | None
    failed_run: bool
    partial_run: bool
    succeeded: bool  # success or partial; an unknown outcome proves no result
    answer: str  # the final answer, lowercased
    judged: dict[int, StepJudgement] = field(default_factory=dict)
    failed_calls: list[StepView] = field(default_factory=list)
    first_seen_repeats: set[int] = field(default_factory=set)  # exact repeats of a call
    undo_calls: set[int] = field(default_factory=set)
    rejected: dict[int, str] = field(default_factory=dict)  # turned down or undone, and how
    wrong_turn: StepView | None = None
    answer_source: StepView | None = None
    roots: list[tuple[StepView, str, float]] = field(default_factory=list)  # of the walk back
    necessary: dict[int, tuple[str, float]] = field(default_factory=dict)
    misleading: dict[int, tuple[str, float]] = field(default_factory=dict)
    by_index: dict[int, StepView] = field(default_factory=dict)  # the steps by their index

    @classmethod
    def of(cls, request: ReviewRequest) -> "_Labelling":
        outcome = request.trace.outcome
        calls = [s for s in request.steps if s.kind == "tool_call"]
        return cls(
            request=request, facts=Facts.of(request), steps=list(request.steps), calls=calls,
            last_call=calls[-1] if calls else None, failed_run=outcome == "failure",
            partial_run=outcome == "partial", succeeded=counts_as_success(outcome),
            answer=request.trace.final_answer.strip().lower(),
            by_index={s.index: s for s in request.steps},
        )  # fmt: skip

    def judge(self, step: StepView, label: Label, reason: str, confidence: float) -> None:
        """The first rule that labels a step wins."""
        if step.index not in self.judged:
            self.judged[step.index] = StepJudgement(
                index=step.index, label=label, reason=reason, confidence=round(confidence, 2)
            )

    def step(self, index: int) -> StepView:
        """A step by its index (the walk back asks once per link: a dict, not a scan)."""
        return self.by_index[index]


def _failed(run: _Labelling) -> None:
    """1. A call that failed, or the final action of a failed run refused or empty."""
    for step in run.calls:
        if step.is_error:
            run.judge(step, "failed", f"the step failed: {error_text(step)}", 0.95)
        elif error_opening(step):
            run.judge(step, "failed", f"its result is an error or empty: {error_text(step)}", 0.8)
    last_call = run.last_call
    if run.failed_run and last_call is not None and last_call.index not in run.judged:
        result = (last_call.observation_raw or last_call.observation).strip()
        if VERDICT_AGAINST.search(result[-400:]):
            reason = f"the result was refused: {error_text(last_call)}"
            run.judge(last_call, "failed", reason, 0.85)
        elif not result:
            reason = "the final action returned nothing and the run failed"
            run.judge(last_call, "failed", reason, 0.6)
    run.failed_calls = [s for s in run.calls if s.index in run.judged]


def _redundant(run: _Labelling) -> None:
    """2. Exact repeats, results that repeat an earlier one, back / undo navigation."""
    first_seen: dict[str, int] = {}
    for step in run.calls:
        if step.index in run.judged:
            continue
        key = call_key(step)
        if key in first_seen and not run.facts.checks_a_change(first_seen[key], step.index):
            reason = f"repeats step {first_seen[key]} with the same arguments"
            run.judge(step, "redundant", reason, 0.9)
            run.first_seen_repeats.add(step.index)
        elif step.index in run.facts.duplicate_of:
            earlier = run.facts.duplicate_of[step.index]
            run.judge(step, "redundant", f"its result repeats step {earlier}: nothing new", 0.8)
        else:
            first_seen[key] = step.index
    run.undo_calls = {s.index for s in run.calls if any(UNDO.match(v) for v in argument_values(s))}
    for index in run.undo_calls:
        run.judge(run.step(index), "redundant", "goes back: navigation, not progress", 0.6)


def _rejected(run: _Labelling) -> None:
    """Results the agent turned down itself: rejected in its next thought, or undone."""
    for step in run.calls:
        if step.index in run.judged:
            continue
        thought = next_thought(run.steps, step)
        following = next_call(run.steps, step)
        if thought is not None and thought.kind == "llm_reasoning":
            if REJECTION.search(thought.content) and not acts_on(thought, step, run.facts):
                run.rejected[step.index] = (
                    f"the agent turned its result down at step {thought.index}"
                )
        if following is not None and any(UNDO.match(v) for v in argument_values(following)):
            run.rejected[step.index] = f"undone at step {following.index}"


def _wrong_turn(run: _Labelling) -> None:
    """The wrong turn of a run that did not succeed: the last choice of something an earlier
    result offered (not something the request named) on the way to the end; in a failed run
    the first such choice (what came after it built on it)."""
    if not (run.failed_run or run.partial_run):
        return
    for step in run.calls if run.failed_run else reversed(run.calls):
        if step.index in run.judged or step.index in run.undo_calls or step.index in run.rejected:
            continue
        if is_choice(step, run.facts) and step is not run.last_call:
            run.wrong_turn = step
            return


def _answer_source(run: _Labelling) -> None:
    """The step whose text produced the final answer."""
    if not run.answer:
        return
    answer, trace, facts = run.answer, run.request.trace, run.facts
    run.answer_source = next(
        (s for s in reversed(run.steps)
         if s.kind != "user_input" and s is not run.last_call
         and (answer in facts.outputs_lower[s.index] or s.kind == "llm_reasoning"
              and facts.values[s.index] & (key_values(answer) | names(trace.final_answer)))),
        None,
    )  # fmt: skip


def _request(run: _Labelling) -> None:
    """3. The first user input states the request."""
    first_input = next((s for s in run.steps if s.kind == "user_input"), None)
    if first_input is not None:
        run.judge(first_input, "necessary", "states the request", 0.9)


def _results(run: _Labelling) -> None:
    """3. What the walk back starts from in a run that succeeded: its last successful call, the
    step that produced the final answer, the latest step that produced each value the answer
    states. A partial run's last call committed what only partly met the request; a failed
    run's answer was refused: both mislead (4)."""
    judged, last_call, succeeded = run.judged, run.last_call, run.succeeded
    last_success = next((s for s in reversed(run.calls) if s.index not in judged), None)
    produced = "the last successful call: it produced the result"
    if succeeded and last_success is not None and last_success is not last_call:
        if not run.partial_run:
            run.roots.append((last_success, produced, 0.8))
    if succeeded and last_call is not None and last_call.index not in judged:
        if run.partial_run:
            partly = "it committed a result that only partly met the request"
            run.misleading[last_call.index] = (partly, 0.6)
        else:
            run.roots.append((last_call, produced, 0.8))
    source = run.answer_source
    if source is not None and source.index not in judged:
        if run.failed_run:
            run.misleading[source.index] = ("it produced the answer that was refused", 0.7)
        else:
            run.roots.append((source, "it produced the final answer", 0.8))
    if succeeded and not run.partial_run and run.answer:
        # The values the final answer states (ids, codes, names not in the request) come from
        # the latest step that produced each: "exit code 137: OOMKilled" cites the logs.
        final_answer = run.request.trace.final_answer
        stated = (key_values(final_answer) | names(final_answer)) - run.facts.task_values
        for step in reversed(run.calls):
            used = stated & run.facts.values[step.index]
            stated -= used
            if used and step.index not in judged and step.index not in run.facts.duplicate_of:
                run.roots.append((step, "the final answer states its result", 0.75))


def _went_wrong(run: _Labelling) -> None:
    """4. The final action a failed run committed, the wrong turn (and in a failed run every
    later call that acted on it), a call the user complained about right after."""
    judged, last_call, wrong_turn = run.judged, run.last_call, run.wrong_turn
    if run.failed_run and last_call is not None and last_call.index not in judged:
        run.misleading.setdefault(
            last_call.index, ("the run failed after this final action committed it", 0.6)
        )
    if wrong_turn is not None:
        run.misleading[wrong_turn.index] = (
            "the wrong turn: the choice the unsuccessful result rests on",
            0.6,
        )
        if run.failed_run:
            for step in run.calls:
                if step.index > wrong_turn.index and step.index not in judged:
                    run.misleading.setdefault(
                        step.index, (f"acted on the wrong turn at step {wrong_turn.index}", 0.6)
                    )
    first_call_index = run.calls[0].index if run.calls else None
    for step in run.steps:
        after_action = first_call_index is not None and step.index > first_call_index
        if step.kind == "user_input" and after_action and is_dissatisfied(step.content):
            before = next((s for s in reversed(run.calls) if s.index < step.index), None)
            if before is not None and before.index not in judged:
                complained = f"the user complained right after it (step {step.index})"
                run.misleading.setdefault(before.index, (complained, 0.7))


def _walk_back(run: _Labelling) -> None:
    """3. Walking back from the results: every step whose output feeds a necessary step is
    necessary; in a failed run, what fed the wrong path was still a right move up to the wrong
    turn, and what built on the wrong turn after it misled."""
    judged, necessary, misleading, wrong_turn = (
        run.judged, run.necessary, run.misleading, run.wrong_turn
    )  # fmt: skip
    frontier = list(run.roots)
    if run.failed_run:
        frontier += [(s, "", 0.0) for s in run.steps if s.index in misleading]
    for step, reason, confidence in run.roots:
        necessary[step.index] = (reason, confidence)
    seen: set[int] = set()
    while frontier:
        step, _, _ = frontier.pop()
        if step.index in seen:
            continue
        seen.add(step.index)
        for source_index, strength in run.facts.producers(step):
            source = run.step(source_index)
            if source_index in judged or source_index in misleading or source_index in necessary:
                continue
            if source_index in run.undo_calls:
                continue
            if run.failed_run and wrong_turn is not None and source_index > wrong_turn.index:
                reason = f"built on the wrong turn at step {wrong_turn.index} (step {step.index})"
                misleading[source_index] = (reason, 0.55)
                frontier.append((source, "", 0.0))
                continue
            strength = min(strength, 0.55) if run.failed_run else strength
            link = "its result is used verbatim" if strength >= 0.8 else "its value is used"
            necessary[source_index] = (f"{link} by step {step.index}", strength)
            frontier.append((source, "", 0.0))


def _acting_on_request(run: _Labelling) -> None:
    """3. A successful call the agent did not reject or undo whose arguments act on the
    request: evidence only where the result is the final state (no final answer to trace back
    from) or the agent read the result (a thought followed it): a blind restart of a service
    the request names is correlated, not causal."""
    wrong_turn = run.wrong_turn
    for step in run.calls:
        index = step.index
        if index in run.judged or index in run.misleading or index in run.necessary:
            continue
        if index in run.rejected or index in run.undo_calls:
            continue
        if run.failed_run and wrong_turn is not None and index > wrong_turn.index:
            continue
        thought = next_thought(run.steps, step)
        read = thought is not None and thought.kind == "llm_reasoning"
        relevant = [v for v in argument_values(step) if run.facts.in_request(v)]
        if relevant and (read or not run.answer):
            confidence = 0.55 if run.failed_run or run.partial_run else 0.6
            shown = cut_at_word(relevant[0], 40)
            run.necessary[index] = (f"acts on the request ('{shown}')", confidence)


def _detours(run: _Labelling) -> None:
    """4. A result the agent turned down or undid, and a thought that turned down a result the
    run then used."""
    for index, reason in run.rejected.items():
        if index not in run.judged and index not in run.necessary:
            run.misleading.setdefault(index, (f"a detour: {reason}", 0.55))
    for step in run.steps:
        if step.kind != "llm_reasoning" or not REJECTION.search(step.content):
            continue
        before = next((s for s in reversed(run.calls) if s.index < step.index), None)
        if before is not None and before.index in run.necessary and before.index in run.rejected:
            turned_down = f"turned down step {before.index}, whose result was used later"
            run.misleading.setdefault(step.index, (turned_down, 0.55))


def _settle(run: _Labelling) -> None:
    """What misled, then what was necessary (a step found both ways misled)."""
    for index, (reason, confidence) in run.misleading.items():
        run.judge(run.step(index), "misleading", reason, confidence)
    for index, (reason, confidence) in run.necessary.items():
        run.judge(run.step(index), "necessary", reason, confidence)


def _reasoning(run: _Labelling) -> None:
    """5. Reasoning takes the label of the call it decides."""
    for step in run.steps:
        if step.kind != "llm_reasoning" or step.index in run.judged:
            continue
        decided = next_call(run.steps, step)
        if decided is None or decided.index not in run.judged:
            continue
        label, index = run.judged[decided.index].label, decided.index
        if label == "necessary":
            run.judge(step, "necessary", f"decides step {index}, which was necessary", 0.7)
        elif label == "misleading":
            run.judge(step, "misleading", f"decides step {index}, which misled", 0.6)
        elif label == "failed":
            if any(s.index < index for s in run.failed_calls):
                reason = f"decides step {index}: it kept to a path that had failed before"
                run.judge(step, "misleading", reason, 0.55)
            else:
                run.judge(step, "redundant", f"decides step {index}, a failed attempt", 0.55)
        elif label == "redundant" and run.failed_run and index in run.first_seen_repeats:
            reason = f"decides step {index}: a repeat in a run that failed"
            run.judge(step, "misleading", reason, 0.55)
        elif label == "redundant":
            run.judge(step, "redundant", f"decides step {index}, which did not matter", 0.6)


def _the_rest(run: _Labelling) -> None:
    """6. Everything else."""
    for step in run.steps:
        run.judge(step, "redundant", "nothing later used its result", 0.55)


# In order: a rule reads what the rules before it found, and a step keeps its first label.
RULES: tuple[Callable[[_Labelling], None], ...] = (
    _failed,
    _redundant,
    _rejected,
    _wrong_turn,
    _answer_source,
    _request,
    _results,
    _went_wrong,
    _walk_back,
    _acting_on_request,
    _detours,
    _settle,
    _reasoning,
    _the_rest,
)


def label_steps(request: ReviewRequest) -> dict[int, StepJudgement]:
    """Every step's label, reason and confidence, by the rules of the module docstring."""
    run = _Labelling.of(request)
    for rule in RULES:
        rule(run)
    return run.judged
