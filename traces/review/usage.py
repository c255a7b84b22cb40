"""How one run used each tool, for the project's tool profiles (traces.review.tool_effects
reads them as behaviour): calls, calls whose result fed a later step, whether it ended the run."""

from traces.review.heuristic.flow import Facts
from traces.review.scene import argument_summary
from traces.review.types import ReviewRequest, counts_as_success
from traces.review.values import consumed_text
from traces.services.tool_profiles import ToolUsage

_MAX_VALUES = 20  # of one result, looked for in what came after


def tool_usage(request: ReviewRequest) -> dict[str, ToolUsage]:
    facts = Facts.of(request)
    steps = request.steps
    consumed = [consumed_text(s).lower() for s in steps]
    calls = [s for s in steps if s.kind == "tool_call"]
    if not calls:
        return {}
    counts: dict[str, list[int]] = {}
    for position, step in enumerate(steps):
        if step.kind != "tool_call":
            continue
        values = sorted(facts.values[step.index], key=len, reverse=True)[:_MAX_VALUES]
        later = consumed[position + 1 :]
        fed = any(v in text for v in values for text in later)
        tally = counts.setdefault(step.tool, [0, 0])
        tally[0] += 1
        tally[1] += fed
    last = calls[-1]
    # A partial run's last call is what it achieved, as a success's is: ending such a run says
    # the tool may commit, so it must not be read as a look-up (tool_effects.behaviour_effect).
    succeeded = counts_as_success(request.trace.outcome)
    return {
        tool: ToolUsage(
            calls=calls_,
            fed=fed,
            final=tool == last.tool,
            final_success=tool == last.tool and succeeded,
            final_argument=argument_summary(last.arguments) if tool == last.tool else "",
        )
        for tool, (calls_, fed) in counts.items()
    }
