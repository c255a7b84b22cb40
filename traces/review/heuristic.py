"""The offline reviewer: deterministic, documented rules. Marked "heuristic" wherever it shows.

It reads a trajectory the way a person reviews one afterwards: where did each step's input come
from, what did its result feed, and — in a run that did not succeed — where did it go wrong.

**Data flow.** A step *feeds* a later one when the later step's arguments (or, for reasoning,
its text) contain a value from the earlier step's output: the whole argument verbatim (a
clicked element, a name from a list of results), or a distinctive value — an identifier,
number, path or a capitalised name — that the request did not already contain. A value is
credited to the latest step that produced it, and to the tool result behind a reasoning step
that relayed it.

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
   thought whose text produced the final answer follows rule 3 / 4 instead.
6. **redundant** — everything else: nothing later used its result (0.55).

The template (goal, path, decisions, improvements, the second-person experience) is built from
the labels, so a human relabel re-derives the same way: a success yields a strategy ("When you
…, Search …, then …"), a failure a lesson ("When you …, do not …: it led to …; instead …").
"""

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from traces.observations import as_text
from traces.review.compression import estimate_tokens
from traces.review.scene import action_phrase, cut_at_word, first_sentence, scene_summary
from traces.review.triggers import call_key, is_dissatisfied
from traces.review.types import (
    Label,
    ReviewOutcome,
    ReviewRequest,
    ReviewTemplate,
    StepJudgement,
    StepView,
)

PROMPT_VERSION = "heuristic-2"
MODEL = "rules"

_SCAN_CHARS = 8000
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@#=-]*[A-Za-z0-9]")
_PARTS = re.compile(r"[/:=@]")
_CAMEL = re.compile(r"^[A-Z][a-z]+[A-Z]|^[A-Z]{3,}[a-z]")
# Capitalised names of one or more words ("Bon Jovi", "World War II", "Nick Park").
_NAME = re.compile(r"\b[A-Z][\w'&.-]*(?:\s+(?:of|the|and|de|la|von|van|&)?\s*[A-Z0-9][\w'&.-]*)*")
_GENERIC = {
    "true", "false", "null", "none", "error", "errors", "info", "debug", "warning", "http",
    "https", "localhost", "json", "utf-8", "ok", "status", "stdout", "stderr", "exit", "code",
}  # fmt: skip
_COMMON_CAPITALISED = {
    "i", "a", "an", "the", "this", "that", "it", "he", "she", "they", "we", "you", "my", "his",
    "her", "its", "our", "their", "in", "on", "at", "for", "to", "of", "and", "or", "but", "so",
    "if", "is", "was", "are", "be", "as", "by", "with", "from", "not", "no", "yes", "there",
    "what", "which", "who", "when", "where", "why", "how", "thought", "action", "observation",
    "page", "search", "results", "result", "total", "next", "prev", "back", "price", "rating",
}  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")
_STOP = _COMMON_CAPITALISED | {
    "me", "need", "want", "would", "like", "looking", "find", "get", "some", "one", "also",
    "can", "could", "should", "do", "does", "did", "have", "has", "had", "than", "then", "any",
    "all", "more", "less", "lower", "higher", "about", "into", "out", "up", "down", "over",
    "buy", "now", "click", "select", "choose", "make", "sure", "please", "am", "im", "were",
}  # fmt: skip
# A result that opens like an error, a refusal or an empty answer.
_ERROR_OPENING = re.compile(
    r"^\W*(error\b|exception\b|traceback\b|fatal\b|could not\b|couldn'?t\b|cannot\b|can'?t\b|"
    r"unable to\b|no results?\b|no matches\b|nothing found\b|not found\b|invalid\b|failed\b|"
    r"failure\b|denied\b|permission denied|forbidden\b|refused\b|unauthori[sz]ed\b|"
    r"timed? ?out\b|http(/\d(\.\d)?)? [45]\d\d\b|[45]\d\d (bad request|not found|forbidden|"
    r"internal server error|service unavailable))",
    re.IGNORECASE,
)
_VERDICT_AGAINST = re.compile(
    r"\b(incorrect|wrong answer|rejected|not accepted|not correct|failed)\b|"
    r"\bscore\b[^\n]{0,40}?[:=]\s*0(\.0+)?\s*(/\s*1(\.0+)?)?\s*$",
    re.IGNORECASE | re.MULTILINE,
)
# The agent's next thought turns the result down.
_REJECTION = re.compile(
    r"\b(does not|doesn'?t|did not|didn'?t|is not|isn'?t|not what|not the right|not helpful|"
    r"not relevant|no (information|mention|results?)|cannot find|can'?t find|could not find|"
    r"unable to find|instead|wrong|too (high|expensive|low|much)|not match|nothing)\b",
    re.IGNORECASE,
)
_UNDO = re.compile(r"^\W*(<\s*)?(back|prev|previous|undo|cancel|return|go back)\b", re.IGNORECASE)


# ---------------------------------------------------------------------------- values


def key_values(text: str) -> set[str]:
    """Distinctive tokens: contain a digit or punctuation inside, or are CamelCase/ALLCAPS words."""
    values = set()
    for whole in _TOKEN.findall(text[:_SCAN_CHARS]):
        # "host:8080/path" also yields "host", "8080" and "path": a later step may use any part.
        for token in {whole, *_PARTS.split(whole)}:
            lower = token.lower()
            if len(token) < 3 or lower in _GENERIC:
                continue
            if any(c.isdigit() or c in "_.:/@#=-" for c in token) or _CAMEL.match(token):
                values.add(lower)
    return values


def names(text: str) -> set[str]:
    """Capitalised names, whole and word by word past the first ("World War II", "War II")."""
    found = set()
    for match in _NAME.finditer(text[:_SCAN_CHARS]):
        words = [w for w in match.group(0).split() if w.lower() not in _COMMON_CAPITALISED]
        if not words:
            continue
        phrase = " ".join(words).lower()
        if len(phrase) >= 3:
            found.add(phrase)
        found.update(w.lower() for w in words if len(w) >= 4)
    return found


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def _argument_values(step: StepView) -> list[str]:
    values: list[str] = []

    def collect(value: object) -> None:
        if isinstance(value, str):
            text = " ".join(value.split()).strip("\"' ")
            if len(text) >= 2:
                values.append(text)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            values.append(str(value))

    collect(step.arguments)
    return values


def _output(step: StepView) -> str:
    if step.kind == "tool_call":
        return (step.observation_raw or step.observation)[:_SCAN_CHARS]
    return f"{step.content}\n{step.observation_raw or step.observation}"[:_SCAN_CHARS]


def _consumed(step: StepView) -> str:
    if step.kind == "tool_call":
        return as_text(step.arguments)
    return step.content


# ---------------------------------------------------------------------------- facts


@dataclass
class _Facts:
    """What the rules read of one trajectory, computed once."""

    steps: list[StepView]
    task_text: str
    task_values: set[str]
    task_words: set[str]
    outputs: dict[int, str]
    outputs_lower: dict[int, str]
    values: dict[int, set[str]]  # distinctive values each step produced
    duplicate_of: dict[int, int]  # a tool result that repeats an earlier one -> the earlier

    @classmethod
    def of(cls, request: ReviewRequest) -> "_Facts":
        steps = request.steps
        task = "\n".join(
            [request.trace.task, *(s.content for s in steps if s.kind == "user_input")]
        )
        outputs = {s.index: _output(s) for s in steps}
        task_values = key_values(task) | names(task)
        duplicate_of: dict[int, int] = {}
        seen: dict[str, int] = {}
        for step in steps:
            if step.kind != "tool_call":
                continue
            # An informative result (not a short status like "restarted") of the same tool that
            # was already seen adds nothing new.
            text = step.tool + " " + " ".join(outputs[step.index].split()).lower()
            if len(text) >= 100 + len(step.tool) and text in seen:
                duplicate_of[step.index] = seen[text]
            else:
                seen.setdefault(text, step.index)
        return cls(
            steps=steps,
            task_text=task.lower(),
            task_values=task_values,
            task_words=content_words(task),
            outputs=outputs,
            outputs_lower={i: o.lower() for i, o in outputs.items()},
            values={
                s.index: (key_values(outputs[s.index]) | names(outputs[s.index])) - task_values
                for s in steps
            },
            duplicate_of=duplicate_of,
        )

    def in_request(self, value: str) -> bool:
        """The value (or its words) comes from the request itself."""
        lower = value.lower()
        if lower in self.task_text and len(lower) > 3:
            return True
        compact = re.sub(r"\W+", "", lower)
        if len(compact) >= 3 and compact in re.sub(r"\W+", "", self.task_text):
            return True
        return bool(content_words(lower) & self.task_words)

    def producers(self, step: StepView) -> list[tuple[int, float]]:
        """The earlier steps that fed `step`, each with the strength of the link."""
        earlier = [
            s
            for s in self.steps
            if s.index < step.index and s.kind != "user_input" and s.index not in self.duplicate_of
        ]
        found: dict[int, float] = {}

        def latest(predicate) -> StepView | None:
            return next((s for s in reversed(earlier) if predicate(s)), None)

        def credit(source: StepView, strength: float) -> None:
            found[source.index] = max(found.get(source.index, 0.0), strength)
            if source.kind == "llm_reasoning":  # a thought relays what a tool result said
                relayed = latest_call_before(source)
                if relayed is not None:
                    found[relayed.index] = max(found.get(relayed.index, 0.0), strength - 0.05)

        def latest_call_before(thought: StepView) -> StepView | None:
            text = self.outputs_lower[thought.index]
            for s in reversed(earlier):
                if s.index < thought.index and s.kind == "tool_call":
                    if any(v in text for v in self.values[s.index]):
                        return s
            return None

        if step.kind == "tool_call":
            for value in _argument_values(step):
                lower = value.lower()
                if len(lower) < 2 or (lower in self.task_text and len(lower) > 3):
                    continue  # from the request itself
                source = latest(lambda s, lower=lower: lower in self.outputs_lower[s.index])
                if source is not None:
                    credit(source, 0.85)
        consumed = _consumed(step).lower()
        credited: set[str] = set()
        for source in reversed(earlier):  # each value to the latest step that produced it
            used = {v for v in self.values[source.index] if v in consumed} - credited
            credited |= used
            if used and source.index not in found:
                credit(source, 0.75)
        return sorted(found.items())


# ---------------------------------------------------------------------------- labelling


def _error_opening(step: StepView) -> bool:
    text = (step.observation_raw or step.observation).strip()[:300]
    return bool(text) and bool(_ERROR_OPENING.match(text))


def _error_text(step: StepView) -> str:
    if step.error_type:
        return step.error_type
    first_line = (step.observation or step.observation_raw).strip().splitlines()
    return first_sentence(first_line[0], 100) if first_line else "an empty result"


def _next_thought(steps: list[StepView], after: StepView) -> StepView | None:
    for step in steps:
        if step.index <= after.index:
            continue
        if step.kind == "tool_call":
            return None
        if step.kind in ("llm_reasoning", "user_input"):
            return step
    return None


def _next_call(steps: list[StepView], after: StepView) -> StepView | None:
    return next((s for s in steps if s.index > after.index and s.kind == "tool_call"), None)


def label_steps(request: ReviewRequest) -> dict[int, StepJudgement]:
    steps, trace = request.steps, request.trace
    facts = _Facts.of(request)
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
            judge(step, "failed", f"the step failed: {_error_text(step)}", 0.95)
        elif _error_opening(step):
            judge(step, "failed", f"its result is an error or empty: {_error_text(step)}", 0.8)
    if failed_run and last_call is not None and last_call.index not in judged:
        result = (last_call.observation_raw or last_call.observation).strip()
        if _VERDICT_AGAINST.search(result[-400:]):
            judge(last_call, "failed", f"the result was refused: {_error_text(last_call)}", 0.85)
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
    undo_calls = {s.index for s in calls if any(_UNDO.match(v) for v in _argument_values(s))}
    for index in undo_calls:
        step = next(s for s in calls if s.index == index)
        judge(step, "redundant", "goes back: navigation, not progress", 0.6)

    # Rejected or undone results: the agent turned them down itself.
    rejected: dict[int, str] = {}
    for step in calls:
        if step.index in judged:
            continue
        thought = _next_thought(steps, step)
        following = _next_call(steps, step)
        if thought is not None and thought.kind == "llm_reasoning":
            if _REJECTION.search(thought.content) and not _acts_on(thought, step, facts):
                rejected[step.index] = f"the agent turned its result down at step {thought.index}"
        if following is not None and any(_UNDO.match(v) for v in _argument_values(following)):
            rejected[step.index] = f"undone at step {following.index}"

    # The wrong turn of a run that did not succeed: the last choice of something an earlier
    # result offered (not something the request named) on the way to the end.
    # In a failed run it is the first such choice: what came after it built on it.
    wrong_turn: StepView | None = None
    if failed_run or partial_run:
        for step in calls if failed_run else reversed(calls):
            if step.index in judged or step.index in undo_calls or step.index in rejected:
                continue
            if _is_choice(step, facts) and step is not last_call:
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

    succeeded = outcome in ("success", "partial")  # an unknown outcome proves no result
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
        thought = _next_thought(steps, step)
        read = thought is not None and thought.kind == "llm_reasoning"
        relevant = [v for v in _argument_values(step) if facts.in_request(v)]
        if relevant and (read or not answer):
            confidence = 0.55 if failed_run or partial_run else 0.6
            shown = cut_at_word(relevant[0], 40)
            necessary[index] = (f"acts on the request ('{shown}')", confidence)

    for index, reason in rejected.items():
        if index not in judged and index not in necessary:
            misleading.setdefault(index, (f"a detour: {reason}", 0.55))
    for step in steps:  # a thought that turned down a result the run then used
        if step.kind != "llm_reasoning" or not _REJECTION.search(step.content):
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
        decided = _next_call(steps, step)
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


def _acts_on(thought: StepView, call: StepView, facts: _Facts) -> bool:
    """The thought picks something out of the call's result (so it did not reject it)."""
    text = thought.content.lower()
    return bool({v for v in facts.values[call.index] if len(v) >= 4 and v in text})


_IDENTIFIER = re.compile(r"^(?=\S*\d)(?=\S*[A-Za-z])\S{4,}$")


def _is_choice(step: StepView, facts: _Facts) -> bool:
    """The pick of an item an earlier result offered: an identifier or a name found in exactly
    one earlier result (a control offered by every page, like a button, is not a choice), not
    named by the request."""
    for value in _argument_values(step):
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


# ---------------------------------------------------------------------------- the template


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


def _consequence(step: StepView, request: ReviewRequest) -> str:
    if step.is_error or _error_opening(step):
        return f"an error ({_error_text(step)})"
    result = (step.observation_raw or step.observation).strip()
    if result:
        last = re.sub(r"(\d+\.\d{2})\d+", r"\1", result.splitlines()[-1])  # 0.6666… -> 0.66
        return f'"{first_sentence(last, 80)}"'
    return f"a {request.trace.outcome}"


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
                f"({_error_text(failure)}), {action_phrase(next_other)} at step {next_other.index}"
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
        else:
            advice = (
                f"{when}, this approach failed: {_path_phrase([s for s in steps if s.tool], 3)}."
            )
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


class HeuristicReviewer:
    name = "heuristic"

    def review(self, request: ReviewRequest) -> ReviewOutcome:
        started = time.monotonic()
        template = build_template(request, label_steps(request))
        return ReviewOutcome(
            request=request,
            template=template,
            reviewer="heuristic",
            model=MODEL,
            prompt_version=PROMPT_VERSION,
            prompt_tokens=estimate_tokens(request.prompt),
            completion_tokens=estimate_tokens(json.dumps(template.model_dump())),
            latency_ms=int((time.monotonic() - started) * 1000),
        )
