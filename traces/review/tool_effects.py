"""Whether a tool only reads or changes something: what a lesson may forbid rests on it.

A lesson must never tell an agent to stop looking things up, so every tool is classed
`read_only` True (it observes: a look-up, a search, a calculation), False (it changes state or
commits: a booking, a cancellation, a submitted answer) or None (not known). The first source
that says, in this order:

1. **declared** — the tool's declaration says it: MCP `annotations.readOnlyHint` /
   `destructiveHint`, or `read_only` in the native API's `tools` list;
2. **described** — the declaration's description opens with a verb of reading ("Get the details
   of a reservation", "Search direct flights") or of changing ("Book a reservation", "Cancel
   the whole reservation"): OpenAI and Anthropic tool schemas sent with a transcript carry one;
3. **behaviour** — across the project's reviewed runs (ToolProfile, at least
   BEHAVIOUR_MIN_CALLS calls in BEHAVIOUR_MIN_RUNS runs): a tool whose results fed a later step
   in at least half of its calls and that never ended a successful run reads; one that ended at
   least half the runs it was in commits (unless its name says it reads: a look-up often ends a
   run) — and when COMMIT_SHARE of those runs ended on the same
   arguments (`click "Buy Now"`), it commits with those only: its other calls navigate (read);
4. **name** — the verb of the tool's name (`get_user_details`, `Search`, `kubectl_logs` read;
   `book_reservation`, `docker_restart`, `Finish` change or commit), as a last resort.

One **call** that runs a command line (`bash`, a terminal, `str_replace_editor`'s `view`) or a
SQL statement is judged by what it ran, unless the tool is declared read-only
(traces.review.command_effects, `ToolEffect.of_command`): `cat` and `SELECT` read where `sed
-i` and `UPDATE … SET` write.

A **hand-off** (`hands_off`) passes the case to a person — `transfer_to_human_agents`,
`escalate_to_support`, a description opening "Transfer the user to a human agent": its name or
description opens with a verb of passing on and names a person. It changes state (it ends the
case) but it is an exit, not a way to do a task: a success that made changes before it is taught
by its changes (the template), a family's workflow never has it as a step, and a success's
hand-off never makes its family. A success whose only change was the hand-off keeps it as its
condition ("When you use transfer_to_human_agents, first …": what to do if you hand over).

Apart from that, behaviour says whether a tool is made in nearly **every run** (`every_run`: in
COMMIT_SHARE of the runs of the project's most used tool): an answer, a purchase. A failed run
that ended on such a commit is taught as "check it before you commit" (the next task needs the
commit too); one that ended on a write most runs never make (a hand-off, a cancellation) as "do
not": making it at all was the mistake.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Basis = Literal["declared", "described", "behaviour", "name", "command", "unknown"]

BEHAVIOUR_MIN_CALLS = 8
BEHAVIOUR_MIN_RUNS = 3
COMMIT_SHARE = 0.8

# Verbs (and verb-like nouns of tool names) that only observe.
READ_VERBS = frozenset(
    "get list search find lookup look read fetch query show describe view check calculate "
    "compute count think inspect browse retrieve see watch status logs log stat stats diff "
    "explain validate verify preview estimate compare summarize summarise grep cat ls head tail "
    "top ps info details detail which where whoami open scan peek test ping lint".split()
)
# Verbs that change state, or commit an answer / a purchase.
WRITE_VERBS = frozenset(
    "create add insert update modify change edit replace set delete remove cancel book send post "
    "put patch transfer exchange return refund submit buy purchase pay order write save upload "
    "deploy restart reboot kill stop start apply commit push merge install "
    "uninstall move rename reset grant revoke schedule finish answer respond reply publish "
    "approve reject assign close archive enable disable scale rollback drop truncate copy "
    "compress unpack link".split()
)
_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])")
# A hand-off: one of these verbs first, and a person named (in the name or its description).
HAND_OFF_VERBS = frozenset("transfer escalate handoff handover hand forward route".split())
PERSON_WORDS = frozenset(
    "human humans person people agent agents operator operators staff support representative "
    "representatives supervisor manager specialist".split()
)


@dataclass(frozen=True)
class ToolEffect:
    tool: str
    read_only: bool | None
    basis: Basis
    evidence: str  # in words, shown where a lesson's blame is explained
    # Behaviour: the arguments (summarised) of the calls that end runs, when nearly all do the
    # same; calls with other arguments only navigate (`of_call`).
    commit_arguments: str | None = None
    # Made in nearly every run of the project (an answer, a purchase); None: too few runs to say.
    every_run: bool | None = None
    hands_off: bool = False  # it passes the case to a person (see the module docstring)

    def of_call(self, arguments: str) -> "ToolEffect":
        """The effect of one call of the tool, given its summarised arguments."""
        if self.commit_arguments is None or arguments == self.commit_arguments:
            return self
        evidence = (
            f"its runs end on {self.tool} {self.commit_arguments}; its other calls only navigate"
        )
        return ToolEffect(self.tool, True, "behaviour", evidence)

    def of_command(self, verdict: bool | None, said: str) -> "ToolEffect":
        """The effect of one call by what it ran (its command line or SQL statement,
        traces.review.command_effects.call_verdict), when that is known and the tool is not
        declared read-only."""
        if verdict is None or (self.basis == "declared" and self.read_only is True):
            return self
        evidence = f"what it ran ({said}) {'only reads' if verdict else 'changes state'}"
        return replace(self, read_only=verdict, basis="command", evidence=evidence)

    @property
    def is_read_only(self) -> bool:
        return self.read_only is True

    @property
    def changes_state(self) -> bool:
        return self.read_only is False


@dataclass(frozen=True)
class Declaration:
    """What the agent declared about one tool (any of these may be absent)."""

    name: str
    description: str = ""
    read_only: bool | None = None


@dataclass(frozen=True)
class Behaviour:
    """What the project's reviewed runs showed of one tool (traces.models.ToolProfile)."""

    calls: int
    fed_calls: int  # calls whose result fed a later step
    runs: int
    final_in_runs: int  # runs it ended (it was the last call)
    final_in_successes: int  # successful runs it ended
    final_arguments: Mapping[str, int] = field(default_factory=dict)  # of the ending calls
    # The runs of the project's most used tool: a floor of its reviewed runs with a call.
    project_runs: int = 0

    def in_every_run(self) -> bool | None:
        """Whether the tool is made in nearly every run (COMMIT_SHARE of project_runs)."""
        if self.project_runs < BEHAVIOUR_MIN_RUNS:
            return None
        return self.runs >= COMMIT_SHARE * self.project_runs

    def commit_arguments(self) -> str | None:
        """The arguments nearly every ending call had (COMMIT_SHARE), if any."""
        if not self.final_arguments or not self.final_in_runs:
            return None
        arguments, count = max(self.final_arguments.items(), key=lambda item: item[1])
        return arguments if count >= COMMIT_SHARE * self.final_in_runs else None


def verb_effect(text: str) -> bool | None:
    """True / False by the first verb of a name or description that is one of the lists
    (words split at _, -, spaces and camelCase); None when none is."""
    words = [w.lower() for w in _WORD.findall(text)][:4]
    for word in words:
        if word in READ_VERBS:
            return True
        if word in WRITE_VERBS:
            return False
    return None


def change_verbs(text: str) -> list[str]:
    """The verbs of changing a request uses, in its order, each as in WRITE_VERBS ("Removes
    all …" → "remove"; "copies" → "copy")."""
    found = []
    for word in re.findall(r"[a-z]+", text.lower()):
        plural = word[:-3] + "y" if word.endswith("ies") else word
        for stem in (word, word.removesuffix("s"), word.removesuffix("es"), plural):
            if stem in WRITE_VERBS and stem not in found and stem not in _NOT_ASKED:
                found.append(stem)
                break
    return found


# Write verbs that a request uses as other words ("the answer", "the order of", "a set of").
_NOT_ASKED = frozenset("answer order set return start stop post finish close reply".split())


def hands_off(tool: str, description: str = "") -> bool:
    """Whether a tool passes the case to a person (the module docstring): its name, else its
    description, opens with a verb of passing on, and one of them names a person."""
    named = [w.lower() for w in _WORD.findall(tool)]
    said = [w.lower() for w in _WORD.findall(description)][:20]
    opens = bool(named[:1]) and named[0] in HAND_OFF_VERBS
    opens = opens or (bool(said[:1]) and said[0] in HAND_OFF_VERBS)
    return opens and bool(PERSON_WORDS & (set(named) | set(said)))


def behaviour_effect(behaviour: Behaviour) -> bool | None:
    if behaviour.calls < BEHAVIOUR_MIN_CALLS or behaviour.runs < BEHAVIOUR_MIN_RUNS:
        return None
    if behaviour.final_in_runs * 2 >= behaviour.runs:
        return False
    if behaviour.fed_calls * 2 >= behaviour.calls and behaviour.final_in_successes == 0:
        return True
    return None


def tool_effect(
    tool: str, declaration: Declaration | None = None, behaviour: Behaviour | None = None
) -> ToolEffect:
    effect = _read_or_write(tool, declaration, behaviour)
    if effect.read_only is not True and hands_off(
        tool, declaration.description if declaration else ""
    ):
        if effect.read_only is None:  # "escalate_to_support": passing the case on acts
            effect = replace(
                effect, read_only=False, basis="name", evidence="it hands the case to a person"
            )
        effect = replace(effect, hands_off=True)
    if behaviour is None:
        return effect
    return replace(effect, every_run=behaviour.in_every_run())


def _read_or_write(
    tool: str, declaration: Declaration | None, behaviour: Behaviour | None
) -> ToolEffect:
    if declaration is not None and declaration.read_only is not None:
        said = "read-only" if declaration.read_only else "changes state"
        return ToolEffect(tool, declaration.read_only, "declared", f"declared {said}")
    if declaration is not None and declaration.description:
        described = verb_effect(declaration.description)
        if described is not None:
            opening = " ".join(declaration.description.split()[:6])
            said = "reads" if described else "changes state"
            return ToolEffect(tool, described, "described", f'its description "{opening}" {said}')
    if behaviour is not None:
        behaved = behaviour_effect(behaviour)
        if behaved is True:
            evidence = (
                f"its result fed a later step in {behaviour.fed_calls} of {behaviour.calls} calls "
                "and it never ended a successful run"
            )
            return ToolEffect(tool, True, "behaviour", evidence)
        if behaved is False and verb_effect(tool) is not True:
            # A look-up often ends a run (the answer was in what it read): ending runs says
            # "commits" only for a tool whose name does not say it reads.
            evidence = f"it ended {behaviour.final_in_runs} of the {behaviour.runs} runs it was in"
            commit = behaviour.commit_arguments()
            if commit:
                evidence += f", on {tool} {commit}"
            return ToolEffect(tool, False, "behaviour", evidence, commit_arguments=commit)
    named = verb_effect(tool)
    if named is not None:
        said = "a verb that reads" if named else "a verb that changes state"
        return ToolEffect(tool, named, "name", f"its name starts with {said}")
    return ToolEffect(tool, None, "unknown", "nothing says whether it changes state")


def declarations_from(tools: Any) -> dict[str, Declaration]:
    """Declarations from what an agent sends: the native `tools` list (`name`, `description`,
    `read_only`), OpenAI tool schemas (`{"type": "function", "function": {...}}` or the
    Responses API's flat form), Anthropic's (`name`, `description`, `input_schema`) and MCP's
    (`annotations.readOnlyHint` / `destructiveHint`)."""
    found: dict[str, Declaration] = {}
    for item in tools if isinstance(tools, list) else []:
        if not isinstance(item, Mapping):
            continue
        nested = item.get("function")
        body: Mapping[str, Any] = nested if isinstance(nested, Mapping) else item
        name = body.get("name")
        if not isinstance(name, str) or not name:
            continue
        description = body.get("description")
        read_only = item.get("read_only", body.get("read_only"))
        annotations = item.get("annotations") or body.get("annotations") or {}
        if read_only is None and isinstance(annotations, Mapping):
            if isinstance(annotations.get("readOnlyHint"), bool):
                read_only = annotations["readOnlyHint"]
            elif annotations.get("destructiveHint") is True:
                read_only = False
        found[name[:200]] = Declaration(
            name=name[:200],
            description=description[:500] if isinstance(description, str) else "",
            read_only=read_only if isinstance(read_only, bool) else None,
        )
    return found
