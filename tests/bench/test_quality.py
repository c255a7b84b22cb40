"""What the memory learns from public agent runs: a small slice of bench/quality.py on the real
site, and the offline reviewer against the hand-labelled gold set (in process)."""

import pytest

from bench import gold, quality


def test_the_offline_reviewer_agrees_with_the_gold_set():
    figures = gold.evaluate()

    assert figures["steps"] >= 400 and figures["unlabelled"] == 0
    assert figures["necessary"]["precision"] >= 0.8 and figures["necessary"]["recall"] >= 0.8
    assert figures["misleading"]["recall"] >= 0.7 and figures["failed"]["recall"] >= 0.7
    assert figures["kappa"] >= 0.6


@pytest.fixture(scope="module")
def slice_figures():
    # 8 HotpotQA questions (40 runs) and the first 60 WebShop episodes, through a fresh site.
    hotpotqa = quality.main(["--dataset", "hotpotqa", "--slice", "8"])["hotpotqa"]
    webshop = quality.main(["--dataset", "webshop", "--slice", "60"])["webshop"]
    return {"hotpotqa": hotpotqa, "webshop": webshop}


def test_every_reviewed_run_of_the_slice_yields_an_experience(slice_figures):
    for figures in slice_figures.values():
        assert figures["review"]["yield"] >= 0.95, figures["review"]["yield_by_outcome"]


def test_no_experience_has_a_greeting_scene_cut_json_or_a_bare_tool_list(slice_figures):
    for figures in slice_figures.values():
        assert figures["review"]["advice_problems"] == {}


def test_a_question_asked_again_recalls_its_earlier_runs_and_their_lesson(slice_figures):
    project = slice_figures["hotpotqa"]["project"]
    assert project["hit@3"] >= 0.95
    assert project.get("lesson_first_share", 1.0) >= 0.8


def test_the_merge_queue_stays_small(slice_figures):
    for figures in slice_figures.values():
        assert figures["review"]["proposals_per_100"] <= 15


@pytest.mark.parametrize(
    ("advice", "scene", "problem"),
    [
        ('When you handle a task like "Hi" (airline), first use get_user.', "Hi", "greeting scene"),
        ('When you work on "x", book {"cabin":"economy","flights":[{"date"…', "x", "cut JSON"),
        ('When you work on "x", first use get_user, then book.', "x", "bare tool list"),
    ],
)
def test_the_advice_check_finds_each_problem(advice, scene, problem):
    assert problem in quality.advice_problems(advice, scene)


def test_the_advice_check_passes_readable_advice():
    advice = 'When you work on "change reservation ABC123" (airline), get_reservation "ABC123".'
    assert quality.advice_problems(advice, "change reservation ABC123") == []
