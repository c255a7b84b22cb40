"""What recall hands an agent: each item marked as the very same case or not, and the prompt
block in the seeds' injection form (per tool, "When you use X: …"), the family's workflow first,
each line with its kind, polarity and support, short enough to sit before the user's input.

**What is served.** The k best-scored items, except that the asked family's workflow takes the
last place when it did not make the k (a task never seen before is what a family's workflow is
for). The asked family is the one whose items hold the most score among the k best: a vote of
the nearest runs, which tells a request's kind of task better than the families' centroids do
(a family whose requests are varied, "transfer me to a human", has a centroid near everything).
Another family's workflow keeps its place by score: put first, it would teach the calls of
another kind of task. **Order**: the same case first (its replay is the most specific memory
there is; by score among its runs, which tells two requests of one user apart better than
their outcome), then the asked family's workflow, then the rest by score. When the same case
is served, the near items are of several families and none of the case's successful runs is
of the asked one, the workflow keeps its place by score: the case's own runs say more than one
family's calls among several (hand-judged on τ-bench, workflows put right after such a case
helped 9 times and misled 13; on HotpotQA, where every run is of one family, the workflow after
the same case was judged helpful all 83 times).

**When the vote is split.** The asked family's workflow goes first only when that family holds
at least HINDSIGHT_RECALL_FAMILY_CLEAR_SHARE (0.6) of the score the k best items' families hold:
a request that does not say what it wants ("I'd like to make some changes to my reservation")
has near runs of several families, and the first line would teach one of them as if it were
known. Then the items keep their score order, and the block says, after its header, which
changes the successful runs of those families made ("Successful runs of requests like this made
different changes: update_reservation_flights (7 runs), no change (10 runs); find out which this
one needs before you change anything"): the decision the agent has to make is named instead of
made for it.

**What is never served to another case.** An episode that teaches no way to do another case
(`Experience.same_case_only`, distill_drafts.teaches_its_case_only: a success whose only change
handed the case to a person, a failure whose lesson is its own final answer or a look-up that
found nothing on its values) is served as the replay of its own case and to no other query.
Judged where they had been served to other cases, such items were neutral or misleading nearly
always (the hand-off recipe "When you use transfer_to_human_agents, first …" misled where the
task needed a change); the family's workflow says how many runs of the kind handed over.

**The same case.** An item is the same case as the query when the query names one of the
identifiers of the item's request (a user id, an order number: tokens with letters and digits,
or underscored names; never a bare number or price; a code in capitals, "HXDUBJ", when the
item's run called a tool with it) and asks a like thing (similarity at least
HINDSIGHT_RECALL_SAME_CASE_NAMED_SIMILARITY: the same user asking about baggage after a
cancellation is a new case), or asks nearly the same thing (similarity at least
HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY) naming no ids but the query's. Then the exact
replay of that run, identifiers included, is served in place of the general advice; any other
item gives only the strategy. A failed run of the same case served beside the case's successful
run is led by what that run did otherwise (`contrasted`): the changes it also made, the changes
it did not make (hand-judged on τ-bench, 5 of 6 such replays went from neutral to helpful; the
sixth was a success of the same user's near-identical request with another gold).
"""

import json
import re
from collections import Counter
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import connections, router
from django.db.models import Sum

from experiences.models import Experience
from traces.review.scene import cut_at_word
from traces.review.values import case_identifiers

BLOCK_CHARS = 1000  # the whole block, header included
LINE_CHARS = 420  # one item at most: a same case's replay, whole or nearly
LINE_MIN_CHARS = 100  # less room than this left: the block ends (a stub would say nothing)
SOURCES_SHOWN = 5  # source runs named per item
_HEADER = "Experience from earlier runs (hindsight); check it fits this task:"


@dataclass(frozen=True)
class Case:
    """What only the returned items need: their replay and whether they are the same case."""

    same_instance: bool = False
    replay: str = ""
    sources: tuple[str, ...] = ()  # external ids of the runs it came from (the first few)
    # The changes its run made, as its replay shows them (None: recorded before they were kept).
    changes: tuple[str, ...] | None = None


def _changes(calls) -> tuple[str, ...] | None:
    """The changes a run made that worked, each once (distill_drafts.run_calls keeps each
    write's literal); None when a write has no literal (reviewed before they were kept)."""
    if isinstance(calls, str):  # Django's psycopg setup leaves jsonb undecoded
        calls = json.loads(calls)
    writes = [c for c in calls or () if c.get("effect") == "write"]
    if any("literal" not in c for c in writes):
        return None
    return tuple(dict.fromkeys(c["literal"] for c in writes if not c.get("errored")))


_CODE = re.compile(r"\b(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,10}\b")


def _codes(text: str) -> set[str]:
    """Upper-case codes ("HXDUBJ", a booking reference with no digit): an id of the query as
    written; of an earlier run, only where its replay shows a call made with it (a word written in
    capitals, "PLEASE", is passed to no tool)."""
    return {code.lower() for code in _CODE.findall(text)}


def _case_ids(request: str, replay: str) -> set[str]:
    """The ids an earlier run's request named: case_identifiers, and the codes its calls used."""
    return case_identifiers(request) | {c for c in _codes(request) if c.upper() in replay}


def same_case_of(items, query_task: str, known: dict[int, Case] | None = None) -> dict[int, Case]:
    """Each item's Case (one query for the k returned items' request and replay; the `known`
    ones are not read again)."""
    known = known or {}
    ids = [item.experience.id for item in items if item.experience.id not in known]
    if not ids:
        return {item.experience.id: known[item.experience.id] for item in items}
    with connections[router.db_for_read(Experience, replica=True)].cursor() as cursor:
        # Each item's request, replay and writes (not its every call: recall's hot path), and
        # the external ids of its first source runs.
        cursor.execute(
            "SELECT e.id, e.request, e.summary, e.replay, "
            """jsonb_path_query_array(e.calls, '$[*] ? (@.effect == "write")'), """
            "ARRAY(SELECT t.external_id FROM "
            "experiences_experiencesource s JOIN traces_trace t ON t.id = s.trace_id WHERE "
            "s.experience_id = e.id ORDER BY s.id LIMIT %s) FROM experiences_experience e "
            "WHERE e.id = ANY(%s)",
            [SOURCES_SHOWN, ids],
        )
        rows = {row[0]: row[1:] for row in cursor.fetchall()}
    asked = case_identifiers(query_task) | _codes(query_task)
    cases = {}
    for item in items:
        if item.experience.id in known:
            cases[item.experience.id] = known[item.experience.id]
            continue
        request, summary, replay, calls, sources = rows.get(
            item.experience.id, ("", "", "", [], [])
        )
        similarity = item.score_parts.get("similarity", 0.0)
        same = (
            bool(replay)
            and item.experience.kind == "episode"
            and is_same_case(asked, _case_ids(request or summary, replay), similarity)
        )
        cases[item.experience.id] = Case(
            same_instance=same,
            replay=replay if same else "",
            sources=tuple(sources),
            changes=_changes(calls) if same else None,
        )
    return cases


CHANGES_NAMED = 3  # changes named in a failed run's contrast with its case's successful run


def _named(changes: list[str]) -> str:
    more = len(changes) - CHANGES_NAMED
    return " and ".join(changes[:CHANGES_NAMED]) + (f" ({more} more)" if more > 0 else "")


def contrasted(items, cases: dict[int, Case]) -> dict[int, Case]:
    """Each served failed run of the query's own case, its replay led by what its case's served
    successful run did otherwise: the change it also made, the change it did not make (ExpeL's
    success / failure pair, for the very same case: the outcome alone never said which of a
    failed run's changes was the mistake, or what it left undone). Only when the case's served
    successful runs agree on their changes; the changes as the replays show them."""
    same = [(item, cases[item.experience.id]) for item in items
            if cases.get(item.experience.id, Case()).same_instance]  # fmt: skip
    succeeded = [
        case.changes
        for item, case in same
        if item.experience.polarity == Experience.Polarity.SUCCESS and case.changes is not None
    ]
    if not succeeded or len({frozenset(c) for c in succeeded}) != 1:
        return cases
    right = succeeded[0]
    told = dict(cases)
    for item, case in same:
        if item.experience.polarity != Experience.Polarity.FAILURE or case.changes is None:
            continue
        missing = [c for c in right if c not in case.changes]
        extra = [c for c in case.changes if c not in right]
        lead = ""
        if missing:
            lead += (
                f"This case's successful run also made {_named(missing)}; the failed run "
                "below did not. "
            )
        if extra:
            lead += (
                f"Do not make {_named(extra)} again: this case's successful run did not, and "
                "the run below failed after it. "
            )
        if lead:
            told[item.experience.id] = replace(case, replay=lead + case.replay)
    return told


def is_same_case(asked: set[str], theirs: set[str], similarity: float) -> bool:
    """Whether a run whose request named `theirs` is the case of a query naming `asked` (the
    module docstring): a shared id and a like request, or a nearly equal request; never when both
    name ids and share none (two users asking alike, "cancel my flight", are two cases)."""
    if asked & theirs:
        return similarity >= settings.HINDSIGHT_RECALL_SAME_CASE_NAMED_SIMILARITY
    if asked and theirs:
        return False
    return similarity >= settings.HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY


def _label(item, case: Case) -> str:
    experience = item.experience
    runs = experience.support_count
    plural = "s" if runs != 1 else ""
    if experience.kind == "workflow":
        return f"Workflow ({runs} successful run{plural})"
    if experience.kind == "insight":
        return f"Insight ({runs} run{plural})"
    if case.same_instance:
        return "Same case"
    if experience.polarity == Experience.Polarity.FAILURE:
        return f"Lesson ({runs} failed run{plural})"
    return f"Strategy ({runs} run{plural})"


def prompt_block(items, cases: dict[int, Case], environment: list[str], ways: str = "") -> str:
    """Ready to inject after the tool descriptions and before the user's input, in the items'
    order (`ordered`); `ways` (`family_ways`) right after the header when the vote is split.

    Within BLOCK_CHARS, the items in order, each whole up to LINE_CHARS: the first items whole
    rather than every item cut (cut at a fixed 180 characters, a lesson lost the error it
    quotes and a workflow the values to call with, mid-placeholder). The block ends where less
    than LINE_MIN_CHARS is left; every item is still in the answer's `items`."""
    if not items:
        return ""
    lines = [_HEADER, *([ways] if ways else [])]
    room = BLOCK_CHARS - sum(len(line) + 1 for line in lines)
    for item in items:
        case = cases.get(item.experience.id, Case())
        text = case.replay or item.experience.advice
        caveat = ""
        if item.environment_match is False:
            caveat = (
                f" (learned on {', '.join(item.experience.environment)}, not on "
                f"{', '.join(environment)}: verify it applies here)"
            )
        limit = min(LINE_CHARS, room) - len(caveat)
        if limit < LINE_MIN_CHARS:
            break
        line = cut_at_word(f"- {_label(item, case)}: {text}", limit) + caveat
        lines.append(line)
        room -= len(line) + 1
    return "\n".join(lines)


@dataclass(frozen=True)
class FamilyVote:
    """Which family the query is of: each family's share of the score the k best items of a
    family hold, largest first."""

    shares: tuple[tuple[int, float], ...] = ()

    @classmethod
    def of(cls, scored: list, *, k: int) -> "FamilyVote":
        held: Counter[int] = Counter()
        for item in scored[:k]:
            if item.experience.family_id is not None:
                held[item.experience.family_id] += max(item.score, 0.0)
        total = sum(held.values())
        return cls(tuple((f, v / total if total else 0.0) for f, v in held.most_common()))

    @property
    def asked(self) -> int | None:
        """The family holding the most (None when no item of the k best is of a family)."""
        return self.shares[0][0] if self.shares else None

    @property
    def unanimous(self) -> bool:
        """Every item of a family among the k best is of the asked one."""
        return len(self.shares) == 1

    @property
    def clear(self) -> bool:
        """The asked family holds HINDSIGHT_RECALL_FAMILY_CLEAR_SHARE at least (or none is
        asked): its workflow may go first."""
        return not self.shares or self.shares[0][1] >= settings.HINDSIGHT_RECALL_FAMILY_CLEAR_SHARE


WAYS_SHOWN = 3  # families named when the vote is split
WAY_MIN_SHARE = 0.15  # a family below this share of the vote is not named


def family_ways(vote: FamilyVote) -> str:
    """When the vote is split between families whose successful runs changed different things,
    the line naming those changes and their successful runs; "" otherwise (one query, only
    then)."""
    if vote.clear:
        return ""
    named = [f for f, share in vote.shares if share >= WAY_MIN_SHARE]
    # A family's successful runs: its workflow's count where it has one (the number the block
    # shows beside the workflow), else its successful episodes'.
    rows = (
        Experience.objects.filter(family_id__in=named, polarity=Experience.Polarity.SUCCESS)
        .filter(kind__in=(Experience.Kind.EPISODE, Experience.Kind.WORKFLOW))
        .exclude(status__in=Experience.INACTIVE_STATUSES)
        .values_list("family_id", "family__signature", "kind")
        .annotate(runs=Sum("support_count"))
        .order_by()
    )
    by_family: dict[int, tuple[str, int]] = {}
    for family_id, signature, kind, runs in rows:
        if kind == Experience.Kind.WORKFLOW or family_id not in by_family:
            by_family[family_id] = (signature, runs)
    ways: Counter[str] = Counter()
    for family_id in named:  # by share; families changing the same things are one way
        if family_id in by_family:
            signature, runs = by_family[family_id]
            ways[signature.replace(",", " + ") or "no change"] += runs
    if len(ways) < 2:
        return ""
    shown = ", ".join(
        f"{change} ({n} run{'s' if n != 1 else ''})"
        for change, n in list(ways.items())[:WAYS_SHOWN]
    )
    return (
        f"Successful runs of requests like this made different changes: {shown}; find out which "
        "this one needs before you change anything."
    )


def servable(scored: list, query_task: str) -> tuple[list, dict[int, Case]]:
    """The candidates that may be served to this query: all but the episodes that teach no way
    to do another case (`same_case_only`, see the module docstring) unless they are the query's
    own case (one more query, only when there are such candidates); and the Cases it read, for
    `same_case_of` not to read them again."""
    only = [item for item in scored if item.experience.same_case_only]
    if not only:
        return scored, {}
    cases = same_case_of(only, query_task)
    dropped = {i.experience.id for i in only if not cases[i.experience.id].same_instance}
    return [item for item in scored if item.experience.id not in dropped], cases


def _is_family_workflow(item, family_id: int | None) -> bool:
    return item.experience.kind == "workflow" and item.experience.family_id == family_id


def served_items(scored: list, *, k: int, family_id: int | None) -> list:
    """The k best items, the asked family's workflow (`FamilyVote.asked`) taking the last place
    when it is not among them (see the module docstring)."""
    top = scored[:k]
    if k < 1 or family_id is None or any(_is_family_workflow(i, family_id) for i in top):
        return top
    workflow = next((i for i in scored[k:] if _is_family_workflow(i, family_id)), None)
    return top if workflow is None else [*top[: k - 1], workflow]


def ordered(items, *, family_id: int | None, unanimous: bool = False) -> list:
    """The same case first, then the asked family's workflow, then the others (each group by
    score). `unanimous`: every near item with a family is of the asked one."""
    same = [item.experience for item in items if item.case.same_instance]
    if same and not unanimous:
        if not any(
            e.family_id == family_id and e.polarity == Experience.Polarity.SUCCESS for e in same
        ):
            family_id = None  # the case's own runs say more (module docstring)

    def rank(item) -> int:
        if item.case.same_instance:
            return 0
        return 1 if _is_family_workflow(item, family_id) else 2

    return sorted(items, key=rank)  # stable: by score within each group


def with_cases(items, cases: dict[int, Case]):
    """The items with their Case attached (RecallItem.case)."""
    return [replace(item, case=cases.get(item.experience.id, Case())) for item in items]
