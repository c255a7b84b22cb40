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

**The same case** — which items are the query's own case, their replays, the contrast of a
failed run with its case's successful one, and the longer ways left out — is recall_cases.py.
"""

from collections import Counter
from dataclasses import dataclass, replace

from django.conf import settings
from django.db.models import Sum

from experiences.models import Experience
from experiences.services.recall_cases import Case, same_case_of
from traces.review.scene import cut_at_word

BLOCK_CHARS = 1000  # the whole block, header included
LINE_CHARS = 420  # one item at most: a same case's replay, whole or nearly
LINE_MIN_CHARS = 100  # less room than this left: the block ends (a stub would say nothing)
_HEADER = "Experience from earlier runs (hindsight); check it fits this task:"


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
