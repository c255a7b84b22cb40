"""The replay: the same run with its literal values, ids included, served only when the very
same case comes again (the lesson teaches the strategy with placeholders; this keeps the
episode)."""

import re

from traces.review.heuristic.blame import (
    CHANGED,
    ENDED,
    REFUSED,
    Blame,
    errored,
    worked_again,
)
from traces.review.heuristic.path_patterns import literal_path
from traces.review.heuristic.placeholders import literal_call
from traces.review.scene import cut_at_word, first_sentence
from traces.review.types import ReviewRequest, StepView, counts_as_success

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


def replay_of(request: ReviewRequest, necessary_calls: list[StepView], blame: Blame | None) -> str:
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
        elif step.tool and worked_again(step, request.steps):
            # The very call failed and then worked when the run made it again (the tests run
            # again after the fix): "do not" would forbid the case's own way. A call with these
            # values that never worked stays "do not": the same case must not repeat it.
            text += f"; {what} failed at first ({blame.consequence})"
        else:
            text += f"; do not {what}: {blame.consequence}"
    elif counts_as_success(outcome) and request.trace.final_answer:
        text += f'; the answer was "{cut_at_word(request.trace.final_answer, 80)}"'
    return text + "."
