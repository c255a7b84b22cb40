"""What a family of runs teaches beyond any one of them (ExpeL's insights, Agent Workflow
Memory's workflows), computed from the episodes' call patterns alone (no database, no LLM).

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

**Insights** (failures, and successes of at least two cases): a run is described by what it did
— each tool it called, each tool it called before a state-changing one, each tool whose call
failed (for a command line, which command: "in failed runs bash \"python -m pytest …\" failed
(…): do not go on while it fails", not "check its arguments") — and a feature whose share among
the successes and among the failures differ by at least MIN_CONTRAST (and that at least MIN_RUNS
runs on the side it speaks for show) becomes an insight, with its counts: "When you use
update_reservation_flights: successful runs call get_reservation_details before it (5 of 6
successful runs, 1 of 4 failed runs)." An insight never tells the agent to avoid a read-only
call, nor to change something after looking it up: only failed calls, state-changing calls and
one change made after another can be what failures do more. A change the failures make more is a
check to make before it ("make this change only when the request asks for it and the rules allow
it"), not "do not": the family's requests often all asked for it. That the successes made a
state change is never an insight: a success joins the family of the changes it made
(families._signature), so every success makes the family's changes by construction, and the
failures without them are as often another task's failures joined by their request's nearness
(τ-bench: "successful runs call update_reservation_flights (4 of 4 successful runs, 3 of 15
failed runs)" was served to plain cancellations, where it said to change the flights)."""

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from statistics import mean

from traces.review.heuristic.placeholders import when_you_use

MIN_SUCCESSES = 2
MIN_RUNS = 2
MIN_CONTRAST = 0.5
MAX_INSIGHTS = 3
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


def _pattern_of(members: list[Member], step: str, key: Callable[[dict], str] = call_step) -> str:
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
    shown = {t: _pattern_of(successes, t, _way_step) for t in kept}
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
        after = [shown[t] for t in kept[kept.index(anchor) + 1 :]]
        advice = when_you_use(tools[anchor], before.strip(), shown[anchor], ", then ".join(after))
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


def _features(member: Member) -> dict[str, tuple[str, str, str]]:
    """key -> (kind, subject, text) of what the run did, by workflow step (`call_step`: a command
    line's command, "bash \"python -m pytest …\"", not "bash")."""
    found: dict[str, tuple[str, str, str]] = {}
    first_at: dict[str, int] = {}
    effect_of: dict[str, str] = {}
    names: dict[str, str] = {}  # how the text names a step: its tool, or the command it ran
    tools: dict[str, str] = {}
    for position, call in enumerate(member.calls):
        tool, step = call["tool"], call_step(call)
        effect_of.setdefault(step, call["effect"])
        first_at.setdefault(step, position)
        names.setdefault(step, tool if step == tool else call["pattern"])
        tools[step] = tool
        if call["errored"] and step != tool:
            # A command that failed (the tests, a build): which command, not "a bash call".
            found[f"failed:{step}"] = ("failed-command", tool, call["pattern"])
        elif call["errored"]:
            found[f"failed:{tool}"] = ("failed", tool, f"had a {tool} call fail")
        elif call["effect"] != "read":
            found[f"call:{step}"] = ("call", tool, f"called {names[step]}")
        else:
            found[f"read:{step}"] = ("read", tool, f"called {names[step]}")
    for first, at in first_at.items():
        for second, later in first_at.items():
            if first != second and at < later and effect_of.get(second) != "read":
                text = f"called {names[first]} before {names[second]}"
                kind = "before" if effect_of.get(first) == "read" else "write-before"
                found[f"before:{first}>{second}"] = (kind, tools[second], text)
    return found


def _insight_advice(key: str, feature: tuple[str, str, str], for_success: bool, counts: str) -> str:
    """The insight in the injection form."""
    kind, subject, text = feature
    text = text.replace(f"before {subject}", "before it")  # the condition names it already
    if for_success:
        did = text.replace("called", "call", 1)
        return f"When you use {subject}: successful runs {did} ({counts})."
    if kind == "write-before":
        first = text.removeprefix("called ").rsplit(" before ", 1)[0]
        return f"When you use {subject}: do not call it after {first} ({counts} did)."
    if kind == "failed":
        return (
            f"When you use {subject}: check its arguments first: a {subject} call failed in "
            f"failed runs ({counts})."
        )
    if kind == "failed-command":
        # Not "check its arguments": a test run or a build that fails says the work is not done.
        return (
            f"When you use {subject}: in failed runs {text} failed ({counts}): do not go on "
            "while it fails."
        )
    # Not "do not X unless the request asks for it": the family's requests often all ask for it
    # (to cancel), and the failures made the change where the rules did not allow it.
    arguments = text.removeprefix(f"called {subject}").strip()
    called = f"called it with {arguments}" if arguments else "called it"
    return (
        f"When you use {subject}: failed runs of this kind {called} more often ({counts} did); "
        f"make this change only when the request asks for it and the rules allow it: check both "
        f"before you {subject}."
    )


def insights(members: list[Member]) -> list[Induced]:
    """The family's contrasts (see the module docstring), strongest first."""
    successes = [m for m in members if m.succeeded]
    failures = [m for m in members if not m.succeeded]
    if not successes or not failures or len(members) < 3:
        return []
    if distinct_cases(successes) < MIN_SUCCESSES:
        return []  # what one case's successes did differently is that case, not the family's
    in_success: Counter[str] = Counter()
    in_failure: Counter[str] = Counter()
    described: dict[str, tuple[str, str, str]] = {}
    runs_of: dict[str, list[int]] = {}
    for member in members:
        features = _features(member)
        described.update(features)
        for key in features:
            (in_success if member.succeeded else in_failure)[key] += 1
            runs_of.setdefault(key, []).append(member.trace_id)
    found = []
    n_s, n_f = len(successes), len(failures)
    for key, (kind, subject, _text) in described.items():
        share_s, share_f = in_success[key] / n_s, in_failure[key] / n_f
        contrast = share_s - share_f
        if abs(contrast) < MIN_CONTRAST:
            continue
        speaks_for_success = contrast > 0
        if (in_success[key] if speaks_for_success else in_failure[key]) < MIN_RUNS:
            continue
        if not speaks_for_success and kind in ("read", "before"):
            continue  # never "avoid looking it up", nor "do not change it after looking up"
        if speaks_for_success and kind in ("failed", "failed-command"):
            continue  # successes that had a call fail and went on: a failure is no way to do it
        if speaks_for_success and kind == "call":
            continue  # the family's own changes, or a hand-off (an exit): the module docstring

        feature = described[key]
        if feature[0] in ("call", "read"):  # show how the runs called it
            step = key.split(":", 1)[1]
            feature = (feature[0], subject, f"called {_pattern_of(members, step)}")
        advice = _insight_advice(
            key, feature, speaks_for_success,
            f"{in_success[key]} of {n_s} successful runs, {in_failure[key]} of {n_f} failed runs",
        )  # fmt: skip
        found.append(
            (
                abs(contrast),
                in_success[key] + in_failure[key],
                Induced(
                    key=f"insight:{key}",
                    kind="insight",
                    polarity="success" if speaks_for_success else "failure",
                    advice=advice,
                    support=len(runs_of[key]),
                    successes=in_success[key],
                    failures=in_failure[key],
                    trace_ids=sorted(runs_of[key]),
                    tools=[subject],
                ),
            )
        )
    found.sort(key=lambda f: (f[0], f[1]), reverse=True)
    return [induced for *_, induced in found[:MAX_INSIGHTS]]
