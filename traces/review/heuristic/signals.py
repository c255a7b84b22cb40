"""Signals the rules read in single steps: errors and verdicts, what the agent did next with a
result (turned it down in a thought, undid it), and whether a call picked something an earlier
result offered. Each is a small predicate over a step and, where it needs them, the trajectory's
`Facts`.
"""

import re

from traces.review.heuristic.flow import Facts
from traces.review.scene import first_sentence
from traces.review.types import StepView
from traces.review.values import argument_values

# A result that opens like an error, a refusal or an empty answer.
_ERROR_OPENING = re.compile(
    r"^\W*(error\b|exception\b|traceback\b|fatal\b|could not\b|couldn'?t\b|cannot\b|can'?t\b|"
    r"unable to\b|no results?\b|no matches\b|nothing found\b|not found\b|invalid\b|failed\b|"
    r"failure\b|denied\b|permission denied|forbidden\b|refused\b|unauthori[sz]ed\b|"
    r"timed? ?out\b|http(/\d(\.\d)?)? [45]\d\d\b|[45]\d\d (bad request|not found|forbidden|"
    r"internal server error|service unavailable))",
    re.IGNORECASE,
)
# A final result that is a verdict against the run ("incorrect", a score of 0).
VERDICT_AGAINST = re.compile(
    r"\b(incorrect|wrong answer|rejected|not accepted|not correct|failed)\b|"
    r"\bscore\b[^\n]{0,40}?[:=]\s*0(\.0+)?\s*(/\s*1(\.0+)?)?\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def error_opening(step: StepView) -> bool:
    text = (step.observation_raw or step.observation).strip()[:300]
    return bool(text) and bool(_ERROR_OPENING.match(text))


def error_text(step: StepView) -> str:
    if step.error_type:
        return step.error_type
    first_line = (step.observation or step.observation_raw).strip().splitlines()
    return first_sentence(first_line[0], 100) if first_line else "an empty result"


# ---------------------------------------------------------------------------- what came next

# The agent's next thought turns the result down.
REJECTION = re.compile(
    r"\b(does not|doesn'?t|did not|didn'?t|is not|isn'?t|not what|not the right|not helpful|"
    r"not relevant|no (information|mention|results?)|cannot find|can'?t find|could not find|"
    r"unable to find|instead|wrong|too (high|expensive|low|much)|not match|nothing)\b",
    re.IGNORECASE,
)
# A call whose whole argument is a navigation back ("< Prev", "Back to Search", "undo"): not a
# value that merely opens with such a word (a code edit "return date(y, m, d)", a search for
# "Back to the Future"), which read as going back and hid the step that did the work.
UNDO = re.compile(
    r"^\W*(<\s*)?(back|prev|previous|undo|cancel|return|go back)(\s+to\s+\w+)?\W*$",
    re.IGNORECASE,
)


def next_thought(steps: list[StepView], after: StepView) -> StepView | None:
    for step in steps:
        if step.index <= after.index:
            continue
        if step.kind == "tool_call":
            return None
        if step.kind in ("llm_reasoning", "user_input"):
            return step
    return None


def next_call(steps: list[StepView], after: StepView) -> StepView | None:
    return next((s for s in steps if s.index > after.index and s.kind == "tool_call"), None)


def acts_on(thought: StepView, call: StepView, facts: Facts) -> bool:
    """The thought picks something out of the call's result (so it did not reject it)."""
    text = thought.content.lower()
    return bool({v for v in facts.values[call.index] if len(v) >= 4 and v in text})


# ---------------------------------------------------------------------------- choices

_IDENTIFIER = re.compile(r"^(?=\S*\d)(?=\S*[A-Za-z])\S{4,}$")


def is_choice(step: StepView, facts: Facts) -> bool:
    """The pick of an item an earlier result offered: an identifier or a name found in exactly
    one earlier result (a control offered by every page, like a button, is not a choice), not
    named by the request."""
    for value in argument_values(step):
        lower = value.lower()
        if len(lower) < 2 or facts.in_request(value):
            continue
        if not (_IDENTIFIER.match(value) or value[:1].isupper()):
            continue
        offered = [
            s
            for s in facts.steps
            if s.index < step.index
            and s.kind == "tool_call"
            and lower in facts.outputs_lower[s.index]
        ]
        if len(offered) == 1 or (offered and _IDENTIFIER.match(value)):
            return True
    return False
