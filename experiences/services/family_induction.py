"""What a family of runs teaches beyond any one of them (Agent Workflow Memory's workflows;
ExpeL's insights are family_insights.py), computed from the episodes' call patterns alone (no
database, no LLM).

**Workflow** (successful runs of at least MIN_SUCCESSES cases): the tools that at least half of
the successful runs called among their necessary calls, in the order they called them (the mean
of each tool's relative position), each shown by the way the runs called it most often (its
placeholders, see traces.review.heuristic.placeholders), anchored on the last state-changing
one: "When you use X, first A, then B; call it with <…>". A tool that runs command lines is a
step per command (`bash "cat <path from the request>"`, `bash "python -m pytest …"`): keyed by
the tool alone, a coding agent's workflow was one `bash` step for its reads and test runs. A
look-up that fewer than half but at least OPTIONAL_SHARE (and MIN_OPTIONAL_RUNS) of the
successes made is named with its count ("(in 6 of 14 runs also C)"): left out, the workflow
would read as "do without it", and the case that needed it (a membership that sets the
allowance) would be answered wrong. A family whose successes only read (answers, refusals) is
told so, on its condition: "When the request needs no change: first A, then B, then answer; the
5 successful runs of this kind changed nothing". A hand-off to a person (effect `hand_off`,
traces.review.tool_effects) is never a workflow's step nor what an insight recommends: it is how
those runs ended, said with its count ("(3 of them handed the case to a human agent)").

**One order.** The successes that made two of the workflow's changes made them in one order
(ORDER_AGREEMENT of them), or there is no workflow: cases that change the same things in opposite
orders are no common way, whatever the mean positions say.

**Across cases only.** Runs of one case (the same user's request, run again: `distinct_cases`)
teach that case, and its own episodes replay it to it. Their common calls are no family's way: a
τ-bench family whose successes were all one user's "cancel two bookings (one refused), then
upgrade a third" taught "When you use update_reservation_flights, first …, then
cancel_reservation …", served first to plain cancellations; and its insights only told that
case's calls from the failures of other cases joined to the family.

The family's contrastive insights are family_insights.py."""

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from statistics import mean

from traces.review.heuristic.placeholders import when_you_use
from traces.review.request_goal import purpose, shared_purpose

MIN_SUCCESSES = 2
MAX_WORKFLOW_CALLS = 5
OPTIONAL_SHARE = 0.25  # of the successes: a look-up this common is named as optional,
MIN_OPTIONAL_RUNS = 3  # and made by at least this many of them
MAX_OPTIONAL_CALLS = 2
ORDER_AGREEMENT = 0.75  # of the successes making two of the workflow's changes, in one order
HAND_OFF = "hand_off"  # a call's effect when it passes the case to a person


@dataclass(frozen=True)
class Member:
    """One run of the family as its episode recorded it."""

    trace_id: int
    succeeded: bool
    calls: list[dict]  # [{"tool", "pattern", "effect", "errored", "necessary"}]
    # What names its case (the ids its request named, else the request itself; families
    # ._members): runs whose cases share one are one case. Empty: a case of its own.
    case: frozenset[str] = frozenset()
    request: str = ""  # what its run was asked (the purpose of its command lines)


def distinct_cases(members: list[Member]) -> int:
    """How many cases the runs are: runs naming a common id (or asking the same request) are one.
    Five runs of one user's request are one case, and what they share teaches that case only."""
    groups: list[set[str]] = []
    alone = 0
    for member in members:
        if not member.case:
            alone += 1
            continue
        joined = set(member.case)
        for group in [g for g in groups if g & joined]:
            joined |= group
            groups.remove(group)
        groups.append(joined)
    return len(groups) + alone


@dataclass(frozen=True)
class Induced:
    key: str  # what identifies it among the family's items (kept across inductions)
    kind: str  # "workflow" | "insight"
    polarity: str  # "success" | "failure"
    advice: str
    support: int  # runs it rests on
    successes: int
    failures: int
    trace_ids: list[int]  # its provenance
    tools: list[str]


# A call whose first argument is a command line ('bash "cat <path from the request>"'): its
# command ("cat") is the step, not the tool, which runs every command of the run.
_COMMAND = re.compile(r'^[\w.-]+ "([a-z][\w.-]*) ')


def call_step(call: dict) -> str:
    """What a call is a step of a workflow as: its tool, or for a command line its tool and
    command ("bash cat", "bash python"): keyed by the tool alone, a coding agent's workflow
    was one step, "bash "ls src"", for all of its reads, edits' checks and test runs."""
    command = _COMMAND.match(call["pattern"])
    return f"{call['tool']} {command.group(1)}" if command else call["tool"]


def _way_step(call: dict) -> str:
    """What a call is a step of a workflow as (`call_step`); the calls of a tool that navigates and
    commits (`click`: its runs end on `click "Buy Now"`, tool_effects.ToolEffect.of_call) are
    two steps, the clicks on the way and the commit: as one step the workflow was "first search
    <…>; call it with <target from search>", or with "Buy Now" and no product chosen."""
    return f"{call_step(call)} (change)" if call["effect"] == "write" else call_step(call)


# A step whose runs each ran their own command line: its command alone (`bash "find …"`).
_COMMAND_ALONE = re.compile(r'^[\w.-]+ "[a-z][\w.-]* …"$')


def pattern_of(members: list[Member], step: str, key: Callable[[dict], str] = call_step) -> str:
    """How the family's runs make a step (by `key`), most often (its placeholders). A command
    line that fewer than half of the runs making the step ran is one case's: the step reads as
    its command alone (`bash "find …"`): a shell agent's family of look-ups was taught one run's
    `find … -name "*.java" -exec md5sum …` for every request of it."""
    patterns: Counter[str] = Counter()  # by call
    runs: list[set[str]] = []  # each run's patterns of the step
    for member in members:
        made = [c["pattern"] for c in member.calls if key(c) == step and not c["errored"]]
        patterns.update(made)
        if made:
            runs.append(set(made))
    if not patterns:
        return step
    pattern = patterns.most_common(1)[0][0]
    command = _COMMAND.match(pattern)
    if command and 2 * sum(pattern in m for m in runs) < len(runs):
        return f'{pattern.split(" ", 1)[0]} "{command.group(1)} …"'
    return pattern


def workflow(members: list[Member]) -> Induced | None:
    successes = [m for m in members if m.succeeded and m.calls]
    if len(successes) < MIN_SUCCESSES or distinct_cases(successes) < MIN_SUCCESSES:
        return None
    positions: dict[str, list[float]] = {}
    effects: dict[str, str] = {}
    holders: dict[str, set[int]] = {}
    tools: dict[str, str] = {}  # each step's tool
    orders: list[list[str]] = []  # each success's steps, in the order it first made them
    for member in successes:
        # Its necessary calls, and every change it made: a success's writes are what its family
        # is (families._signature), whatever label a later relabel gave one of them.
        made = [
            c
            for c in member.calls
            if not c["errored"] and (c["necessary"] or c["effect"] == "write")
        ] or [c for c in member.calls if not c["errored"]]
        seen: list[str] = []
        for call in made:
            step = _way_step(call)
            if step not in seen:
                seen.append(step)
                effects[step] = call["effect"]
                tools[step] = call["tool"]
        orders.append(seen)
        for rank, tool in enumerate(seen):
            positions.setdefault(tool, []).append(rank / max(len(seen) - 1, 1))
            holders.setdefault(tool, set()).add(member.trace_id)
    needed = max(MIN_SUCCESSES, (len(successes) + 1) // 2)
    # A hand-off is how a run ended, not a step of the way (tool_effects: hands_off).
    kept = [t for t, runs in holders.items() if len(runs) >= needed and effects[t] != HAND_OFF]
    if not kept:
        return None
    kept.sort(key=lambda t: (mean(positions[t]), -len(holders[t])))
    kept = kept[:MAX_WORKFLOW_CALLS]
    writes = [t for t in kept if effects[t] == "write"]
    if not _changes_agree_in_order(writes, orders):
        return None
    anchor = writes[-1] if writes else kept[-1]
    shown = {t: pattern_of(successes, t, _way_step) for t in kept}
    if all(_COMMAND_ALONE.match(shown[t]) for t in kept):
        # Each run ran its own command lines: "When you use bash: call it with "rm …"" names
        # the family, not a way, and pushed `rm` on requests near its centroid.
        return None
    optional = _optional_lookups(holders, effects, kept, successes, needed)
    handed = sum(
        any(c["effect"] == HAND_OFF and not c["errored"] for c in m.calls) for m in successes
    )
    if not any(c["effect"] == "write" for m in successes for c in m.calls):
        # No success made a state-changing call (an answer, a refusal: the family of reads only,
        # families._signature): that nothing was changed is the strategy, and a request that
        # needs no change is where it applies. The condition is said, not assumed: matched to a
        # request that does need a change, "runs of this kind changed nothing" read as "change
        # nothing".
        advice = (
            f"When the request needs no change: first {', then '.join(shown[t] for t in kept)}"
            f"{optional}, then answer; the {len(successes)} successful runs of this kind changed "
            "nothing"
        )
        if handed:
            advice += f" ({handed} of them handed the case to a human agent)"
    else:
        before = ", then ".join(shown[t] for t in kept[: kept.index(anchor)]) + optional
        after = ", then ".join(shown[t] for t in kept[kept.index(anchor) + 1 :])
        asked = command_purpose(successes, anchor, changes=effects[anchor] == "write")
        advice = when_you_use(tools[anchor], before.strip(), shown[anchor], after, purpose=asked)
    resting = sorted({t for tool in kept for t in holders[tool]})
    return Induced(
        key="workflow",
        kind="workflow",
        polarity="success",
        advice=advice + ".",
        support=len(successes),
        successes=len(successes),
        failures=0,
        trace_ids=resting,
        tools=sorted({tools[step] for step in kept}),
    )


def command_purpose(members: list[Member], step: str, *, changes: bool) -> str:
    """For a step that runs a command line (`bash rm`), what most of `members`' requests asked
    it to do (`request_goal.shared_purpose`): "When you use bash: call it with "rm -rf …"" was
    served to requests that asked no removal. "" for any other step, or when they asked each
    their own (a coding agent's issues: its test-run workflow stays unconditioned)."""
    if " " not in step.removesuffix(" (change)"):
        return ""  # a tool, not a command of it (call_step, _way_step)
    asked = [purpose(m.request, changes_state=changes) for m in members if m.request]
    return shared_purpose(asked) if asked else ""


def _changes_agree_in_order(writes: list[str], orders: list[list[str]]) -> bool:
    """Whether the successes that made two of the workflow's changes made them in one order, as
    most (ORDER_AGREEMENT) of them did. A family whose cases change the same things in opposite
    orders (one upgrades a booking then cancels it, another cancels one then changes another)
    has no common way: the mean positions would teach an order one of its cases contradicts."""
    for i, first in enumerate(writes):
        for second in writes[i + 1 :]:
            both = [o for o in orders if first in o and second in o]
            ahead = sum(o.index(first) < o.index(second) for o in both)
            if both and max(ahead, len(both) - ahead) < ORDER_AGREEMENT * len(both):
                return False
    return True


def _optional_lookups(
    holders: dict[str, set[int]],
    effects: dict[str, str],
    kept: list[str],
    successes: list[Member],
    needed: int,
) -> str:
    """ " (in 6 of 14 runs also C)" for the look-ups too few successes made to be in the workflow
    but too many to leave out (see the module docstring); "" when there are none."""
    floor = max(MIN_OPTIONAL_RUNS, round(OPTIONAL_SHARE * len(successes)))
    common = sorted(
        (
            (len(runs), tool)
            for tool, runs in holders.items()
            if tool not in kept and effects[tool] == "read" and floor <= len(runs) < needed
        ),
        reverse=True,
    )[:MAX_OPTIONAL_CALLS]
    # By name only: the line is read beside the workflow's calls, and a look-up's arguments are
    # in its declaration.
    said = "; ".join(f"in {count} of {len(successes)} runs also {tool}" for count, tool in common)
    return f" ({said})" if said else ""
