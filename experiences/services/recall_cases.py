"""Which served items are the query's very own case, and what of them is served: the exact
replay, a failed run's contrast with its case's successful one, and not a longer way the case
was done without.

An item is the same case as the query when the query names one of the
identifiers of the item's request (a user id, an order number: tokens with letters and digits,
or underscored names; never a bare number or price; a code in capitals, "HXDUBJ", when the
item's run called a tool with it) and asks a like thing (similarity at least
HINDSIGHT_RECALL_SAME_CASE_NAMED_SIMILARITY: the same user asking about baggage after a
cancellation is a new case), or asks nearly the same thing (similarity at least
HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY) naming no ids but the query's and lacking no value
the query names (`request_values`: a file name, a number, a file pattern; "remove all *.txt
files except keep.txt" is not "remove all *.txt files"). Then the exact
replay of that run, identifiers included, is served in place of the general advice; any other
item gives only the strategy. A failed run of the same case served beside the case's successful
run is led by what that run did otherwise (`contrasted`): the changes it also made, the changes
it did not make (hand-judged on τ-bench, 5 of 6 such replays went from neutral to helpful; the
sixth was a success of the same user's near-identical request with another gold).

**A longer way left out.** Of the same case's successful runs that made the same changes, one
that then handed the case to a person is not served when another did not (`without_longer_ways`):
the case was done without passing it on, and an agent told the replay with the hand-off would
hand over a case it can finish (τ-bench's policy: transfer only when the request cannot be
handled). Only the hand-off: two successes with different changes may be two requests of one
user (a change asked, then no change asked), told apart by their scores, not by their length.
"""

import json
import re
from dataclasses import dataclass, replace

from django.conf import settings
from django.db import connections, router

from experiences.models import Experience
from experiences.services.family_induction import HAND_OFF
from traces.review.values import case_identifiers, key_values

SOURCES_SHOWN = 5  # source runs named per item


@dataclass(frozen=True)
class Case:
    """What only the returned items need: their replay and whether they are the same case."""

    same_instance: bool = False
    replay: str = ""
    sources: tuple[str, ...] = ()  # external ids of the runs it came from (the first few)
    # The changes its run made, as its replay shows them (None: recorded before they were kept).
    changes: tuple[str, ...] | None = None
    handed_off: bool = False  # its run passed the case to a person (a hand-off that worked)


def _decoded(calls) -> list[dict]:
    if isinstance(calls, str):  # Django's psycopg setup leaves jsonb undecoded
        calls = json.loads(calls)
    return list(calls or ())


def _handed_off(calls) -> bool:
    return any(c.get("effect") == HAND_OFF and not c.get("errored") for c in _decoded(calls))


def _changes(calls) -> tuple[str, ...] | None:
    """The changes a run made that worked, each once (distill_drafts.run_calls keeps each
    write's literal); None when a write has no literal (reviewed before they were kept)."""
    writes = [c for c in _decoded(calls) if c.get("effect") == "write"]
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


# A number or a file pattern a request names ("5 minutes", "*.txt"), beside its key_values.
_NUMBER_OR_PATTERN = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])|[\w.-]*\*[\w.*?-]*|[\w.-]+\?[\w.*?-]+"
)


def request_values(text: str) -> set[str]:
    """The values a request names: ids, names, paths, file names ("keep.txt"), numbers, file
    patterns."""
    return key_values(text) | {v.lower() for v in _NUMBER_OR_PATTERN.findall(text)}


def same_case_of(items, query_task: str, known: dict[int, Case] | None = None) -> dict[int, Case]:
    """Each item's Case (one query for the k returned items' request and replay; the `known`
    ones are not read again)."""
    known = known or {}
    ids = [item.experience.id for item in items if item.experience.id not in known]
    if not ids:
        return {item.experience.id: known[item.experience.id] for item in items}
    with connections[router.db_for_read(Experience, replica=True)].cursor() as cursor:
        # Each item's request, replay, writes and hand-offs (not its every call: recall's hot
        # path), and the external ids of its first source runs.
        cursor.execute(
            "SELECT e.id, e.request, e.summary, e.replay, "
            "jsonb_path_query_array(e.calls, "
            """'$[*] ? (@.effect == "write" || @.effect == "hand_off")'), """
            "ARRAY(SELECT t.external_id FROM "
            "experiences_experiencesource s JOIN traces_trace t ON t.id = s.trace_id WHERE "
            "s.experience_id = e.id ORDER BY s.id LIMIT %s) FROM experiences_experience e "
            "WHERE e.id = ANY(%s)",
            [SOURCES_SHOWN, ids],
        )
        rows = {row[0]: row[1:] for row in cursor.fetchall()}
    asked = case_identifiers(query_task) | _codes(query_task)
    values = request_values(query_task)
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
            and is_same_case(
                asked,
                _case_ids(request or summary, replay),
                similarity,
                new_values=bool(values - request_values(request or summary)),
            )
        )
        cases[item.experience.id] = Case(
            same_instance=same,
            replay=replay if same else "",
            sources=tuple(sources),
            changes=_changes(calls) if same else None,
            handed_off=same and _handed_off(calls),
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


def is_same_case(
    asked: set[str], theirs: set[str], similarity: float, *, new_values: bool = False
) -> bool:
    """Whether a run whose request named `theirs` is the case of a query naming `asked` (the
    module docstring): a shared id and a like request, or a nearly equal request that names no
    value the query adds (`new_values`: "except "keep.txt"", "7 days" for "5 minutes": the
    replay would act on the old values); never when both name ids and share none (two users
    asking alike, "cancel my flight", are two cases)."""
    if asked & theirs:
        return similarity >= settings.HINDSIGHT_RECALL_SAME_CASE_NAMED_SIMILARITY
    if asked and theirs or new_values:
        return False
    return similarity >= settings.HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY


def without_longer_ways(items, cases: dict[int, Case]) -> list:
    """`items` (by score) without the same case's successes that handed the case to a person
    after the very changes another of its successes made without handing it over (the module
    docstring); items whose Case was not read are kept."""
    success = Experience.Polarity.SUCCESS

    def way(item) -> tuple[str, ...] | None:
        case = cases.get(item.experience.id)
        if case is None or not case.same_instance or item.experience.polarity != success:
            return None
        return case.changes

    finished = {
        frozenset(changes)
        for item in items
        if (changes := way(item)) is not None and not cases[item.experience.id].handed_off
    }
    return [
        item
        for item in items
        if (changes := way(item)) is None
        or not cases[item.experience.id].handed_off
        or frozenset(changes) not in finished
    ]
