"""What a family's successes and failures did differently: ExpeL's contrastive insights,
computed from the episodes' call patterns alone (no database, no LLM); the family's workflow is
family_induction.py.

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
failed runs)" was served to plain cancellations, where it said to change the flights).
"""

from collections import Counter

from experiences.services.family_induction import (
    MIN_SUCCESSES,
    Induced,
    Member,
    call_step,
    command_purpose,
    distinct_cases,
    pattern_of,
)

MIN_RUNS = 2
MIN_CONTRAST = 0.5
MAX_INSIGHTS = 3


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


def _insight_advice(
    key: str, feature: tuple[str, str, str], for_success: bool, counts: str, purpose: str = ""
) -> str:
    """The insight in the injection form; `purpose`: what the runs' requests asked of a command
    step (`command_purpose`), said in its condition."""
    kind, subject, text = feature
    text = text.replace(f"before {subject}", "before it")  # the condition names it already
    when = f"When you use {subject} to {purpose}" if purpose else f"When you use {subject}"
    if for_success:
        did = text.replace("called", "call", 1)
        return f"{when}: successful runs {did} ({counts})."
    if kind == "write-before":
        first = text.removeprefix("called ").rsplit(" before ", 1)[0]
        return f"{when}: do not call it after {first} ({counts} did)."
    if kind == "failed":
        return (
            f"{when}: check its arguments first: a {subject} call failed in failed runs ({counts})."
        )
    if kind == "failed-command":
        # Not "check its arguments": a test run or a build that fails says the work is not done.
        return f"{when}: in failed runs {text} failed ({counts}): do not go on while it fails."
    # Not "do not X unless the request asks for it": the family's requests often all ask for it
    # (to cancel), and the failures made the change where the rules did not allow it.
    arguments = text.removeprefix(f"called {subject}").strip()
    called = f"called it with {arguments}" if arguments else "called it"
    return (
        f"{when}: failed runs of this kind {called} more often ({counts} did); "
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

        runs = set(runs_of[key])
        feature = described[key]
        if feature[0] in ("call", "read"):  # show how the runs called it
            step = key.split(":", 1)[1]
            feature = (feature[0], subject, f"called {pattern_of(members, step)}")
        side = [m for m in members if m.succeeded == speaks_for_success and m.trace_id in runs]
        step = key.split(":", 1)[1].rsplit(">", 1)[-1]  # "before:a>b" is about b
        changes = kind in ("call", "before", "write-before")
        advice = _insight_advice(
            key, feature, speaks_for_success,
            f"{in_success[key]} of {n_s} successful runs, {in_failure[key]} of {n_f} failed runs",
            command_purpose(side, step, changes=changes),
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
