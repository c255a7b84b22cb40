"""Which workflow recall puts first: the family the nearest items vote for, never another
family's workflow that merely made the candidate list (pure functions of scored items)."""

from dataclasses import replace

from experiences.services.recall_block import FamilyVote, ordered, prompt_block, served_items
from experiences.services.recall_cases import Case
from tests.support.recall_items import recall_item as item

CHANGE, TRANSFER = 1, 2  # two task families


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
