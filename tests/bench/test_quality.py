"""What the memory learns from public agent runs: a small slice of bench/quality.py on the real
site, and the offline reviewer against the hand-labelled gold set (in process)."""

import json

import pytest

from bench import gold, quality


def test_the_offline_reviewer_agrees_with_the_gold_set():
    figures = gold.evaluate()

    assert figures["steps"] >= 400 and figures["unlabelled"] == 0
    assert figures["necessary"]["precision"] >= 0.8 and figures["necessary"]["recall"] >= 0.8
    assert figures["misleading"]["recall"] >= 0.7 and figures["failed"]["recall"] >= 0.7
    assert figures["kappa"] >= 0.6


# They read one run of bench/quality.py, which starts `hindsight run` on a fresh data dir.
launcher = pytest.mark.launcher


@pytest.fixture(scope="module")
def all_figures(tmp_path_factory) -> dict:
    """One fresh site for the three datasets: 8 HotpotQA questions (40 runs), the first 60
    WebShop episodes, and τ-bench-shaped transcripts of another domain (below)."""
    # τ-bench's own file is not shipped; the same shape, through the same import path: short
    # successes (2 tool calls) get a short review instead of being skipped, and a new run of a
    # task recalls the earlier runs of that task.
    episodes = [
        tau_episode(task, trial, 0.0 if (task, trial) == (1, 1) else 1.0)
        for task in range(3)
        for trial in range(4)
    ]
    path = tmp_path_factory.mktemp("tau") / "gpt-4o-airline.json"
    path.write_text(json.dumps(episodes))
    return quality.main(["--dataset", "all", "--tau", str(path),
                         "--slice", "hotpotqa=8", "--slice", "webshop=60"])  # fmt: skip


@pytest.fixture(scope="module")
def slice_figures(all_figures) -> dict:
    return {name: all_figures[name] for name in ("hotpotqa", "webshop")}


@launcher
def test_every_reviewed_run_of_the_slice_yields_an_experience(slice_figures):
    for figures in slice_figures.values():
        assert figures["review"]["yield"] >= 0.95, figures["review"]["yield_by_outcome"]


@launcher
def test_no_experience_has_a_greeting_scene_cut_json_or_a_bare_tool_list(slice_figures):
    for figures in slice_figures.values():
        assert figures["review"]["advice_problems"] == {}


@launcher
def test_a_question_asked_again_recalls_its_earlier_runs_and_their_lesson(slice_figures):
    project = slice_figures["hotpotqa"]["project"]
    assert project["hit@3"] >= 0.95
    assert project.get("lesson_first_share", 1.0) >= 0.8


@launcher
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


def tau_episode(task_id: int, trial: int, reward: float) -> dict:
    """An episode shaped like τ-bench's historical trajectories: an OpenAI transcript."""
    user, reservation, tool, change = [
        ("mia_li_3668", "ZX12AB", "cancel_reservation", "cancel my reservation"),
        ("noah_kim_1021", "RR77QP", "update_reservation_baggages", "add two checked bags"),
        ("ava_diaz_5530", "HQ3M9T", "update_reservation_flights", "move my flight to Friday"),
    ][task_id]
    call = {"id": f"c{trial}", "type": "function"}
    return {
        "task_id": task_id,
        "trial": trial,
        "reward": reward,
        "info": {},
        "traj": [
            {"role": "system", "content": "# Airline Agent Policy"},
            {"role": "user", "content": ["Hi!", "Hello there.", "Hey.", "Good morning!"][trial]},
            {"role": "assistant", "content": "How can I help you today?"},
            {"role": "user", "content": f"I'd like to {change}. I am {user}, {reservation}."},
            {"role": "assistant", "content": None, "tool_calls": [
                {**call, "function": {"name": "get_reservation_details",
                                      "arguments": f'{{"reservation_id": "{reservation}"}}'}}]},
            {"role": "tool", "tool_call_id": f"c{trial}", "name": "get_reservation_details",
             "content": f'{{"reservation_id": "{reservation}", "user_id": "{user}"}}'},
            {"role": "assistant", "content": None, "tool_calls": [
                {**call, "id": f"d{trial}", "function": {
                    "name": tool, "arguments": f'{{"reservation_id": "{reservation}"}}'}}]},
            {"role": "tool", "tool_call_id": f"d{trial}", "name": tool,
             "content": "Error: not allowed" if reward < 1 else '{"status": "ok"}'},
            {"role": "assistant", "content": "Done." if reward >= 1 else "Sorry, I can't."},
        ],
    }  # fmt: skip


@launcher
def test_transcripts_of_another_domain_are_imported_reviewed_and_recalled(all_figures):
    figures = all_figures["tau"]

    assert figures["review"]["review_status"] == {"reviewed": 12}
    assert figures["review"]["yield"] == 1.0
    assert figures["project"]["hit@1"] == 1.0
