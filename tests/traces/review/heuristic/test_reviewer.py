"""The offline reviewer's documented rules (heuristic-2), each on a small hand-built trajectory.

One behaviour per test, each rule of the module docstrings with the trajectory that shows it.
"""

import re

import pytest

from tests.support.review_builders import request_for, sv, tv
from traces.review.heuristic import HeuristicReviewer, label_steps
from traces.review.heuristic.template import build_template
from traces.review.scene import SUMMARY_CHARS, SUMMARY_MIN_CHARS, action_phrase, scene_summary
from traces.review.types import StepJudgement
from traces.review.values import key_values


def judgements(trace, steps):
    return label_steps(request_for(trace, steps))


def labels_of(trace, steps) -> dict[int, str]:
    return {i: j.label for i, j in judgements(trace, steps).items()}


def review(trace, steps):
    return HeuristicReviewer().review(request_for(trace, steps))


# ---------------------------------------------------------------------------- steps

SEARCH_RESULTS = (
    "Page 1 (Total results: 2)\n[B07X1] Bon Jovi Greatest Hits (remastered, 2 CDs) $14.99\n"
    "[B08Y2] Queen Greatest Hits (1981 compilation) $24.99"
)
BON_JOVI_BAND = "Bon Jovi is an American rock band formed in 1983 in Sayreville."


def call(index: int, tool: str, arguments: dict | None = None, result: str = "", **fields):
    """A tool call with its arguments and result (the observation), other fields as `sv`'s."""
    return sv(index, tool=tool, arguments=arguments or {}, observation=result, **fields)


def thought(index: int, text: str):
    return sv(index, "llm_reasoning", content=text)


def said(index: int, text: str):
    """A user turn."""
    return sv(index, "user_input", content=text)


def hits_search(index: int = 0):
    """The webshop search whose results offer both albums."""
    return call(index, "search", {"query": "greatest hits album"}, SEARCH_RESULTS)


def missing_config(index: int, **fields):
    return call(index, "read_file", {"path": "/etc/app.yml"}, is_error=True, **fields)


def found_config(index: int):
    return call(index, "read_file", {"path": "/etc/app/config.yml"}, "port: 8443")


def bon_jovi_purchase(index: int):
    """The album within budget clicked in the results, then bought."""
    return [
        call(index, "click", {"target": "B07X1"}, "Bon Jovi. [Buy Now]"),
        call(index + 1, "click", {"target": "Buy Now"}, "Thank you"),
    ]


def payments_worker_restart(index: int):
    """A check nothing used, a call on the worker the request names, and the restart."""
    return [
        call(index, "uptime", result="up 3 days"),
        call(index + 1, "describe", {"name": "payments worker"}, "pw-6f: 2/2"),
        call(index + 2, "rollout_restart", {"name": "payments-worker"}, "done"),
    ]


def libssl_install(**failed_fields):
    """A package that is not there, then the one that installs."""
    return [
        call(0, "apt_install", {"pkg": "libssl1.1"}, is_error=True, **failed_fields),
        call(1, "apt_install", {"pkg": "libssl3"}, "installed libssl3"),
    ]


# ---------------------------------------------------------------------------- trajectories


def shop(outcome: str = "success", **fields):
    return tv(
        task="Buy a greatest hits album under 20 dollars",
        environment=["webshop"],
        outcome=outcome,
        **fields,
    )


def seed_000_trajectory():
    """Seed 000's example: blind restarts were redundant; the policy found in the logs was key."""
    trace = tv(
        task="Service svc-a cannot reach svc-b in the prod namespace",
        final_answer="The NetworkPolicy deny-all-egress blocked egress from svc-a; "
        "patched it to allow traffic to app=svc-b.",
    )
    pods = "svc-a-7d9f   Running\nsvc-b-5c2a   Running"
    logs = "dial tcp 10.0.3.17:8080: i/o timeout\nblocked by NetworkPolicy deny-all-egress"
    policy = "spec: podSelector app=svc-a egress: [] resourceVersion=48213"
    patched = "networkpolicy.networking.k8s.io/deny-all-egress patched"
    patch = {"name": "deny-all-egress", "resourceVersion": "48213", "allow": "app=svc-b"}
    steps = [
        said(0, "svc-a gets timeouts calling svc-b since this morning"),
        call(1, "kubectl_get_pods", {"namespace": "prod"}, pods),
        call(2, "docker_restart", {"container": "svc-b"}, "restarted"),
        call(3, "docker_restart", {"container": "svc-a"}, "restarted"),
        call(4, "kubectl_logs", {"pod": "svc-a-7d9f"}, logs),
        call(5, "kubectl_get_networkpolicy", {"name": "deny-all-egress"}, policy),
        call(6, "kubectl_patch_networkpolicy", patch, patched),
    ]
    return trace, steps


def refused_answer_trajectory():
    """A failed QA run: the agent misread the year and the checker refused the answer."""
    question = "What year was the band that sang Livin' on a Prayer formed?"
    trace = tv(task=question, outcome="failure", final_answer="1985", environment=["wiki"])
    song = "Livin' on a Prayer is a song by Bon Jovi, released in 1986."
    steps = [
        said(0, question),
        call(1, "search", {"query": "Livin' on a Prayer"}, song),
        call(2, "search", {"query": "Bon Jovi"}, BON_JOVI_BAND),
        thought(3, "The band was formed in 1985."),
        call(4, "finish", {"answer": "1985"}, "Answer is INCORRECT"),
    ]
    return trace, steps


def wrong_turn_trajectory():
    """A failed shopping run: the agent picked the album over budget and bought it."""
    queen = "Queen Greatest Hits. Price: $24.99. Format: [CD] [Vinyl]. [Buy Now]"
    steps = [
        said(0, "Buy a greatest hits album under 20 dollars"),
        hits_search(1),
        thought(2, "I will take the Queen album."),
        call(3, "click", {"target": "B08Y2"}, queen),
        call(4, "click", {"target": "Vinyl"}, "Queen Greatest Hits, Vinyl selected. [Buy Now]"),
        call(5, "click", {"target": "Buy Now"}, "Your score (min 0.0, max 1.0): 0.0"),
    ]
    return shop("failure"), steps


def back_and_forth_trajectory():
    """A shopping run that opens the album over budget, goes back, and buys the other one."""
    steps = [
        hits_search(0),
        call(1, "click", {"target": "B08Y2"}, "Queen $24.99 [< Prev]"),
        call(2, "click", {"target": "< Prev"}, SEARCH_RESULTS + " p1"),
        call(3, "click", {"target": "B07X1"}, "Bon Jovi $14.99 [Buy]"),
        call(4, "click", {"target": "Buy"}, "Thank you"),
    ]
    return shop(), steps


def turned_down_trajectory(first: tuple[str, str], turn_down: str, second: tuple[str, str]):
    """A QA run that searches (query, result), turns that result down in a thought, searches
    again and answers 1983."""
    steps = [
        call(0, "search", {"query": first[0]}, first[1]),
        thought(1, turn_down),
        call(2, "search", {"query": second[0]}, second[1]),
        thought(3, "The band was formed in 1983."),
        call(4, "finish", {"answer": "1983"}, "Episode finished"),
    ]
    return tv(task="When was the band Bon Jovi formed?", final_answer="1983"), steps


# ---------------------------------------------------------------------------- seed 000


def test_seed_000_restarts_are_redundant_and_the_logs_are_necessary():
    labels = labels_of(*seed_000_trajectory())

    assert labels[2] == labels[3] == "redundant"
    assert labels[4] == "necessary"  # the logs that revealed the NetworkPolicy
    assert labels[1] == labels[5] == labels[6] == "necessary"
    assert labels[0] == "necessary"  # the request


def test_seed_000_yields_a_strategy_of_the_calls_that_mattered_as_placeholders():
    outcome = review(*seed_000_trajectory())
    template = outcome.template

    # Anchored on the call that changed state, the calls before it in order, each value named
    # by where it came from: the next incident has other pods and policies.
    # The call that changed state is the condition ("When you use …"), never a push to make it.
    assert template.experience.startswith(
        "When you use kubectl_patch_networkpolicy, first kubectl_get_pods <namespace from the "
        "request>, then kubectl_logs <pod from kubectl_get_pods>, then kubectl_get_networkpolicy "
        "<name from kubectl_logs>; call it with <name from kubectl_logs>"
    )
    assert "svc-a-7d9f" not in template.experience and "Service svc-a" not in template.experience
    assert "docker_restart" not in template.strategy
    assert any("skip docker_restart" in line for line in template.improvements)
    # The literal run is the replay, for the very same incident.
    assert 'kubectl_logs "svc-a-7d9f", then kubectl_get_networkpolicy "deny-all-egress"' in (
        template.replay
    )
    assert template.worth_reference
    assert template.effective_steps == [0, 1, 4, 5, 6]


def test_the_reviewer_is_heuristic_2():
    outcome = review(*seed_000_trajectory())
    assert outcome.reviewer == "heuristic"
    assert outcome.prompt_version == "heuristic-2"


# ---------------------------------------------------------------------------- 1. failed


def test_an_errored_step_is_failed_with_high_confidence():
    judged = judgements(tv(), [call(0, "curl", is_error=True, error_type="Timeout"), call(1, "ok")])
    assert (judged[0].label, judged[0].confidence) == ("failed", 0.95)
    assert "Timeout" in judged[0].reason


@pytest.mark.parametrize(
    "result",
    [
        "Could not find the page [[Bon Jovi (band)]]",
        "No Results",
        "No results found for 'greatest hits'",
        "Invalid action!",
        "permission denied",
        "Permission denied: /etc/shadow",
        'Error from server (NotFound): deployments "pay" not found',
        "HTTP/1.1 404 Not Found",
    ],
)
def test_a_result_that_opens_like_an_error_is_failed(result):
    judged = judgements(tv(), [call(0, "lookup", {"q": "x"}, result), call(1, "ok")])
    assert (judged[0].label, judged[0].confidence) == ("failed", 0.8)


def test_a_result_opening_with_http_404_is_failed():
    steps = [call(0, "fetch", {"url": "x"}, "HTTP 404"), call(1, "ok")]
    assert labels_of(tv(), steps)[0] == "failed"


@pytest.mark.parametrize("result", ["Found 3 results", "results: none found further down"])
def test_a_result_that_only_mentions_a_failure_word_later_is_not_failed(result):
    steps = [call(0, "lookup", {"q": "x"}, result), call(1, "ok")]
    assert labels_of(tv(), steps)[0] != "failed"


def test_a_refused_final_answer_is_failed():
    judged = judgements(*refused_answer_trajectory())
    assert (judged[4].label, judged[4].confidence) == ("failed", 0.85)
    assert "INCORRECT" in judged[4].reason


def test_the_thought_that_produced_a_refused_answer_is_misleading():
    judged = judgements(*refused_answer_trajectory())
    assert (judged[3].label, judged[3].confidence) == ("misleading", 0.7)
    assert "refused" in judged[3].reason


def test_a_final_score_of_zero_is_a_verdict_against_the_run():
    judged = judgements(*wrong_turn_trajectory())
    assert (judged[5].label, judged[5].confidence) == ("failed", 0.85)


def test_an_empty_final_result_of_a_failed_run_is_failed_with_low_confidence():
    steps = [
        call(0, "kubectl_get", {"namespace": "prod"}, "payments 0/2"),
        call(1, "kubectl_rollout_restart", {"deployment": "payments"}),
    ]
    judged = judgements(tv(task="Restart payments in prod", outcome="failure"), steps)
    assert (judged[1].label, judged[1].confidence) == ("failed", 0.6)


def test_a_refusal_only_counts_as_a_verdict_in_a_failed_run():
    trace, steps = refused_answer_trajectory()
    success = tv(task=trace.task, outcome="success", final_answer="1983")
    assert labels_of(success, steps)[4] != "failed"


# ---------------------------------------------------------------------------- 2. redundant


def test_an_identical_repeated_call_is_redundant():
    steps = [call(0, "get", {"id": 1}, "x"), call(1, "get", {"id": 1}, "x")]
    judged = judgements(tv(outcome="unknown"), steps)
    assert (judged[1].label, judged[1].confidence) == ("redundant", 0.9)


def test_a_retry_after_a_failure_is_not_a_repeat():
    steps = [call(0, "get", {"id": 1}, is_error=True), call(1, "get", {"id": 1}, "order-7781")]
    labels = labels_of(tv(final_answer="order-7781 shipped"), steps)
    assert labels == {0: "failed", 1: "necessary"}


def test_a_result_that_repeats_an_earlier_result_is_redundant():
    steps = [
        hits_search(0),
        call(1, "search", {"query": "greatest hits albums"}, SEARCH_RESULTS),
        *bon_jovi_purchase(2),
    ]
    judged = judgements(shop(), steps)
    assert (judged[1].label, judged[1].confidence) == ("redundant", 0.8)
    assert "step 0" in judged[1].reason
    assert judged[0].label == "necessary"  # the first copy is the one the click used


def test_the_last_successful_call_is_necessary_even_when_its_result_reads_like_an_earlier_one():
    restarted = "deployment.apps/payments-worker restarted"
    steps = [
        call(0, "rollout_restart", {"ns": "staging"}, restarted),
        call(1, "rollout_restart", {"ns": "prod"}, restarted),
    ]
    labels = labels_of(tv(task="Restart the payments worker in prod"), steps)
    assert labels[1] == "necessary"


def test_a_back_navigation_call_is_redundant():
    judged = judgements(*back_and_forth_trajectory())
    assert (judged[2].label, judged[2].confidence) == ("redundant", 0.6)


@pytest.mark.parametrize("argument", ["Back to Search", "undo", "Cancel", "go back"])
def test_undo_and_cancel_calls_are_navigation_not_progress(argument):
    steps = [
        call(0, "open", {"item": "cart"}, "cart: 2 items"),
        call(1, "click", {"target": argument}, "home page"),
        call(2, "checkout", {}, "order placed"),
    ]
    assert labels_of(tv(task="check out the cart"), steps)[1] == "redundant"


def test_a_value_that_only_opens_with_a_word_of_going_back_is_progress():
    """A code edit whose text opens with "return", a search for "Back to the Future": the work
    itself, not navigation back (read as an undo, the edit was redundant and the read before it
    a detour, and the strategy left both out)."""
    edit = {"path": "utils/date.py", "old_str": "return (int(y), int(m), int(d))",
            "new_str": "return datetime.date(int(y), int(m), int(d))"}  # fmt: skip
    steps = [
        call(0, "bash", {"command": "cat utils/date.py"}, "def parse_date(s): ..."),
        call(1, "str_replace_editor", edit, "The file utils/date.py has been edited."),
        call(2, "bash", {"command": "python -m pytest tests/test_date.py"}, "1 passed"),
        call(3, "submit", {}, "submitted"),
    ]
    labels = labels_of(tv(task="Fix parse_date in utils/date.py to reject 2024-02-30"), steps)
    assert labels[0] == labels[1] == "necessary"
    film = "Back to the Future"
    search = [call(0, "Search", {"entity": film}, f"{film} is a 1985 film."),
              call(1, "Finish", {"answer": "1985"}, "Answer is CORRECT")]  # fmt: skip
    assert labels_of(tv(task="When was Back to the Future released?"), search)[0] == "necessary"


def test_a_step_that_only_fed_a_failed_call_is_redundant_in_a_success():
    read_log = {"cmd": "cat /var/log/app.log"}
    steps = [
        call(0, "ssh_exec", {"cmd": "ls /var/log"}, "app.log"),
        call(1, "ssh_exec", read_log, is_error=True, error_type="PermissionDenied"),
        call(2, "log_api_query", {"service": "payments"}, "OOM at 03:12 pid=4411"),
    ]
    labels = labels_of(tv(final_answer="killed by OOM, pid=4411"), steps)
    assert labels == {0: "redundant", 1: "failed", 2: "necessary"}


def test_a_call_nothing_used_is_redundant_with_low_confidence():
    steps = [
        call(0, "uptime", result="up 3 days"),
        call(1, "deploy", {"service": "svc-a"}, "deployed"),
    ]
    judged = judgements(tv(), steps)
    assert (judged[0].label, judged[0].confidence) == ("redundant", 0.55)


# ---------------------------------------------------------------------------- 3. necessary


def test_the_first_user_input_states_the_request():
    judged = judgements(tv(), [said(0, "svc-a times out"), call(1, "t", result="x")])
    assert (judged[0].label, judged[0].confidence) == ("necessary", 0.9)


def test_a_clicked_element_offered_by_an_earlier_result_makes_that_result_necessary():
    steps = [
        call(0, "list_catalog", {}, SEARCH_RESULTS),
        call(1, "weather", {"city": "Paris"}, "sunny"),
        *bon_jovi_purchase(2),
    ]
    judged = judgements(shop(), steps)
    assert (judged[0].label, judged[0].confidence) == ("necessary", 0.85)
    assert "verbatim" in judged[0].reason and "step 2" in judged[0].reason
    assert judged[1].label == "redundant"


def test_a_value_used_by_a_later_necessary_step_makes_a_step_necessary():
    steps = [
        call(0, "find_user", {"email": "a@b.c"}, "user_id=u-93817"),
        call(1, "weather", {"city": "Paris"}, "sunny"),
        call(2, "list_orders", {"user_id": "u-93817"}, "order-55120"),
    ]
    labels = labels_of(tv(final_answer="Your last order is order-55120."), steps)
    assert labels == {0: "necessary", 1: "redundant", 2: "necessary"}


def test_a_value_link_is_weaker_evidence_than_a_verbatim_one():
    found = call(0, "find_user", {"email": "a@b.c"}, "user_id=u-93817")
    mentioned = [found, call(1, "notify", {"text": "Hello u-93817, your order is late"}, "sent")]
    judged = judgements(tv(), mentioned)
    assert (judged[0].label, judged[0].confidence) == ("necessary", 0.75)

    verbatim = [found, call(1, "list_orders", {"user_id": "u-93817"})]
    assert judgements(tv(), verbatim)[0].confidence == 0.85


def test_a_value_is_credited_to_the_latest_step_that_produced_it():
    steps = [
        call(0, "lookup", {"table": "pending"}, "order-7781 pending"),
        call(1, "lookup", {"table": "shipped"}, "order-7781 shipped today"),
        call(2, "send", {"text": "Your order order-7781 shipped"}, "sent"),
    ]
    labels = labels_of(tv(task="Tell the customer when their parcel ships"), steps)
    assert labels == {0: "redundant", 1: "necessary", 2: "necessary"}


def test_without_a_final_answer_the_last_call_of_a_success_is_necessary():
    steps = [call(0, "a", result="fine"), call(1, "deploy", result="done")]
    judged = judgements(tv(outcome="success"), steps)
    assert (judged[1].label, judged[1].confidence) == ("necessary", 0.8)
    assert judged[0].label == "redundant"


def test_without_a_final_answer_the_last_successful_call_is_necessary():
    steps = [
        call(0, "a", result="fine"),
        call(1, "deploy", result="done"),
        call(2, "notify", is_error=True),
    ]
    labels = labels_of(tv(outcome="success"), steps)
    assert labels == {0: "redundant", 1: "necessary", 2: "failed"}


def test_a_successful_run_whose_answer_names_no_value_still_has_an_effective_call():
    steps = [call(0, "check", result="fine"), call(1, "restart_pool", result="ok")]
    labels = labels_of(
        tv(outcome="success", final_answer="Raised the pool size; errors stopped."), steps
    )
    assert labels == {0: "redundant", 1: "necessary"}


def test_a_call_acting_on_the_request_is_necessary_with_low_confidence():
    judged = judgements(tv(task="Restart the payments worker"), payments_worker_restart(0))
    assert (judged[1].label, judged[1].confidence) == ("necessary", 0.6)
    assert "request" in judged[1].reason
    assert judged[0].label == "redundant"


def test_a_blind_action_on_a_service_the_request_names_is_not_credited_when_an_answer_exists():
    trace, steps = seed_000_trajectory()
    assert steps[2].arguments == {"container": "svc-b"}  # svc-b is in the request
    assert labels_of(trace, steps)[2] == "redundant"  # no thought read it, the answer exists


# ---------------------------------------------------------------------------- 4. misleading


def test_a_result_the_agent_turned_down_and_never_used_is_misleading():
    album = "Slippery When Wet is the third studio album, released in August 1986."
    judged = judgements(
        *turned_down_trajectory(
            ("Bon Jovi album", album),
            "This does not mention when the band was formed.",
            ("Bon Jovi band", BON_JOVI_BAND),
        )
    )
    assert (judged[0].label, judged[0].confidence) == ("misleading", 0.55)
    assert "turned its result down at step 1" in judged[0].reason
    assert judged[2].label == judged[3].label == judged[4].label == "necessary"


def test_a_product_page_turned_down_as_too_expensive_is_misleading():
    steps = [
        hits_search(0),
        call(1, "click", {"target": "B08Y2"}, "Queen $24.99 [Buy Now]"),
        thought(2, "This one is too expensive."),
        call(3, "click", {"target": "B07X1"}, "Bon Jovi $14.99 [Buy Now]"),
        call(4, "click", {"target": "Buy Now"}, "Thank you"),
    ]
    assert labels_of(shop(), steps)[1] == "misleading"


def test_a_turned_down_result_the_run_used_later_stays_necessary():
    band = "Bon Jovi is a rock band from Sayreville, founded by Jon Bongiovi."
    judged = judgements(
        *turned_down_trajectory(
            ("Bon Jovi", band),
            "This does not say when they formed.",
            ("Jon Bongiovi", "Jon Bongiovi started the band Bon Jovi in 1983."),
        )
    )
    assert judged[0].label == "necessary"  # its founder's name was searched next
    assert (judged[1].label, judged[1].confidence) == ("misleading", 0.55)
    assert "used later" in judged[1].reason


def test_a_call_undone_right_after_is_misleading():
    judged = judgements(*back_and_forth_trajectory())
    assert (judged[1].label, judged[1].confidence) == ("misleading", 0.55)
    assert "undone at step 2" in judged[1].reason


def test_in_a_failed_run_the_first_choice_of_an_offered_item_is_the_wrong_turn():
    judged = judgements(*wrong_turn_trajectory())
    assert (judged[3].label, judged[3].confidence) == ("misleading", 0.6)
    assert "wrong turn" in judged[3].reason


def test_in_a_failed_run_the_calls_that_built_on_the_wrong_turn_are_misleading():
    judged = judgements(*wrong_turn_trajectory())
    assert judged[4].label == "misleading"
    assert "wrong turn at step 3" in judged[4].reason


def test_in_a_failed_run_the_right_moves_before_the_wrong_turn_are_necessary():
    judged = judgements(*wrong_turn_trajectory())
    assert (judged[1].label, judged[1].confidence) == ("necessary", 0.55)
    assert judged[0].label == "necessary"


def test_in_a_partly_failed_run_the_wrong_turn_is_the_last_choice():
    _, steps = wrong_turn_trajectory()
    steps[-1] = call(5, "click", {"target": "Buy Now"}, "Your score: 0.5 of 1.0")
    judged = judgements(shop("partial"), steps)
    assert judged[4].label == "misleading" and "wrong turn" in judged[4].reason
    assert "wrong turn" not in judged[3].reason
    assert judged[5].label == "misleading"  # it committed a result that only partly met it


def test_the_final_action_of_a_failed_run_without_a_verdict_is_misleading():
    judged = judgements(tv(outcome="failure"), libssl_install())
    assert (judged[1].label, judged[1].confidence) == ("misleading", 0.6)


def test_a_call_the_user_complained_about_right_after_is_misleading():
    steps = [
        said(0, "Restart the payments worker in prod"),
        call(1, "restart", {"ns": "staging"}, "restarted in staging"),
        said(2, "That's wrong, I said prod"),
        call(3, "restart", {"ns": "prod"}, "restarted in prod"),
    ]
    judged = judgements(tv(task="Restart the payments worker in prod"), steps)
    assert (judged[1].label, judged[1].confidence) == ("misleading", 0.7)
    assert judged[3].label == "necessary"


def test_a_complaint_is_recognised_when_the_task_came_in_the_trace_not_a_user_turn():
    steps = [
        call(0, "restart", {"ns": "staging"}, "restarted in staging"),
        said(1, "That's wrong, I said prod"),
        call(2, "restart", {"ns": "prod"}, "restarted in prod"),
    ]
    assert labels_of(tv(task="Restart the payments worker in prod"), steps)[0] == "misleading"


# ---------------------------------------------------------------------------- 5. reasoning


def test_a_thought_deciding_a_necessary_call_is_necessary():
    steps = [
        call(0, "uptime", result="up 3 days"),
        thought(1, "Now deploy it."),
        call(2, "deploy", result="done"),
    ]
    judged = judgements(tv(), steps)
    assert (judged[1].label, judged[1].confidence) == ("necessary", 0.7)
    assert "decides step 2" in judged[1].reason


def test_a_thought_deciding_a_misleading_call_is_misleading():
    judged = judgements(*wrong_turn_trajectory())
    assert judged[2].label == "misleading"
    assert "decides step 3" in judged[2].reason


def test_a_thought_deciding_a_failed_call_in_a_run_that_recovered_is_redundant():
    steps = [thought(0, "Let me look."), missing_config(1), found_config(2)]
    judged = judgements(tv(task="Read the app port", final_answer="port 8443"), steps)
    assert (judged[0].label, judged[0].confidence) == ("redundant", 0.55)


def test_a_thought_deciding_the_first_failed_call_is_a_try_not_misleading():
    steps = [thought(0, "I will read the config file."), missing_config(1)]
    assert labels_of(tv(task="Read the app port", outcome="failure"), steps)[0] == "redundant"


def test_a_thought_that_keeps_to_a_path_that_failed_before_is_misleading():
    steps = [
        missing_config(0),
        thought(1, "Let me try another place."),
        call(2, "read_file", {"path": "/etc/app/app.yml"}, is_error=True),
        found_config(3),
    ]
    labels = labels_of(tv(task="Read the app port", final_answer="port 8443"), steps)
    assert labels[1] == "misleading"


def test_a_thought_that_produced_the_final_answer_is_judged_by_the_answer_not_the_next_call():
    trace, steps = refused_answer_trajectory()
    judged = judgements(trace, steps)
    assert "decides" not in judged[3].reason  # it produced the answer: rule 4, not rule 5

    success = tv(task=trace.task, outcome="success", final_answer="1983")
    steps[3] = thought(3, "The band was formed in 1983.")
    steps[4] = call(4, "finish", {"answer": "1983"}, "Episode finished")
    judged = judgements(success, steps)
    assert judged[3].label == "necessary" and "final answer" in judged[3].reason


# ---------------------------------------------------------------------------- confidence


def test_confidence_reflects_the_evidence_behind_each_label():
    steps = [
        call(0, "kubectl_get", {"name": "pw-x"}, is_error=True, error_type="NotFound"),
        call(1, "kubectl_get", {"name": "pay"}, "Error: not found"),
        *payments_worker_restart(2),
    ]
    judged = judgements(tv(task="Restart the payments worker"), steps)
    confidence = {i: j.confidence for i, j in judged.items()}

    assert confidence[0] == 0.95  # the error flag
    assert confidence[1] == 0.8  # an error read from the text
    assert confidence[3] == 0.6  # only acts on the request
    assert confidence[2] == 0.55  # nothing used it
    assert confidence[0] > confidence[1] > confidence[3] > confidence[2]


# ---------------------------------------------------------------------------- the template


def test_a_success_yields_a_strategy_of_tool_calls_with_placeholders():
    template = review(shop(), [hits_search(0), *bon_jovi_purchase(1)]).template
    assert template.experience == (
        "When you use click, first search <query from the request>, then click <target from "
        "search>; call it with <target from click>."
    )
    assert template.strategy == (
        "search <query from the request>, then click <target from search>, then click <target "
        "from click>"
    )
    assert template.pitfall == ""
    assert template.replay == (
        'The same case ran before (success): search "greatest hits album", then click "B07X1", '
        'then click "Buy Now".'
    )


def test_a_success_that_went_wrong_on_the_way_adds_what_not_to_do():
    steps = [missing_config(0, error_type="FileNotFoundError"), found_config(1)]
    template = review(tv(final_answer="port 8443"), steps).template
    assert template.experience == (
        'When you use read_file: call it with "/etc/app/config.yml". read_file "/etc/app.yml" '
        'can fail (it returned "FileNotFoundError"): then change its arguments, do not repeat it.'
    )
    assert template.blamed_step == 0


def test_a_tool_that_also_worked_is_not_avoided_wholesale():
    not_found = {"error_type": "FileNotFoundError", "result": "FileNotFoundError: /etc/app.yml"}
    steps = [missing_config(0, **not_found), found_config(1)]
    template = review(tv(final_answer="port 8443"), steps).template

    assert not re.search(r"(?i)(avoid|do not) read_file(?! \")", template.experience)
    assert 'avoid read_file "/etc/app.yml"' in " ".join(template.improvements)
    assert any(
        "read_file" in line and "FileNotFoundError" in line for line in template.key_decisions
    )


def test_a_greeting_only_opening_is_dropped_from_the_scene_and_identifiers_are_kept():
    steps = [
        said(0, "Hello there, hope you are well."),
        said(1, "Pod svc-a-7d9f in prod-eu is OOMKilled since 10:42."),
        call(2, "kubectl_logs", {"pod": "svc-a-7d9f"}, "OOM pid=4411"),
    ]
    template = review(tv(task="Hi!"), steps).template

    assert template.scene_summary == "Pod svc-a-7d9f in prod-eu is OOMKilled since 10:42."
    # The scene is what the experience is matched on; the advice does not quote it.
    assert template.experience == "When you use kubectl_logs: call it with <pod from the request>."
    assert not re.search(r"(?i)\b(hi|hello|hope you are well)\b", template.experience)


@pytest.mark.parametrize(
    "request_text",
    [
        "Hi! Restart worker pw-6f in prod-eu.",
        "Hello there, hope you are well. Restart worker pw-6f in prod-eu.",
        "Hi, restart worker pw-6f in prod-eu.",
    ],
)
def test_a_greeting_in_front_of_the_request_is_dropped(request_text):
    summary = scene_summary(request_text)
    assert "pw-6f" in summary and "prod-eu" in summary
    assert not re.search(r"(?i)\b(hi|hello|hope)\b", summary)


def test_a_long_request_is_cut_to_100_to_150_characters_at_a_word_boundary():
    text = (
        "The checkout service svc-checkout-5f7c in namespace prod-eu returns HTTP 502 for roughly "
        "one request in ten since the deploy at 10:42 yesterday; the on-call engineer already "
        "restarted it twice without any effect, please find the root cause."
    )
    summary = scene_summary(text)

    assert SUMMARY_MIN_CHARS <= len(summary) <= SUMMARY_CHARS
    assert summary.endswith("…")
    kept = summary[:-1]
    assert text.startswith(kept) and text[len(kept)] == " "  # a whole word, not half of one
    assert "svc-checkout-5f7c" in summary


def test_long_json_arguments_are_summarised_never_cut_mid_json():
    arguments = {
        "query": "cheapest wireless noise cancelling headphones with at least 30 hours of battery "
        "life and usb-c charging",
        "filters": {"price_max": 100, "brand": "Sony"},
        "tags": ["audio", "bluetooth", "sale"],
        "page": 2,
    }
    steps = [
        call(0, "search_products", arguments, "[B0C9XK1] Sony $89"),
        call(1, "click", {"target": "B0C9XK1"}, "Thank you"),
    ]
    template = review(tv(task="Buy wireless noise cancelling headphones"), steps).template
    phrase = action_phrase(steps[0])

    assert "filters={2 fields}" in phrase and "tags=[3 items]" in phrase and "page=2" in phrase
    assert phrase.startswith("search_products query=cheapest wireless")
    for text in (phrase, template.experience, template.strategy, *template.execution_path):
        assert not re.search(r'[{\[]\s*"|":|\\"', text), text  # no JSON syntax, whole or cut


def test_the_strategy_is_not_a_bare_list_of_tool_names():
    template = review(*seed_000_trajectory()).template
    for tool in ("kubectl_get_pods", "kubectl_logs", "kubectl_get_networkpolicy"):
        assert re.search(rf"{tool} <\w+ from [\w ]+>", template.strategy), template.strategy
    assert not re.search(r"\b\w+, then \w+(,|\.|$)", template.experience)


def test_a_refused_purchase_teaches_to_check_it_not_to_stop_buying():
    template = review(*wrong_turn_trajectory()).template
    assert template.experience == (
        'When you use click: click <target from click> was refused (the checker said "Your '
        'score (min 0.0, max 1.0): 0.0"); check it against every part of the request before you '
        "click."
    )
    assert "B08Y2" not in template.experience  # that run's product, not the next one's
    assert 'click "Buy Now" was refused: the checker said' in template.replay


def test_a_refused_answer_names_where_it_came_from_without_its_value():
    trace, steps = refused_answer_trajectory()
    template = review(trace, steps).template
    assert template.experience.startswith("When you use finish: finish <answer of the case> was")
    assert "1985" not in template.experience
    assert 'finish "1985" was refused: the checker said "Answer is INCORRECT"' in template.replay
    assert template.blamed_step == 4


def test_a_look_up_that_failed_teaches_what_to_do_when_it_fails_not_to_stop_looking():
    steps = [
        missing_config(0, error_type="FileNotFoundError"),
        call(1, "list_dir", {"path": "/etc/app"}, "config.yml\nREADME"),
        call(2, "read_file", {"path": "/etc/app/config.yml"}, "no port set"),
        thought(3, "The port is not configured."),
    ]
    trace = tv(task="What port does the app in /etc/app listen on?", outcome="failure")
    experience = review(trace, steps).template.experience
    assert experience == (
        'When you use read_file: read_file "/etc/app.yml" can fail (it returned '
        '"FileNotFoundError"); then list_dir <path from the request> instead.'
    )


def test_a_failed_trajectory_yields_a_lesson_and_does_not_offer_the_same_failure_as_the_fix():
    not_found = {"error_type": "PackageNotFound", "result": "E: Unable to locate package libssl1.1"}
    steps = libssl_install(**not_found)
    trace = tv(outcome="failure", final_answer="libssl3 installed but the build still fails")
    template = review(trace, steps).template

    assert template.worth_reference
    # The next install worked: the package name was wrong, not installing ("do not apt_install
    # <pkg of the case>" read as "do not install").
    assert template.experience == (
        "When you use apt_install: apt_install <pkg of the case> can fail (it returned "
        '"PackageNotFound"); then change its arguments, do not repeat it.'
    )
    assert "Instead," not in template.experience  # nothing necessary came after it
    assert 'avoid apt_install "libssl1.1": it failed' in template.improvements


def test_a_failed_run_that_never_called_a_tool_teaches_not_to_answer_without_one():
    steps = [
        sv(0, "user_input", content="What is the sum of my gift card balances?"),
        thought(1, "I'm unable to access your gift card balances. Anything else?"),
        sv(2, "user_input", content="No, thanks."),
        thought(3, "You're welcome!"),
    ]
    template = review(tv(task="What is my gift card balance?", outcome="failure"), steps).template

    assert template.worth_reference
    assert template.pitfall == (
        "answer without calling a tool (the first reply was \"I'm unable to access your gift "
        'card balances.")'
    )
    assert template.experience.endswith(f"do not {template.pitfall}: the run failed.")


@pytest.mark.parametrize(
    "result",
    ["[]", '[{"flight": "HAT069"}, {"flight": "HAT276"}]', '{"reservation_id": "H9ZU1C"}'],
)
def test_a_look_up_whose_result_was_used_is_never_what_a_lesson_forbids(result):
    steps = [
        call(0, "search_direct_flight", {"origin": "EWR", "date": "2024-05-25"}, result),
        thought(1, "No flight fits, so I give up."),
    ]
    trace = tv(task="Move my flight to May 25", outcome="failure")
    labels = {0: "misleading", 1: "redundant"}
    template = build_template(
        request_for(trace, steps),
        {i: StepJudgement(index=i, label=labels[i], reason="r", confidence=0.9) for i in labels},
    )
    # The search only read: the lesson is about how the run ended, in words, never its keys.
    assert "do not search_direct_flight" not in template.experience
    assert (
        template.pitfall == 'end with a reply like "No flight fits, so I give up.": the run failed'
    )
    assert template.blamed_step == 1


def test_a_failed_run_that_only_looked_up_and_answered_is_warned_of_never_forbidden():
    """Only the outcome speaks against the final reply: it may have been right and the run wrong
    for what it left undone (a change the request needed), so the lesson says to check the
    request is done, and never "do not end with a reply like …"."""
    steps = [
        sv(0, "user_input", content="Can I pay the upgrade with my gift card? Then upgrade me."),
        call(1, "get_user_details", {"user_id": "mia_li_3668"}, '{"gift_card_7": 120}'),
        call(2, "get_reservation_details", {"reservation_id": "K1NW8N"}, '{"cabin": "economy"}'),
        thought(3, "Yes, you can use a gift card for the payment when making the upgrade."),
    ]
    trace = tv(task="Upgrade my trip K1NW8N", outcome="failure")
    labels = {0: "necessary", 1: "necessary", 2: "necessary", 3: "misleading"}
    template = build_template(
        request_for(trace, steps),
        {i: StepJudgement(index=i, label=labels[i], reason="r", confidence=0.9) for i in labels},
    )
    assert template.experience == (
        "When you answer: a run that only looked things up (get_user_details, "
        "get_reservation_details) and then answered failed; before you answer, check that you "
        "have done every part of the request, changes included."
    )
    assert "do not" not in template.experience.lower()
    # The same case sees what the run answered, and that its undone part may be the mistake.
    assert template.replay.endswith(
        '; it answered "Yes, you can use a gift card for the payment when making…" and the '
        "run failed: find what the request needs that this run did not do before you answer."
    )
    assert "do not" not in template.replay
    assert any(i.startswith("before the final reply, check") for i in template.improvements)


def test_a_trajectory_with_nothing_to_learn_is_not_worth_referencing():
    steps = [thought(0, "thinking"), thought(1, "done")]
    outcome = review(tv(outcome="unknown"), steps)
    assert not outcome.template.worth_reference


def test_every_step_gets_exactly_one_label():
    trace, steps = wrong_turn_trajectory()
    template = review(trace, steps).template
    assert [j.index for j in template.labels] == [s.index for s in steps]
    assert set(template.effective_steps) | set(template.ineffective_steps) == {
        s.index for s in steps
    }


# ---------------------------------------------------------------------------- values


def test_key_values_are_identifiers_numbers_and_names():
    values = key_values("pod svc-a-7d9f at 10.0.3.17:8080 hit NetworkPolicy; error true the")
    assert {"svc-a-7d9f", "10.0.3.17", "8080", "networkpolicy"} <= values
    assert not {"error", "true", "the", "pod"} & values
