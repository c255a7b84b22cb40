"""When a trajectory is worth reviewing: a full review by size, local reviews around anomalies."""

import json
import re
from collections import defaultdict

from django.conf import settings

from traces.review.types import StepView, TraceView, Window, went_wrong

# The trigger of a short run's review (a full window, reviewed offline).
SHORT = "short"

# Dissatisfaction in a user's message: complaints, corrections, repeated requests (EN and ZH).
_DISSATISFIED = re.compile(
    r"(\bnot what i (asked|wanted|meant)\b|\bthat'?s (wrong|not (it|right|what))\b|\bwrong\b|"
    r"\b(doesn'?t|does not|didn'?t|did not|still (doesn'?t|does not)) work\b|"
    r"\bstill (broken|failing|not)\b|"
    r"\buseless\b|\bi (already|just) (told|said|asked)\b|\bwhy (did|do|are) you\b|\bstop\b|"
    r"\bnot helpful\b|\bfrustrat|\bterrible\b|\bawful\b|\byou (forgot|missed|ignored)\b|"
    r"\bagain\?|\bno,|\bnope\b|\bwtf\b|"
    r"不对|错了|没用|还是不行|不行|我已经说过|又错|重复|不是我要的)",
    re.IGNORECASE,
)
# Phrases that contain a trigger word but are not complaints; among them the user correcting
# their own words ("I gave you the wrong reservation ID"), which blames no step of the agent.
_NOT_DISSATISFIED = re.compile(
    r"(\bno problem\b|\bnot bad\b|\bnothing wrong\b|\bno worries\b|\bworks now\b|"
    r"\bwhat (went|is) wrong\b|\bwrong (with|in)\b.*\?$|"
    r"\bi(?:'ve| have)? (?:\w+ )?(?:gave|given|provided|sent|typed|entered|said|told you|mentioned|"
    r"quoted|used) (?:you )?(?:the |a |my )?wrong\b|\bmy (?:mistake|bad|fault)\b|"
    r"我(?:说|写|给)错了)",
    re.IGNORECASE,
)


# A token wrapped in symbol runs ("###STOP###", "<<END>>") is a marker a program wrote (a
# simulated user ending the conversation), not a person's words.
MARKER = re.compile(r"([#<>\[\]=*_~]{2,})\w+\1|[#<\[=*_~]{2,}\w+[#>\]=*_~]{2,}")


def is_dissatisfied(text: str) -> bool:
    """A small, deliberate detector: a complaint phrase, unless a benign phrase explains it."""
    if not text or not _DISSATISFIED.search(text):
        return False
    cleaned = _NOT_DISSATISFIED.sub(" ", MARKER.sub(" ", text))
    return bool(_DISSATISFIED.search(cleaned))


def dissatisfied_sentence(text: str) -> str:
    """The sentence of a turn that carries the complaint ("Thanks. But that's wrong." gives the
    second), or the turn when no single sentence does."""
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        if is_dissatisfied(sentence):
            return sentence.strip()
    return text.strip()


def full_review_reason(trace: TraceView, steps: list[StepView]) -> str | None:
    """Why a full review runs, or None when the trajectory is too short to be worth it."""
    tool_calls = sum(1 for s in steps if s.kind == "tool_call")
    seconds = (trace.duration_ms or 0) / 1000
    if len(steps) >= settings.HINDSIGHT_REVIEW_MIN_EVENTS:
        return f"{len(steps)} events"
    if tool_calls >= settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS:
        return f"{tool_calls} tool calls"
    if seconds >= settings.HINDSIGHT_REVIEW_MIN_SECONDS:
        return f"{seconds:.0f} s"
    if went_wrong(trace.outcome) and tool_calls:
        # A run that went wrong is always worth its lesson: failure lessons are the most
        # durable memory, and the cost argument for skipping short runs is about successes.
        return f"a {trace.outcome} with {tool_calls} tool call(s)"
    return None


def short_review_reason(trace: TraceView, steps: list[StepView]) -> str | None:
    """Why a run below the thresholds still gets a short review, or None.

    The thresholds are about what a review costs and how much a long trace has to say; a short
    run that used a tool still holds the path that answered its task (two calls, often the best
    memory there is for a task asked again), so the offline reviewer (free, deterministic)
    reviews it when HINDSIGHT_REVIEW_SHORT_RUNS is on. A run without any tool call has no tool
    use to learn from and is skipped.
    """
    if not settings.HINDSIGHT_REVIEW_SHORT_RUNS:
        return None
    tool_calls = sum(1 for s in steps if s.kind == "tool_call")
    return f"short: {tool_calls} tool call(s)" if tool_calls else None


def skip_reason(trace: TraceView, steps: list[StepView]) -> str:
    tool_calls = sum(1 for s in steps if s.kind == "tool_call")
    seconds = (trace.duration_ms or 0) / 1000
    shorter = (
        "; a shorter run is reviewed offline when it called a tool"
        if settings.HINDSIGHT_REVIEW_SHORT_RUNS
        else ""
    )
    return (
        f"too short to review: {len(steps)} events, {tool_calls} tool calls, {seconds:.0f} s "
        f"(a full review needs ≥ {settings.HINDSIGHT_REVIEW_MIN_EVENTS} events, "
        f"≥ {settings.HINDSIGHT_REVIEW_MIN_TOOL_CALLS} tool calls or "
        f"≥ {settings.HINDSIGHT_REVIEW_MIN_SECONDS:.0f} s, or a failed run with a tool call"
        f"{shorter}) and no anomaly"
    )


def call_key(step: StepView) -> str:
    return step.tool + " " + json.dumps(step.arguments, sort_keys=True, default=str)


def local_windows(steps: list[StepView]) -> list[Window]:
    """Windows around anomalies: consecutive failed tool calls, dissatisfaction, loops."""
    if not steps:
        return []
    margin = settings.HINDSIGHT_LOCAL_WINDOW_STEPS
    first, last = steps[0].index, steps[-1].index
    found: list[tuple[str, int, int]] = []

    tool_calls = [s for s in steps if s.kind == "tool_call"]
    for previous, current in zip(tool_calls, tool_calls[1:], strict=False):
        if previous.is_error and current.is_error:
            found.append(("consecutive_failures", previous.index - margin, current.index + margin))

    for step in steps:
        if step.kind == "user_input" and is_dissatisfied(step.content):
            found.append(("dissatisfaction", step.index - 2 * margin - 1, step.index + margin))

    occurrences: dict[str, list[int]] = defaultdict(list)
    for step in tool_calls:
        occurrences[call_key(step)].append(step.index)
    for indexes in occurrences.values():
        if len(indexes) > settings.HINDSIGHT_LOOP_REPEATS:
            found.append(("loop", indexes[0], indexes[-1]))

    windows: list[Window] = []
    for trigger, start, end in sorted(found, key=lambda f: (f[0], f[1])):
        start, end = max(first, start), min(last, end)
        previous_window = windows[-1] if windows else None
        if previous_window and previous_window.trigger == trigger and start <= previous_window.end:
            windows[-1] = Window(
                "local", trigger, previous_window.start, max(end, previous_window.end)
            )
        else:
            windows.append(Window("local", trigger, start, end))
    # Two anomalies may frame the very same steps (failures the user then complained about):
    # one review of them (a review is unique per window; the second one broke the whole review).
    distinct: dict[tuple[int, int], Window] = {}
    for window in windows:
        distinct.setdefault((window.start, window.end), window)
    return list(distinct.values())
