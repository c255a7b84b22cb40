"""The review template (goal, path, decisions, improvements, the second-person experience),
built from the labels, so a human relabel re-derives the same way.

The experience is a strategy that transfers, in the injection form the seeds ask for: a success
reads "When you use <the call that changed state>, first <the calls before it>, then …", a
failure "When you use <tool>: do not <the blamed call>: <what happened>. Instead, <what worked>."
A success that handed the case to a person after its changes is taught by its changes: a
hand-off is an exit, not a way to do the task (traces.review.tool_effects).
The calls are placeholders (`placeholders`: the values that came from the request or an earlier
result are named by where they came from), the blamed step is the one the evidence blames
(`blame`), and the request is not quoted (the scene it is matched on is stored apart). The
literal run, ids included, is the `replay`: served only when the very same case comes again.
"""

import re
from collections.abc import Mapping

from traces.review.heuristic.blame import (
    CHANGED,
    ENDED,
    FAILED,
    REFUSED,
    Blame,
    blame_of,
    blames_the_answer,
    errored,
)
from traces.review.heuristic.placeholders import (
    Sources,
    call_pattern,
    is_aside,
    literal_call,
    literal_path,
    path_pattern,
    when_you_use,
)
from traces.review.heuristic.signals import error_text
from traces.review.scene import action_phrase, cut_at_word, first_sentence, scene_summary
from traces.review.types import (
    ReviewRequest,
    ReviewTemplate,
    StepJudgement,
    StepView,
    counts_as_success,
)
from traces.review.values import argument_values


def _first_reply(steps: list[StepView]) -> str:
    reply = next((s for s in steps if s.kind == "llm_reasoning" and s.content.strip()), None)
    return f' (the first reply was "{first_sentence(reply.content, 80)}")' if reply else ""


def _anchor(calls: list[StepView], request: ReviewRequest) -> StepView:
    """The call a strategy is about: the last one that changed state, else the last one."""
    changes = [c for c in calls if request.trace.call_effect(c).changes_state]
    return changes[-1] if changes else calls[-1]


def _strategy(calls: list[StepView], request: ReviewRequest, sources: Sources) -> str:
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
    before = [c for c in calls if c.index < anchor.index]
    after = [c for c in calls if c.index > anchor.index]
    return when_you_use(
        anchor.tool,
        path_pattern(before, sources, 3) if before else "",
        call_pattern(
            anchor,
            sources,
            final=anchor is calls[-1] and effect.changes_state,
            answer=anchor is calls[-1] and effect.changes_state and effect.every_run is True,
        ),
        path_pattern(after, sources, 1) if after else "",
    )


def _fed_look_ups(
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


def _made_again(failed: StepView, steps: list[StepView]) -> bool:
    """The run made the same call (tool and arguments) again later, and that time it worked."""
    return any(
        s.index > failed.index
        and s.tool == failed.tool
        and s.arguments == failed.arguments
        and not errored(s)
        for s in steps
    )


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


def _lesson(
    blame: Blame, necessary_calls: list[StepView], request: ReviewRequest, sources: Sources
) -> tuple[str, str]:
    """(advice, pitfall) of a run that failed, or of a success's pitfall."""
    step = blame.step
    phrase = _blamed_phrase(blame, sources)
    pitfall = f"{phrase}: {blame.consequence}"
    if blame.evidence == ENDED:
        return _answered_lesson(request), pitfall
    where = f"When you use {step.tool}" if step.tool else "When you answer"
    recovered = [s for s in necessary_calls if s.index > step.index]
    instead = path_pattern(recovered, sources, 3) if recovered else ""
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
    elif blame.evidence == FAILED and request.trace.call_effect(step).is_read_only:
        # A look-up that failed: looking up is still right, the lesson is what to do when it
        # fails like that (its own value belongs to that case).
        advice = f"{where}: {phrase} can fail ({blame.consequence}); then "
        advice += f"{instead} instead." if instead else "change its arguments, do not repeat it."
        return advice, pitfall
    else:
        advice = f"{where}: do not {pitfall}."
    if instead:
        advice += f" Instead, {instead}."
    return advice, pitfall


REPLAYED_CHANGES = 4  # the changes a replay lists


def _changes_made(
    request: ReviewRequest,
) -> tuple[list[StepView], list[StepView], list[StepView]]:
    """A run's changes that worked, its hand-offs to a person, and its changes not yet told from
    the commit every run makes. A commit made in nearly every run (an answer, a purchase) is the
    run's end, not one of its changes: it stays in the path; so does every call while the
    project has too few runs to say (`every_run` None), and then the run is never said to have
    changed nothing (early in a τ-bench project, a run that moved a flight read "changed
    nothing: …, then update_reservation_flights …")."""
    changes, handed, unsure = [], [], []
    for step in request.steps:
        if not step.tool or errored(step):
            continue
        effect = request.trace.call_effect(step)
        if effect.hands_off:
            handed.append(step)
        elif effect.changes_state and effect.every_run is False:
            changes.append(step)
        elif effect.changes_state and effect.every_run is None:
            unsure.append(step)
    return changes, handed, unsure


def _could_change(request: ReviewRequest) -> bool:
    """The agent had a tool (the run's or another the project knows) that changes something (not
    a hand-off, not the commit every run makes): only then is "changed nothing" a lesson, the
    request's answer having been to change nothing (a refusal, an explanation)."""
    known = {**request.trace.project_tools, **request.trace.tool_effects}
    return any(e.changes_state and not e.hands_off and e.every_run is False for e in known.values())


def _committed(request: ReviewRequest) -> bool:
    """The run made a change that nearly every run makes (the commit: `every_run`), besides a
    hand-off: it did not change nothing. Early in a project, a tool most of its first runs
    used (a flight change) reads as that commit, and its replay said "changed nothing: …, then
    update_reservation_flights …"."""
    effects = (request.trace.call_effect(s) for s in request.steps if s.tool and not errored(s))
    return any(e.changes_state and not e.hands_off and e.every_run for e in effects)


def _made(changes: list[StepView]) -> list[str]:
    """The changes as made, each once, in order."""
    return list(dict.fromkeys(literal_call(c) for c in changes))


def _listed(made: list[str]) -> str:
    """The changes in the order they were made, "A, then B": a call's arguments are joined by
    commas too ("reservation_id=FQ8APE, cabin=economy"), so a comma alone ran two calls into
    one."""
    text = ", then ".join(made[:REPLAYED_CHANGES])
    if len(made) > REPLAYED_CHANGES:
        text += f" and {len(made) - REPLAYED_CHANGES} more"
    return text


TOLD_CHARS = 140  # the reply a run that changed nothing gave before it handed the case over
# A sentence that says why not: what the rules or the records do not allow.
_SAYS_NO = re.compile(
    r"\b(not|no|cannot|can't|unable|non-[a-z]+|only|unfortunately|strict)\b", re.IGNORECASE
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+")


def _told_before(hand_off: StepView, steps: list[StepView]) -> str:
    """Why a run that changed nothing did not: in its latest reply before `hand_off` that says
    no, the first sentence saying it ("basic economy reservations cannot be modified"), not the
    "I understand your concern." the reply opened with; else its last reply's first sentence."""
    replies = [
        s for s in steps if s.index < hand_off.index and s.kind == "llm_reasoning" and s.content
    ]
    for reply in reversed(replies):
        sentences = _SENTENCES.split(" ".join(reply.content.split()))
        said_no = next((x for x in sentences if _SAYS_NO.search(x)), None)
        if said_no:
            return first_sentence(said_no, TOLD_CHARS)
    return first_sentence(replies[-1].content, TOLD_CHARS) if replies else ""


def _replay(request: ReviewRequest, necessary_calls: list[StepView], blame: Blame | None) -> str:
    """The same run with its literal values, for the very same case (ids, question) again.

    A failed run blamed on a change lists every change it made (the one too many, or the one
    missing, is what the same case needs to see; the successful run's replay beside it shows the
    right set), not only the last. A successful run says its changes apart from its look-ups
    ("its changes were …"), or that it "changed nothing" where the agent could have (the
    request's answer was a refusal or an explanation: the decision the same case needs), and
    that it handed the case to a person."""
    outcome = request.trace.outcome
    blamed = blame.step.index if blame is not None else None
    changes: list[StepView] = []
    if blame is not None and blame.evidence == CHANGED and blame.step.tool:
        changes = [
            s
            for s in request.steps
            if s.tool and request.trace.call_effect(s).changes_state and not errored(s)
        ] or [blame.step]
    succeeded = blame is None and counts_as_success(outcome)
    handed: list[StepView] = []
    unsure: list[StepView] = []
    if succeeded:
        changes, handed, unsure = _changes_made(request)
    listed = {c.index for c in changes + handed} | {blamed}
    calls = [c for c in necessary_calls if c.index not in listed] or [
        s for s in request.steps if s.tool and s.index not in listed
    ]
    text = f"The same case ran before ({outcome})"
    changed_nothing = (
        succeeded
        and not changes
        and not unsure
        and not _committed(request)
        and _could_change(request)
    )
    if changed_nothing:
        text += " and changed nothing"
    if path := literal_path(calls):
        text += f": {path}"
    if succeeded and changes:
        text += f"; its changes were {_listed(_made(changes))}"
    if handed:
        told = _told_before(handed[0], request.steps) if changed_nothing else ""
        if told:
            # Why it changed nothing is what the same case needs: the run's own words to the
            # user when it decided (the hand-off's arguments are its note to a colleague).
            text += f'; it told the user "{told}", then handed the case to a person'
        else:
            text += f"; then it handed the case to a person ({literal_call(handed[-1])})"
    if blame is not None:
        step = blame.step
        what = literal_call(step) if step.tool else f'reply "{first_sentence(step.content, 60)}"'
        if blame.evidence == REFUSED and step.tool:
            # The answer or purchase itself is needed: that one was wrong for this case.
            text += f"; {what} was refused: {blame.consequence}"
        elif blame.evidence == CHANGED and step.tool:
            # The run failed after its changes; the outcome alone does not say which one was the
            # mistake (the blamed one may be what the case needs, with another one too many).
            made = _made(changes)
            listed_changes = _listed(made)
            if blame.outcome_only:
                after = f"the run failed after {'its changes ' if len(made) > 1 else ''}"
                after += listed_changes
            else:
                after = f"after {what} {blame.consequence}"
                if len(made) > 1:
                    after += f"; its changes were {listed_changes}"
            each = "each change" if len(made) > 1 else "that change"
            text += (
                f"; {after}: check {each} against the request and the rules before you make "
                "it again"
            )
        elif blame.evidence == ENDED:
            # Only the outcome speaks against the reply: what the run left undone may be the
            # mistake, as well as what it said.
            text += f'; it answered "{first_sentence(step.content, 60)}" and '
            text += f"{blame.consequence}: find what the request needs that this run did not do "
            text += "before you answer"
        else:
            text += f"; do not {what}: {blame.consequence}"
    elif counts_as_success(outcome) and request.trace.final_answer:
        text += f'; the answer was "{cut_at_word(request.trace.final_answer, 80)}"'
    return text + "."


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


def _blamed_advice(
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
    if blame.evidence == FAILED and _made_again(blame.step, request.steps):
        # The same call worked later in the run: it failed for when it was made, not for what
        # it was ("Buy Now" before a product was open); the strategy's order is the lesson,
        # and "do not" would forbid the purchase itself.
        return f"{when_strategy}."
    if blame.evidence == FAILED and request.trace.call_effect(blame.step).is_read_only:
        # A look-up that failed on the way: looking up is still right.
        phrase = _blamed_phrase(blame, sources)
        return (
            f"{when_strategy}. {phrase} can fail ({blame.consequence}): then change its "
            "arguments, do not repeat it."
        )
    return f"{when_strategy}. Do not {pitfall}."


def _unblamed_advice(
    request: ReviewRequest, when_strategy: str, sources: Sources
) -> tuple[str, str]:
    """(advice, pitfall) of a run no step of which is blamed."""
    steps = request.steps
    calls = [s for s in steps if s.tool]
    if request.trace.outcome == "failure":
        if calls:
            tried = path_pattern(calls, sources, 3)
            return f"When you use {calls[0].tool}: {tried} was not enough: the run failed.", ""
        # No tool was called at all: the way not to go is answering from the conversation
        # alone, and the first reply is where the run chose it.
        pitfall = "answer without calling a tool" + _first_reply(steps)
        return f"When you answer: do not {pitfall}: the run failed.", pitfall
    if when_strategy:
        return f"{when_strategy}.", ""
    if calls:
        return f"When you use {calls[0].tool}: {path_pattern(calls, sources, 3)}.", ""
    return "When you can answer from the conversation alone, answer directly.", ""


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
    strategy = path_pattern(necessary_calls, sources) if necessary_calls else ""
    way = sorted(
        necessary_calls + _fed_look_ups(by_label["failed"], necessary_calls, request, sources),
        key=lambda s: s.index,
    )
    when_strategy = _strategy(way, request, sources) if necessary_calls else ""
    blame = blame_of(request, {i: j.label for i, j in labels.items()})
    if blame is not None:
        advice, pitfall = _lesson(blame, necessary_calls, request, sources)
        if (improvement := _blame_improvement(blame, labels)) is not None:
            improvements.append(improvement)
        advice = _blamed_advice(advice, pitfall, blame, when_strategy, request, sources)
    else:
        advice, pitfall = _unblamed_advice(request, when_strategy, sources)
    replay = _replay(request, necessary_calls, blame)
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
