"""The lesson of a run, in the injection form the seeds ask for: a success's strategy ("When you
use <the call that changed state>, first <the calls before it>, then …"), a failure's "When you
use <tool>: do not <the blamed call>: <what happened>. Instead, <what worked>.", and what a run
that did not fail says about a step it is blamed for. The calls are placeholders (`placeholders`)
and the blamed step is the one the evidence blames (`blame`).
"""

from traces.review.command_effects import executed
from traces.review.heuristic.blame import (
    CHANGED,
    ENDED,
    FAILED,
    REFUSED,
    Blame,
    blames_the_answer,
    worked_again,
    worked_later,
)
from traces.review.heuristic.path_patterns import path_pattern
from traces.review.heuristic.placeholders import (
    Sources,
    call_pattern,
    is_aside,
    when_you_use,
)
from traces.review.request_goal import purpose
from traces.review.scene import first_sentence
from traces.review.tool_effects import ToolEffect
from traces.review.types import ReviewRequest, StepView
from traces.review.values import argument_values


def _first_reply(steps: list[StepView]) -> str:
    reply = next((s for s in steps if s.kind == "llm_reasoning" and s.content.strip()), None)
    return f' (the first reply was "{first_sentence(reply.content, 80)}")' if reply else ""


def _anchor(calls: list[StepView], request: ReviewRequest) -> StepView:
    """The call a strategy is about: the last one that changed state, else the last one."""
    changes = [c for c in calls if request.trace.call_effect(c).changes_state]
    return changes[-1] if changes else calls[-1]


def strategy_of(calls: list[StepView], request: ReviewRequest, sources: Sources) -> str:
    """'When you use X, first A, then B; call it with <…>': what to do before (and after) the
    call that mattered, as placeholders. X is named as the condition only: advice for when an
    agent makes that call, never a push to make it."""
    calls = [c for c in calls if not is_aside(c)] or calls
    effects = {c.index: request.trace.call_effect(c) for c in calls}
    kept = [c for c in calls if not effects[c.index].hands_off]
    if any(effects[c.index].changes_state for c in kept):
        # A run that made its changes and then handed the case to a person: the way is its
        # changes; the hand-off is how it ended (tool_effects: hands_off). A run whose only
        # change was the hand-off keeps it as its condition, "When you use <the hand-off>,
        # first …": hand-judged, that reads as what to do if you hand over, and "this run
        # changed nothing and handed the case to a human agent" as a push to change nothing.
        calls = kept
    anchor = _anchor(calls, request)
    effect = request.trace.call_effect(anchor)
    # The same call made before it (a second reservation cancelled alike) is the anchor again:
    # "(each)", not a step before itself.
    alike = call_pattern(anchor, sources)
    before = [c for c in calls if c.index < anchor.index]
    again = [c for c in before if call_pattern(c, sources) == alike]
    before = [c for c in before if c not in again]
    after = [c for c in calls if c.index > anchor.index]
    pattern = call_pattern(
        anchor,
        sources,
        final=anchor is calls[-1] and effect.changes_state,
        answer=anchor is calls[-1] and effect.changes_state and effect.every_run is True,
    )
    return when_you_use(
        anchor.tool,
        path_pattern(before, sources, 3, request.trace.call_effect) if before else "",
        f"{pattern} (each)" if again and pattern != anchor.tool else pattern,
        path_pattern(after, sources, 1, request.trace.call_effect) if after else "",
        purpose=_purpose(anchor, effect, request),
    )


def _purpose(anchor: StepView, effect: ToolEffect, request: ReviewRequest) -> str:
    """What the request asked the anchor to do (`request_goal.purpose`), when it is a command
    line or a SQL statement: "When you use bash:" is every shell run's condition, and another
    task's `tree` recipe read as advice for "print the source of the file system" (hand-judged,
    InterCode Bash)."""
    if executed(anchor.tool, anchor.arguments) is None:
        return ""
    return purpose(request.trace.task, changes_state=effect.changes_state)


def condition(step: StepView, request: ReviewRequest) -> str:
    """The "When you use …" of a lesson about `step`: its tool, and for a command line or a
    SQL statement the goal it served (`_purpose`)."""
    purpose = _purpose(step, request.trace.call_effect(step), request) if step.tool else ""
    return f"{step.tool} to {purpose}" if purpose else step.tool


def fed_look_ups(
    failed: list[StepView], necessary: list[StepView], request: ReviewRequest, sources: Sources
) -> list[StepView]:
    """Look-ups that failed but whose result a later necessary call used (a search that found
    nothing but listed the title the run searched next): steps of the way, without which the
    strategy's next call would take its value from a call it never names."""
    candidates = {
        s.index: s for s in failed if s.tool and request.trace.call_effect(s).is_read_only
    }
    fed = {
        holder
        for step in necessary
        for value in argument_values(step)
        if (holder := sources.holder(value, step.index)) in candidates
    }
    return [candidates[index] for index in sorted(fed)]


def _blamed_phrase(blame: Blame, sources: Sources) -> str:
    step = blame.step
    if step.tool:
        return call_pattern(step, sources, final=blame.evidence == REFUSED)
    return f'end with a reply like "{first_sentence(step.content, 60)}"'


LOOKED_UP_SHOWN = 3  # tools named in the lesson of a run that looked things up and answered


def _answered_lesson(request: ReviewRequest) -> str:
    """A failed run that ended on a reply, with nothing else to blame: the reply may have been
    right and the run wrong for what it left undone, so warn (check the request is done before
    you answer), never forbid the reply."""
    calls = [s for s in request.steps if s.tool]
    tools = list(dict.fromkeys(c.tool for c in calls))
    named = ", ".join(tools[:LOOKED_UP_SHOWN]) + (" …" if len(tools) > LOOKED_UP_SHOWN else "")
    if all(request.trace.call_effect(c).is_read_only for c in calls):
        did = f"only looked things up ({named})"
        done = "every part of the request, changes included"
    else:
        did, done = f"called {named}", "every part of the request"
    return (
        f"When you answer: a run that {did} and then answered failed; before you answer, check "
        f"that you have done {done}."
    )


def lesson(
    blame: Blame, necessary_calls: list[StepView], request: ReviewRequest, sources: Sources
) -> tuple[str, str]:
    """(advice, pitfall) of a run that failed, or of a success's pitfall."""
    step = blame.step
    phrase = _blamed_phrase(blame, sources)
    pitfall = f"{phrase}: {blame.consequence}"
    if blame.evidence == ENDED:
        return _answered_lesson(request), pitfall
    where = f"When you use {condition(step, request)}" if step.tool else "When you answer"
    recovered = [s for s in necessary_calls if s.index > step.index]
    instead = path_pattern(recovered, sources, 3, request.trace.call_effect) if recovered else ""
    if instead == phrase:
        instead = ""  # the same call again is no alternative
    every_run = not step.tool or request.trace.call_effect(step).every_run is not False
    if blames_the_answer(blame, request):
        # The final answer or purchase (refused, or the commit the run ended on, made in nearly
        # every run) is needed every time, and its literal value belongs to that one case: the
        # lesson is to check what it rests on, never "do not commit".
        shown = phrase if '"' not in phrase else f"the run's {step.tool}"
        verdict = "was refused" if blame.evidence == REFUSED else "was not right"
        advice = (
            f"{where}: {shown} {verdict} ({blame.consequence}); check it against every "
            f"part of the request before you {step.tool}."
        )
    elif blame.evidence == CHANGED and step.tool and not every_run:
        # A write most runs never make (a hand-off, a cancellation) in a run that failed: the
        # outcome says the run went wrong, not that this change is always wrong (the next task
        # may need it): make it only when the request asks for it and the rules allow it.
        arguments = phrase.removeprefix(step.tool).strip()
        made = f"a run that called it with {arguments}" if arguments else "a run that called it"
        why = "" if blame.outcome_only else f" ({blame.consequence})"
        advice = (
            f"{where}: {made} failed{why}; make this change only when the request asks for it "
            f"and the rules allow it: check both before you {step.tool}."
        )
    elif blame.evidence == FAILED and (
        request.trace.call_effect(step).is_read_only or worked_later(step, request.steps)
    ):
        # A look-up that failed: looking up is still right, the lesson is what to do when it
        # fails like that (its own value belongs to that case); so for a change the run then
        # made with other arguments ("do not" would forbid the change it made).
        advice = f"{where}: {phrase} can fail ({blame.consequence}); then "
        advice += f"{instead} instead." if instead else "change its arguments, do not repeat it."
        return advice, pitfall
    else:
        advice = f"{where}: do not {pitfall}."
    if instead:
        advice += f" Instead, {instead}."
    return advice, pitfall


def blamed_advice(
    advice: str, pitfall: str, blame: Blame, when_strategy: str, request: ReviewRequest,
    sources: Sources,
) -> str:  # fmt: skip
    """A run that did not fail but has a blamed step: its strategy, and what to do about the
    step (check it, mind the order, change a failing look-up's arguments, or do not)."""
    if request.trace.outcome == "failure" or not when_strategy:
        return advice
    if blame.evidence in (REFUSED, CHANGED):
        # The commit itself only partly met the request: check it, never "do not".
        phrase = _blamed_phrase(blame, sources)
        return (
            f"{when_strategy}. Check {phrase} against every part of the request first: "
            f"{blame.consequence}."
        )
    if blame.evidence == FAILED and worked_again(blame.step, request.steps):
        # The same call worked later in the run: it failed for when it was made, not for what
        # it was ("Buy Now" before a product was open); the strategy's order is the lesson,
        # and "do not" would forbid the purchase itself.
        return f"{when_strategy}."
    if blame.evidence == FAILED and (
        request.trace.call_effect(blame.step).is_read_only
        or worked_later(blame.step, request.steps)
    ):
        # A look-up that failed on the way: looking up is still right; a change that failed and
        # then worked with other arguments (another payment method) was right too.
        phrase = _blamed_phrase(blame, sources)
        return (
            f"{when_strategy}. {phrase} can fail ({blame.consequence}): then change its "
            "arguments, do not repeat it."
        )
    return f"{when_strategy}. Do not {pitfall}."


def unblamed_advice(
    request: ReviewRequest, when_strategy: str, sources: Sources
) -> tuple[str, str]:
    """(advice, pitfall) of a run no step of which is blamed."""
    steps = request.steps
    calls = [s for s in steps if s.tool]
    if request.trace.outcome == "failure":
        if calls:
            tried = path_pattern(calls, sources, 3, request.trace.call_effect)
            where = condition(calls[0], request)
            return f"When you use {where}: {tried} was not enough: the run failed.", ""
        # No tool was called at all: the way not to go is answering from the conversation
        # alone, and the first reply is where the run chose it.
        pitfall = "answer without calling a tool" + _first_reply(steps)
        return f"When you answer: do not {pitfall}: the run failed.", pitfall
    if when_strategy:
        return f"{when_strategy}.", ""
    if calls:
        path = path_pattern(calls, sources, 3, request.trace.call_effect)
        return f"When you use {condition(calls[0], request)}: {path}.", ""
    return "When you can answer from the conversation alone, answer directly.", ""
