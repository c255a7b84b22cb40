"""Which workflow recall puts first: the family the nearest items vote for, never another
family's workflow that merely made the candidate list (pure functions of scored items)."""

from dataclasses import replace
from datetime import UTC, datetime

from experiences.services.recall import RecallItem
from experiences.services.recall_block import (
    Case,
    FamilyVote,
    _case_ids,
    _changes,
    _codes,
    contrasted,
    is_same_case,
    ordered,
    prompt_block,
    served_items,
)
from experiences.services.recall_candidates import Recalled
from traces.review.values import case_identifiers

CHANGE, TRANSFER = 1, 2  # two task families


def item(
    experience_id, score, *, kind="episode", family_id=None, same_case=False, polarity="success"
) -> RecallItem:
    experience = Recalled(
        id=experience_id, advice=f"advice {experience_id}", polarity=polarity, kind=kind,
        status="approved", environment=[], tools=[], path=[], evidence_at=datetime.now(UTC),
        upvotes=0, downvotes=0, support_count=1, family_id=family_id, same_case_only=False,
    )  # fmt: skip
    return RecallItem(experience, score, {}, None, Case(same_instance=same_case))


def test_the_family_holding_most_of_the_best_scores_is_the_asked_one():
    scored = [item(1, 0.9, family_id=TRANSFER), item(2, 0.8, family_id=CHANGE),
              item(3, 0.7, family_id=CHANGE), item(4, 0.6)]  # fmt: skip
    assert FamilyVote.of(scored, k=3).asked == CHANGE
    assert FamilyVote.of(scored, k=1).asked == TRANSFER
    assert FamilyVote.of([item(4, 0.6)], k=5).asked is None


def test_another_family_s_workflow_is_neither_added_nor_put_first():
    # The transfer family's workflow made the candidates (its centroid is near everything), but
    # the nearest runs are flight changes: it keeps its place by score and is not added.
    scored = [
        item(1, 0.9, family_id=CHANGE), item(2, 0.85, family_id=CHANGE),
        item(3, 0.8, kind="workflow", family_id=TRANSFER), item(4, 0.7, family_id=CHANGE),
        item(5, 0.6, family_id=CHANGE), item(6, 0.5, kind="workflow", family_id=TRANSFER),
    ]  # fmt: skip
    family = FamilyVote.of(scored, k=5).asked
    served = served_items(scored, k=5, family_id=family)
    assert [i.experience.id for i in ordered(served, family_id=family)] == [1, 2, 3, 4, 5]


def test_the_asked_family_s_workflow_takes_the_last_place_and_comes_first():
    scored = [item(1, 0.9, family_id=CHANGE), item(2, 0.85, family_id=CHANGE),
              item(3, 0.8, kind="workflow", family_id=TRANSFER), item(4, 0.3, family_id=CHANGE),
              item(5, 0.2, kind="workflow", family_id=CHANGE)]  # fmt: skip
    family = FamilyVote.of(scored, k=3).asked
    assert family == CHANGE
    served = served_items(scored, k=3, family_id=family)
    assert [i.experience.id for i in ordered(served, family_id=family)] == [5, 1, 2]


def test_with_the_same_case_served_the_workflow_follows_it_only_if_the_case_succeeded_its_way():
    scored = [item(1, 0.9, family_id=CHANGE), item(2, 0.85, family_id=CHANGE, same_case=True),
              item(3, 0.8, kind="workflow", family_id=TRANSFER), item(4, 0.3, family_id=CHANGE),
              item(5, 0.2, kind="workflow", family_id=CHANGE)]  # fmt: skip
    family = FamilyVote.of(scored, k=3).asked
    served = served_items(scored, k=3, family_id=family)
    # The case's successful run is of the asked family: its workflow follows the case.
    assert [i.experience.id for i in ordered(served, family_id=family)] == [2, 5, 1]
    # The case only failed (a failure joins the nearest family): its own runs say more.
    failed = [replace(i, experience=replace(i.experience, polarity="failure"))
              if i.experience.id == 2 else i for i in served]  # fmt: skip
    assert [i.experience.id for i in ordered(failed, family_id=family)] == [2, 1, 5]
    # Every near item of one family (one kind of task): its workflow is the procedure.
    assert [i.experience.id for i in ordered(failed, family_id=family, unanimous=True)] == [2, 5, 1]
    assert FamilyVote.of(scored, k=2).unanimous and not FamilyVote.of(scored, k=3).unanimous


def test_a_booking_code_in_capitals_is_an_id_where_the_run_called_a_tool_with_it():
    query = "Hi! I need help with my reservation. My reservation ID is HXDUBJ. PLEASE hurry."
    assert {"hxdubj", "please"} <= case_identifiers(query) | _codes(query)
    request = "I'd like to change my flight in reservation HXDUBJ. PLEASE help."
    replay = 'The same case ran before (failure): get_reservation_details "HXDUBJ"; do not …'
    assert _case_ids(request, replay) == {"hxdubj"}  # "PLEASE" went to no tool
    assert _case_ids(request, "The same case ran before (success): answered.") == set()


def test_the_same_case_names_the_query_s_ids_or_asks_nearly_the_same_naming_no_other(settings):
    settings.HINDSIGHT_RECALL_SAME_CASE_NAMED_SIMILARITY = 0.5
    settings.HINDSIGHT_RECALL_SAME_INSTANCE_SIMILARITY = 0.92
    user, other = {"sophia_silva_7557", "h8q05l"}, {"amelia_rossi_1297", "si5ukw"}
    assert is_same_case(user, {"sophia_silva_7557"}, 0.6)  # the same user asking a like thing
    assert not is_same_case(user, {"sophia_silva_7557"}, 0.4)  # ... something else
    assert not is_same_case(user, other, 0.97)  # two users asking alike: two cases
    assert is_same_case(set(), other, 0.95)  # the query names no id: nearly the same request
    assert is_same_case(user, set(), 0.95)
    assert not is_same_case(set(), set(), 0.9)


def test_a_split_vote_is_not_clear_and_a_one_sided_one_is(settings):
    settings.HINDSIGHT_RECALL_FAMILY_CLEAR_SHARE = 0.6
    split = [item(1, 0.9, family_id=TRANSFER), item(2, 0.8, family_id=CHANGE),
             item(3, 0.7, family_id=CHANGE), item(4, 0.6, family_id=TRANSFER)]  # fmt: skip
    vote = FamilyVote.of(split, k=4)
    assert vote.asked == TRANSFER and not vote.clear
    assert [f for f, _ in vote.shares] == [TRANSFER, CHANGE]
    assert round(sum(share for _, share in vote.shares), 6) == 1.0
    one_sided = [item(1, 0.9, family_id=CHANGE), item(2, 0.8, family_id=CHANGE),
                 item(3, 0.3, family_id=TRANSFER), item(4, 0.6)]  # fmt: skip
    assert FamilyVote.of(one_sided, k=4).clear
    assert FamilyVote.of([item(4, 0.6)], k=5).clear  # no family asked: nothing to put first


def test_the_block_gives_its_first_items_whole_within_a_thousand_characters():
    def long(experience_id, words):
        found = item(experience_id, 1.0 - experience_id / 10)
        advice = f"When you use tool_{experience_id}: " + " ".join(["step"] * words) + " end."
        return replace(found, experience=replace(found.experience, advice=advice))

    items = [long(1, 60), long(2, 50), long(3, 60), long(4, 40), long(5, 40)]
    block = prompt_block(items, {}, [])
    lines = block.splitlines()
    assert len(block) <= 1000
    assert [line.endswith("end.") for line in lines[1:]] == [True, True, False]  # the 3rd is cut
    assert all(f"tool_{n}" not in block for n in (4, 5))  # no room left for a useful line
    # A same case's long replay is cut at 420 characters, not at 180.
    replay = "The same case ran before (success): " + " ".join(["call"] * 200)
    first = prompt_block(items[:1], {1: Case(same_instance=True, replay=replay)}, [])
    assert 400 < len(first.splitlines()[1]) <= 420


def test_a_failed_run_is_contrasted_only_with_changes_recorded_and_agreed_on():
    cancel = {"tool": "cancel_reservation", "effect": "write", "errored": False,
              "literal": 'cancel_reservation "K1NW8N"'}  # fmt: skip
    read = {"tool": "get_user_details", "effect": "read", "errored": False}
    assert _changes([read, cancel, cancel]) == ('cancel_reservation "K1NW8N"',)
    assert _changes([read, cancel | {"errored": True}]) == ()
    assert _changes([read, {k: v for k, v in cancel.items() if k != "literal"}]) is None
    assert _changes('[{"tool": "t", "effect": "read", "errored": false}]') == ()

    failed = item(1, 0.9, polarity="failure", same_case=True)
    ok = item(2, 0.8, same_case=True)
    cases = {1: Case(True, "The same case ran before (failure).", changes=()),
             2: Case(True, "The same case ran before (success).",
                     changes=('cancel_reservation "K1NW8N"',))}  # fmt: skip
    told = contrasted([failed, ok], cases)[1].replay
    assert told == ("This case's successful run also made cancel_reservation \"K1NW8N\"; the "
                    "failed run below did not. The same case ran before (failure).")  # fmt: skip
    # Not recorded (reviewed before the changes were kept), or successes that disagree: as is.
    unknown = cases | {1: replace(cases[1], changes=None)}
    assert contrasted([failed, ok], unknown)[1].replay == cases[1].replay
    other = item(3, 0.7, same_case=True)
    disagree = cases | {3: Case(True, "The same case ran before (success).", changes=())}
    assert contrasted([failed, ok, other], disagree)[1].replay == cases[1].replay
