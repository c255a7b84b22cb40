"""The offline reviewer: deterministic, documented rules. Marked "heuristic" wherever it shows.

Rules, applied in this order (a step keeps the first label it gets):

1. **failed** — the step itself errored (`is_error`).
2. **redundant** — an identical repeat (same tool, same arguments) of an earlier call that did
   not fail: its result was already known.
3. **necessary** — walking backwards from the end: a step whose observation (or, for user input
   and reasoning, whose text) carries a key value — an identifier, number, path, name with digits
   or punctuation, CamelCase word — that reappears in the final answer or in the arguments or
   text of a later necessary step. Values already in the task text do not count. In a successful
   trajectory with no final answer, or where no value links any tool call to it, the last
   successful tool call is necessary (it produced the result); the first user input is necessary
   (it states the request).
4. **misleading** — a tool call on a path that was abandoned: the same tool failed later, was
   never used successfully afterwards, and the agent moved on to another tool.
5. **redundant** — everything else: its result did not affect the conclusion.

The template (goal, path, decisions, improvements, the second-person experience) is built from
the labels: the necessary path becomes the advice, failures become what to avoid.
"""

import json
import re
import time

from traces.observations import as_text
from traces.review.compression import estimate_tokens
from traces.review.triggers import call_key
from traces.review.types import (
    Label,
    ReviewOutcome,
    ReviewRequest,
    ReviewTemplate,
    StepJudgement,
    StepView,
)

PROMPT_VERSION = "heuristic-1"
MODEL = "rules"

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@=-]*[A-Za-z0-9]")
_PARTS = re.compile(r"[/:=@]")
_CAMEL = re.compile(r"^[A-Z][a-z]+[A-Z]|^[A-Z]{3,}[a-z]")
_GENERIC = {
    "true",
    "false",
    "null",
    "none",
    "error",
    "errors",
    "info",
    "debug",
    "warning",
    "http",
    "https",
    "localhost",
    "json",
    "utf-8",
    "ok",
    "status",
    "stdout",
    "stderr",
    "exit",
    "code",
}
_OBSERVATION_SCAN_CHARS = 8000


def key_values(text: str) -> set[str]:
    """Distinctive tokens: contain a digit or punctuation inside, or are CamelCase/ALLCAPS words."""
    values = set()
    for whole in _TOKEN.findall(text[:_OBSERVATION_SCAN_CHARS]):
        # "host:8080/path" also yields "host", "8080" and "path": a later step may use any part.
        for token in {whole, *_PARTS.split(whole)}:
            lower = token.lower()
            if len(token) < 3 or lower in _GENERIC:
                continue
            if any(c.isdigit() or c in "_.:/@=-" for c in token) or _CAMEL.match(token):
                values.add(lower)
    return values


def _produced(step: StepView) -> set[str]:
    text = step.observation_raw or step.observation
    if step.kind in ("user_input", "llm_reasoning", "system", "state_change"):
        text = f"{text}\n{step.content}"
    return key_values(text)


def _consumed_text(step: StepView) -> str:
    return f"{as_text(step.arguments)}\n{step.content}".lower()


def _short_call(step: StepView, limit: int = 60) -> str:
    if not step.tool:
        text = " ".join(step.content.split())
        return f"{step.kind}: {text[:limit]}" if text else step.kind
    args = as_text(step.arguments)
    if args in ("", "{}", "[]", "null"):
        return step.tool
    return f"{step.tool} {args[:limit]}{'…' if len(args) > limit else ''}"


def _error_text(step: StepView) -> str:
    if step.error_type:
        return step.error_type
    first_line = (step.observation or step.observation_raw).strip().splitlines()
    return first_line[0][:120] if first_line else "error"


def label_steps(request: ReviewRequest) -> dict[int, StepJudgement]:
    steps, trace = request.steps, request.trace
    judged: dict[int, StepJudgement] = {}

    def judge(step: StepView, label: Label, reason: str, confidence: float) -> None:
        judged[step.index] = StepJudgement(
            index=step.index, label=label, reason=reason, confidence=confidence
        )

    for step in steps:  # rule 1
        if step.is_error:
            judge(step, "failed", f"the step failed: {_error_text(step)}", 0.95)

    first_success: dict[str, int] = {}  # rule 2
    for step in steps:
        if step.kind != "tool_call" or step.index in judged:
            continue
        key = call_key(step)
        if key in first_success:
            judge(
                step, "redundant", f"repeats step {first_success[key]} with the same arguments", 0.9
            )
        else:
            first_success[key] = step.index

    task_values = key_values(trace.task)  # rule 3
    answer = trace.final_answer.lower()
    consumers: list[tuple[int, str]] = []
    last_success_call = next(
        (s for s in reversed(steps) if s.kind == "tool_call" and s.index not in judged), None
    )

    def walk_back(*, last_call_counts: bool) -> None:
        for step in reversed(steps):
            if step.index in judged:
                continue
            produced = _produced(step) - task_values
            reason = None
            if answer and (used := sorted(v for v in produced if v in answer)):
                reason = f"its value '{used[0]}' appears in the final answer"
            else:
                for later_index, text in consumers:
                    if used := sorted(v for v in produced if v in text):
                        reason = f"its value '{used[0]}' is used by step {later_index}"
                        break
            confidence = 0.75
            if reason is None and last_call_counts and step is last_success_call:
                reason, confidence = "the last successful call: it produced the result", 0.6
            if reason is None and step.kind == "user_input" and step is _first_user_input(steps):
                reason, confidence = "states the request", 0.6
            if reason is not None:
                judge(step, "necessary", reason, confidence)
                consumers.append((step.index, _consumed_text(step)))

    succeeded = trace.outcome == "success"
    walk_back(last_call_counts=succeeded and not answer)
    if succeeded and not any(
        s.index in judged and judged[s.index].label == "necessary"
        for s in steps
        if s.kind == "tool_call"
    ):
        # A successful run had an effective call even when no value links it to the answer.
        walk_back(last_call_counts=True)

    for failure in (s for s in steps if judged.get(s.index) and judged[s.index].label == "failed"):
        if failure.kind != "tool_call":  # rule 4
            continue
        later = [s for s in steps if s.index > failure.index and s.kind == "tool_call"]
        tool_reused = any(s.tool == failure.tool and not s.is_error for s in later)
        moved_on = next((s for s in later if s.tool != failure.tool), None)
        if tool_reused or moved_on is None:
            continue
        for step in steps:
            if (
                step.index < failure.index
                and step.tool == failure.tool
                and step.index not in judged
            ):
                judge(
                    step,
                    "misleading",
                    f"led towards {failure.tool}, which failed at step {failure.index}; "
                    f"the agent switched to {moved_on.tool}",
                    0.6,
                )

    for step in steps:  # rule 5
        if step.index not in judged:
            judge(step, "redundant", "its result did not affect the conclusion", 0.5)
    return judged


def _first_user_input(steps: list[StepView]) -> StepView | None:
    return next((s for s in steps if s.kind == "user_input"), None)


def _goal(task: str) -> str:
    first = re.split(r"(?<=[.!?。！？])\s", task.strip(), maxsplit=1)[0]
    return first[:200]


def _when(request: ReviewRequest) -> str:
    goal = _goal(request.trace.task).rstrip(".!?。！？")
    env = request.trace.environment
    where = f" on {', '.join(env)}" if env else ""
    return f'When you handle a task like "{goal}"{where}'


def build_template(request: ReviewRequest, labels: dict[int, StepJudgement]) -> ReviewTemplate:
    """The review template, built from labels (machine or human-corrected)."""
    steps = request.steps
    by_label = {
        name: [s for s in steps if labels[s.index].label == name]
        for name in ("necessary", "redundant", "misleading", "failed")
    }
    necessary_calls = [s for s in by_label["necessary"] if s.tool]
    decisions = []
    for failure in by_label["failed"]:
        next_other = next(
            (s for s in steps if s.index > failure.index and s.tool and s.tool != failure.tool),
            None,
        )
        if next_other is not None:
            decisions.append(
                f"after {failure.tool or failure.kind} failed at step {failure.index} "
                f"({_error_text(failure)}), switched to {next_other.tool} "
                f"at step {next_other.index}"
            )
    improvements = []
    redundant_tools: dict[str, int] = {}
    for step in by_label["redundant"]:
        if step.tool:
            redundant_tools[step.tool] = redundant_tools.get(step.tool, 0) + 1
    for tool, count in redundant_tools.items():
        improvements.append(f"skip {tool}: {count} call(s) did not affect the result")
    for failure in by_label["failed"]:
        improvements.append(f"avoid {_short_call(failure)}: it failed ({_error_text(failure)})")
    for step in by_label["misleading"]:
        improvements.append(f"do not start with {_short_call(step)}: that path was abandoned")

    outcome = request.trace.outcome
    # A tool that never worked here is to be avoided; one that worked with other arguments is
    # not, only the failing call is (said in the improvements).
    worked = {s.tool for s in steps if s.tool and labels[s.index].label == "necessary"}
    avoid = sorted({s.tool for s in by_label["failed"] + by_label["misleading"] if s.tool} - worked)
    if outcome in ("success", "partial") and necessary_calls:
        tools_in_order = list(dict.fromkeys(s.tool for s in necessary_calls))[:5]
        sequence = "first use " + ", then ".join(tools_in_order)
        advice = f"{_when(request)}, {sequence}."
        if avoid:
            advice += f" Avoid {', '.join(avoid)}: it failed or led nowhere here."
        if redundant_tools:
            advice += f" Skip {', '.join(sorted(redundant_tools))}: it did not help."
        worth = True
    elif by_label["failed"] or by_label["misleading"]:
        failure = (by_label["failed"] or by_label["misleading"])[0]
        advice = (
            f"{_when(request)}, do not rely on {_short_call(failure)}: "
            f"it failed ({_error_text(failure)})."
        )
        switched = next(
            (s for s in necessary_calls if s.index > failure.index and s.tool != failure.tool), None
        )
        if switched is not None:
            advice += f" Instead, use {switched.tool}."
        if outcome == "failure":
            advice += " This attempt ended in failure."
        worth = True
    else:
        advice = f"{_when(request)}, no reusable strategy was found in this trajectory."
        worth = False

    return ReviewTemplate(
        goal=_goal(request.trace.task),
        execution_path=[_short_call(s) for s in by_label["necessary"]],
        effective_steps=[s.index for s in by_label["necessary"]],
        ineffective_steps=[s.index for s in steps if labels[s.index].label != "necessary"],
        key_decisions=decisions,
        improvements=improvements,
        experience=advice,
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
