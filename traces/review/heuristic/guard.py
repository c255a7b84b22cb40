"""The same rules for an LLM's review: its wording is kept unless it breaks them.

An LLM's experience is replaced by the template's (built from the LLM's own labels, so it says
what those labels say) when it forbids a read-only call that did not fail, blames such a step,
or quotes the request (the scene is matched on, never pasted into the advice). Its replay and
blamed step are filled from the rules where it gave none.
"""

import re

from traces.review.heuristic.blame import errored
from traces.review.heuristic.template import build_template
from traces.review.types import ReviewRequest, ReviewTemplate

_FORBIDS = re.compile(
    r"\b(?:do not|don't|never|avoid)\s+(?:call(?:ing)?\s+|us(?:e|ing)\s+)?([\w.-]+)", re.I
)
_QUOTED_CHARS = 60  # this much of the request, verbatim, is a quote


def rule_breaks(template: ReviewTemplate, request: ReviewRequest) -> list[str]:
    """What in the LLM's lesson breaks the rules (empty: nothing)."""
    steps = {s.index: s for s in request.steps}
    failed_tools = {s.tool for s in request.steps if errored(s)}
    found = []
    for tool in _FORBIDS.findall(f"{template.experience} {template.pitfall}"):
        # By call: a shell tool's calls read or write by what they ran (`cat` reads), so a
        # tool of unknown effect whose every call here only read is a look-up too.
        calls = [s for s in request.steps if s.tool == tool]
        reads = bool(calls) and all(request.trace.call_effect(c).is_read_only for c in calls)
        if reads and tool not in failed_tools:
            found.append(f"forbids the read-only call {tool}")
    blamed = steps.get(template.blamed_step) if template.blamed_step is not None else None
    if blamed is not None and blamed.tool and request.trace.call_effect(blamed).is_read_only:
        if not errored(blamed):
            found.append(f"blames the read-only step {blamed.index}")
    task = " ".join(request.trace.task.split())
    if len(task) >= _QUOTED_CHARS and task[:_QUOTED_CHARS] in " ".join(template.experience.split()):
        found.append("quotes the request")
    return found


def lesson_checked(template: ReviewTemplate, request: ReviewRequest) -> ReviewTemplate:
    rules = build_template(request, {j.index: j for j in template.labels})
    update = {}
    if rule_breaks(template, request):
        update = {
            "experience": rules.experience,
            "pitfall": rules.pitfall,
            "strategy": rules.strategy,
            "blamed_step": rules.blamed_step,
        }
    if not template.replay:
        update["replay"] = rules.replay
    if template.blamed_step is None and "blamed_step" not in update:
        update["blamed_step"] = rules.blamed_step
    return template.model_copy(update=update) if update else template
