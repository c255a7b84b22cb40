"""Which step a lesson forbids, and why: the step the evidence blames, never a look-up whose
result the run used.

In a run that failed (or partly did), the first of these that exists is blamed:

1. **the user objected** — the step the user complained about or corrected right after (the
   last call between the user's previous turn and the complaint that is not a successful
   read-only call, else the agent's reply just before it);
2. **the checker refused it** — the final action whose result is a verdict against the run
   ("Answer is INCORRECT", a score below 1);
3. **a change the outcome contradicts** — a state-changing call of the failed run (the first one
   the labels call misleading or failed, else the last one);
4. **it failed** — the first call that errored (flagged, or its result opens like an error);
5. **the wrong turn** — the first call labelled misleading whose effect is not known to be
   read-only;
6. **the run ended on it** — the agent's last reply after its last call, when nothing above
   exists (a run that called no tool at all teaches not to answer without one: the template).
   Only the outcome speaks against it: the reply may have been right and the run wrong for what
   it left undone, so the lesson warns (check the request is done before you answer), never
   forbids the reply.

In a run that succeeded, only a call that failed (4) is a pitfall. A read-only call
(traces.review.tool_effects) is blamed only when it failed itself. The consequence is what
happened, in words: the error text, the checker's verdict, the user's reply, or the outcome —
and where only the outcome speaks against a change, the error a call had last returned when no
later call of its tool worked before the change (the tests still failing when the run
submitted: "the run failed; bash had last returned \"NameError: …\"").
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass

from traces.review.heuristic.signals import VERDICT_AGAINST, error_opening, error_text
from traces.review.scene import first_sentence, informative_text
from traces.review.triggers import MARKER as _MARKER
from traces.review.triggers import dissatisfied_sentence, is_dissatisfied
from traces.review.types import ReviewRequest, StepView, went_wrong

EVIDENCE = (
    "the user objected",
    "the checker refused it",
    "a change the outcome contradicts",
    "it failed",
    "the wrong turn",
    "the run ended on it",
)
REFUSED = EVIDENCE[1]
CHANGED = EVIDENCE[2]
FAILED = EVIDENCE[3]
ENDED = EVIDENCE[5]
QUOTE_CHARS = 80
# Consequences that are the outcome alone: nothing says which step made the run go wrong.
OUTCOME_ONLY = ("the run failed", "it only partly worked")


@dataclass(frozen=True)
class Blame:
    step: StepView
    evidence: str  # one of EVIDENCE
    consequence: str  # what happened, in words
    reason: str  # why this step, shown on the experience page
    effect: str  # what is known of the tool's effect (tool_effects evidence)

    @property
    def outcome_only(self) -> bool:
        """Only the outcome speaks against the step (no error, words, verdict or feedback)."""
        return self.consequence in OUTCOME_ONLY

    def as_json(self) -> dict:
        return {
            "index": self.step.index,
            "tool": self.step.tool,
            "kind": self.step.kind,
            "evidence": self.evidence,
            "consequence": self.consequence,
            "reason": self.reason,
            "effect": self.effect,
        }


_IDENTIFIER = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]{4,}\b")


def _quote(text: str, hide: tuple[str, ...] = ()) -> str:
    """The first sentence, its identifiers and the call's own values (`hide`) left out ("no
    seats on flight HAT290" reads "no seats on flight …", "Could not find [Scat]" for a search
    of Scat "Could not find […]"): they belong to that one case."""
    quoted = first_sentence(text, QUOTE_CHARS)
    for value in sorted({v for v in hide if len(v) >= 3}, key=len, reverse=True):
        quoted = re.sub(re.escape(value), "…", quoted, flags=re.IGNORECASE)
    quoted = _IDENTIFIER.sub("…", quoted).replace('"', "'")
    return f'"{quoted}"'


def errored(step: StepView) -> bool:
    return step.kind == "tool_call" and (step.is_error or error_opening(step))


def worked_again(failed: StepView, steps: list[StepView]) -> bool:
    """The run made the same call (tool and arguments) again later, and that time it worked."""
    return any(
        s.index > failed.index
        and s.tool == failed.tool
        and s.arguments == failed.arguments
        and not errored(s)
        for s in steps
    )


def worked_later(failed: StepView, steps: list[StepView]) -> bool:
    """A later call of the same tool worked (with other arguments: another payment method):
    the tool was right, the arguments were not."""
    return any(s.index > failed.index and s.tool == failed.tool and not errored(s) for s in steps)


def _verdict(step: StepView) -> str | None:
    result = (step.observation_raw or step.observation).strip()
    tail = result[-400:]
    if not VERDICT_AGAINST.search(tail):
        return None
    lines = [line for line in tail.splitlines() if VERDICT_AGAINST.search(line)]
    return lines[-1].strip() if lines else tail


# A turn that only thanks or closes ("Great, thank you so much for your help!") says nothing of
# what happened: the user did not see it go wrong.
_THANKS = re.compile(
    r"^\W*((great|perfect|ok(ay)?|awesome|sure|alright|no|that'?s all|that is all)\W+)*"
    r"(thanks?|thank you|merci|cheers|bye|goodbye)\b",
    re.IGNORECASE,
)


def _user_words(text: str) -> str:
    words = informative_text([_MARKER.sub(" ", text)])
    return "" if _THANKS.match(words) else words


def _outcome_words(request: ReviewRequest, after: StepView) -> str:
    """What followed a step: the user's next words, else the feedback, else the outcome."""
    reply = next(
        (
            words
            for s in request.steps
            if s.index > after.index and s.kind == "user_input"
            and (words := _user_words(s.content))
        ),
        None,
    )  # fmt: skip
    if reply is not None:  # thanks and greetings say nothing of what happened
        return f"the user then said {_quote(reply)}"
    if request.trace.feedback.strip():
        return f"the feedback was {_quote(request.trace.feedback)}"
    return OUTCOME_ONLY[0] if request.trace.outcome == "failure" else OUTCOME_ONLY[1]


def blames_a_failed_look_up(blame: Blame, request: ReviewRequest) -> bool:
    """The lesson blames a read-only call that failed ("Search … can fail: it returned 'Could not
    find …'"): its arguments were that case's (a name, an id), and "change them" is all it says
    to another case; a tool's recurring errors are its warnings (experiences.services.warnings)."""
    step = blame.step
    return (
        blame.evidence == FAILED
        and bool(step.tool)
        and request.trace.call_effect(step).read_only is True
    )


def blames_the_answer(blame: Blame, request: ReviewRequest) -> bool:
    """The lesson is about the run's own final answer: the checker refused it, the run ended on
    it, or it is the commit the run ended on that nearly every run makes (a purchase). Its
    literal value belongs to that one case: the lesson is to check what it rests on."""
    if blame.evidence in (REFUSED, ENDED):
        return True
    step = blame.step
    if blame.evidence != CHANGED:
        return False
    last_call = next((s for s in reversed(request.steps) if s.tool), None)
    ended_on_it = step is last_call and not any(
        s.kind == "user_input" for s in request.steps if s.index > step.index
    )
    return ended_on_it and (not step.tool or request.trace.call_effect(step).every_run is not False)


def blame_of(request: ReviewRequest, labels: Mapping[int, str]) -> Blame | None:
    """The step a lesson forbids, by the rules of the module docstring (None: none)."""
    trace, steps = request.trace, request.steps
    calls = [s for s in steps if s.kind == "tool_call"]
    wrong_outcome = went_wrong(trace.outcome)

    def effect_of(step: StepView) -> str:
        return trace.call_effect(step).evidence if step.tool else "not a tool call"

    def blameable(step: StepView) -> bool:
        return not step.tool or not trace.call_effect(step).is_read_only or errored(step)

    def blame(step: StepView, evidence: str, consequence: str, reason: str) -> Blame:
        return Blame(step, evidence, consequence, reason, effect_of(step))

    if wrong_outcome:
        found = _user_objected(request, calls, blameable)
        if found is not None:
            step, complaint = found
            return blame(
                step,
                EVIDENCE[0],
                f"the user replied {_quote(dissatisfied_sentence(complaint.content))}",
                f"the user objected right after it (step {complaint.index})",
            )
        if calls and (verdict := _verdict(calls[-1])) is not None:
            return blame(
                calls[-1],
                EVIDENCE[1],
                f"the checker said {_quote(verdict)}",
                "the final action, and its result is a verdict against the run",
            )
        writes = [c for c in calls if trace.call_effect(c).changes_state]
        if writes:
            marked = [w for w in writes if labels.get(w.index) in ("misleading", "failed")]
            step = marked[0] if marked else writes[-1]
            if errored(step):
                consequence = f"it returned {_quote(error_text(step))}"
            else:
                consequence = _outcome_words(request, step)
                if consequence in OUTCOME_ONLY and (unresolved := _left_failing(calls, step)):
                    consequence += (
                        f"; {unresolved.tool} had last returned {_quote(error_text(unresolved))}"
                    )
            return blame(
                step,
                EVIDENCE[3] if errored(step) else EVIDENCE[2],
                consequence,
                "it changed state in a run that "
                + ("partly failed" if trace.outcome == "partial" else "failed"),
            )
    failed_calls = [c for c in calls if errored(c)]
    if failed_calls:
        step = failed_calls[0]
        return blame(
            step, EVIDENCE[3], f"it returned {_quote(error_text(step))}", "the call failed"
        )
    misleading = [
        c for c in calls if wrong_outcome and labels.get(c.index) == "misleading" and blameable(c)
    ]  # fmt: skip
    if misleading:
        step = misleading[0]
        return blame(
            step,
            EVIDENCE[4],
            _outcome_words(request, step),
            "labelled misleading, and nothing says it only reads",
        )
    if trace.outcome == "failure":
        reply = next(
            (s for s in reversed(steps) if s.kind == "llm_reasoning" and s.content.strip()), None
        )
        if reply is not None and calls and reply.index > calls[-1].index:
            return blame(reply, ENDED, OUTCOME_ONLY[0], "the run ended on this reply")
    return None


def _left_failing(calls: list[StepView], before: StepView) -> StepView | None:
    """The last call before `before` that failed and whose tool did not work again before it
    (the tests still failing when the run submitted): what the outcome alone left unsaid."""
    earlier = [c for c in calls if c.index < before.index]
    failed = [c for c in earlier if errored(c)]
    if not failed:
        return None
    last = failed[-1]
    worked_again = any(
        c.tool == last.tool and c.index > last.index and not errored(c) for c in earlier
    )
    return None if worked_again else last


def _user_objected(request: ReviewRequest, calls: list[StepView], blameable):
    """(the blamed step, the complaint) for the first complaint after a call, or None."""
    if not calls:
        return None
    steps = request.steps
    for complaint in steps:
        if complaint.kind != "user_input" or complaint.index <= calls[0].index:
            continue
        if not is_dissatisfied(complaint.content):
            continue
        previous_turn = max(
            (s.index for s in steps if s.kind == "user_input" and s.index < complaint.index),
            default=-1,
        )
        between = [s for s in steps if previous_turn < s.index < complaint.index]
        call = next((s for s in reversed(between) if s.kind == "tool_call" and blameable(s)), None)
        reply = next(
            (s for s in reversed(between) if s.kind == "llm_reasoning" and s.content.strip()),
            None,
        )
        step = call or reply
        if step is not None:
            return step, complaint
    return None
