"""What recall hands an agent after real reviews: the strategy for a new case, the exact replay
for the same case, the family's workflow and insights, tools judged by their declarations."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from experiences.models import Experience, TaskFamily
from experiences.services.families import family_induce
from hindsight_site.review_tasks import review_trace
from traces.models import ToolProfile, Trace

pytestmark = pytest.mark.django_db

PROFILE = '{"user_id": "%s", "reservations": ["%s"]}'
RESERVATION = '{"reservation_id": "%s", "cabin": "economy", "status": "active"}'


def change_flight(external_id, user, reservation, *, outcome="success", read_first=True, **extra):
    """An airline agent moving a user's flight: look the user up, read the reservation (or not),
    change it."""
    steps = [
        {"index": 0, "kind": "user_input",
         "content": f"I am {user}. Please move my flight on reservation {reservation} to May 25."},
        {"index": 1, "kind": "tool_call", "tool": "get_user_details",
         "arguments": {"user_id": user}, "observation": PROFILE % (user, reservation)},
    ]  # fmt: skip
    if read_first:
        steps.append(
            {"index": 2, "kind": "tool_call", "tool": "get_reservation_details",
             "arguments": {"reservation_id": reservation},
             "observation": RESERVATION % reservation}
        )  # fmt: skip
    steps += [
        {"index": 3, "kind": "tool_call", "tool": "update_reservation_flights",
         "arguments": {"reservation_id": reservation, "date": "2024-05-25"},
         "observation": RESERVATION % reservation},
        {"index": 4, "kind": "llm_reasoning", "content": "Your flight is moved."},
    ]  # fmt: skip
    return {
        "external_id": external_id,
        "agent": "airline-bot",
        "task": steps[0]["content"],
        "environment": ["airline"],
        "outcome": outcome,
        "steps": steps,
        **extra,
    }


@pytest.fixture
def post(api_for, project, make_key):
    client = api_for(make_key(project, ("ingest", "recall")))

    def send(path, body):
        response = client.post(path, body)
        assert response.status_code in (200, 201), response.json()
        return response.json()

    return send


@pytest.fixture
def recall(post):
    def ask(task):
        return post("recall", {"task": task, "include_candidates": True})

    return ask


def failed_question(post, external_id: str, question: str, steps: list[dict]) -> Experience:
    """A question-answering run that failed, reviewed; its one episode."""
    body = {"external_id": external_id, "agent": "react", "task": question,
            "outcome": "failure", "steps": [{"index": 0, "kind": "user_input",
                                             "content": question}, *steps]}  # fmt: skip
    reviewed(post, body)
    (lesson,) = Experience.objects.filter(kind="episode")
    return lesson


def reviewed(post, body) -> Trace:
    trace_id = post("traces", body)["id"]
    assert review_trace(trace_id) == "reviewed"
    return Trace.objects.get(pk=trace_id)


def test_the_same_case_gets_the_exact_replay_and_a_new_case_only_the_strategy(post):
    reviewed(post, change_flight("run-1", "omar_rossi_1241", "UM3OG5"))

    same = post(
        "recall", {"task": "I am omar_rossi_1241, move my flight", "include_candidates": True}
    )
    (item,) = same["items"]
    assert item["kind"] == "episode" and item["same_instance"] is True
    assert 'get_user_details "omar_rossi_1241"' in item["replay"]
    assert "omar_rossi_1241" in same["prompt_block"] and "Same case" in same["prompt_block"]

    other = post(
        "recall", {"task": "I am mia_li_3668, move my flight to June", "include_candidates": True}
    )
    (item,) = other["items"]
    assert item["same_instance"] is False and item["replay"] == ""
    assert "get_user_details <user_id from the request>" in item["advice"]
    for literal in ("omar_rossi_1241", "UM3OG5"):
        assert literal not in other["prompt_block"]


def test_the_same_user_with_another_kind_of_request_is_a_new_case(post):
    reviewed(post, change_flight("run-1", "omar_rossi_1241", "UM3OG5"))

    answer = post(
        "recall",
        {"task": "omar_rossi_1241 here. What is the weather like in Paris in spring?",
         "include_candidates": True},
    )  # fmt: skip
    assert answer["items"]
    for item in answer["items"]:  # named, but asking another thing: the strategy, not the replay
        assert item["same_instance"] is False and item["replay"] == ""
        assert item["score_parts"]["similarity"] < 0.5
    assert "UM3OG5" not in answer["prompt_block"]


def handed_over(external_id, user, reservation):
    """An airline agent that read the reservation and passed the case to a human agent."""
    steps = [
        {"index": 0, "kind": "user_input",
         "content": f"I am {user}. Please cancel reservation {reservation} and refund me."},
        {"index": 1, "kind": "tool_call", "tool": "get_reservation_details",
         "arguments": {"reservation_id": reservation}, "observation": RESERVATION % reservation},
        {"index": 2, "kind": "tool_call", "tool": "transfer_to_human_agents",
         "arguments": {"summary": f"{user} wants {reservation} cancelled"},
         "observation": "Transfer successful"},
    ]  # fmt: skip
    return {"external_id": external_id, "agent": "airline-bot", "task": steps[0]["content"],
            "environment": ["airline"], "outcome": "success", "steps": steps}  # fmt: skip


def test_a_success_that_only_handed_over_is_served_to_its_own_case_alone(post, recall):
    reviewed(post, handed_over("hand-1", "omar_rossi_1241", "UM3OG5"))
    (episode,) = Experience.objects.filter(kind="episode")
    assert episode.same_case_only  # its only change was the hand-off
    assert episode.advice.startswith("When you use transfer_to_human_agents, first ")

    same = recall("I am omar_rossi_1241. Please cancel reservation UM3OG5.")
    (item,) = same["items"]
    assert item["same_instance"] is True and "transfer_to_human_agents" in item["replay"]

    other = recall("I am mia_li_3668. Please cancel reservation K1NW8N.")
    assert other["items"] == [] and other["prompt_block"] == ""

    # A run that changed something before it handed over is a strategy for other cases.
    changed = handed_over("hand-2", "sara_doe_496", "ZFA04Y")
    changed["steps"].insert(
        2,
        {"index": 5, "kind": "tool_call", "tool": "cancel_reservation",
         "arguments": {"reservation_id": "ZFA04Y"}, "observation": RESERVATION % "ZFA04Y"},
    )  # fmt: skip
    reviewed(post, changed)
    assert not Experience.objects.get(kind="episode", task__contains="ZFA04Y").same_case_only
    other = recall("I am mia_li_3668. Please cancel reservation K1NW8N.")
    assert [i["same_instance"] for i in other["items"]] == [False]


def test_the_same_case_done_without_a_hand_off_is_not_served_with_one(post, recall):
    handed = change_flight("run-handed", "omar_rossi_1241", "UM3OG5")
    handed["steps"].append(
        {"index": 5, "kind": "tool_call", "tool": "transfer_to_human_agents",
         "arguments": {"summary": "flight moved, the user wants a refund too"},
         "observation": "Transfer successful"}
    )  # fmt: skip
    reviewed(post, handed)
    reviewed(post, change_flight("run-done", "omar_rossi_1241", "UM3OG5"))
    episode = Experience.objects.get(sources__trace__external_id="run-handed")
    assert "handed the case to a person" in episode.replay

    answer = recall("I am omar_rossi_1241. Please move my flight on reservation UM3OG5 to May 25.")
    same = [i for i in answer["items"] if i["same_instance"]]
    # The same change without the hand-off was the case done: the run that then handed it over
    # is not served (it would teach passing on a case the agent can finish).
    assert len(same) == 1 and "update_reservation_flights" in same[0]["replay"]
    assert "handed the case to a person" not in answer["prompt_block"]


def test_a_lesson_about_a_refused_answer_is_served_to_its_own_question_alone(post, recall):
    question = "In which city is the museum that Willem Sandberg directed?"
    lesson = failed_question(post, "qa-1", question, [
        {"index": 1, "kind": "tool_call", "tool": "Search", "arguments": {"entity": "Sandberg"},
         "observation": "Willem Sandberg directed the Stedelijk Museum in Amsterdam."},
        {"index": 2, "kind": "tool_call", "tool": "Finish", "arguments": {"answer": "Rotterdam"},
         "observation": "Answer is INCORRECT"},
    ])  # fmt: skip
    assert lesson.blame["evidence"] == "the checker refused it" and lesson.same_case_only

    (item,) = recall(question)["items"]
    assert item["same_instance"] is True and 'Finish "Rotterdam" was refused' in item["replay"]
    assert recall("In which city is the museum that Rudi Fuchs directed?")["items"] == []


def test_a_lesson_about_a_look_up_that_found_nothing_is_served_to_its_own_question_alone(
    post, recall
):
    question = "Which river flows through the capital of the Sandberg province?"
    lesson = failed_question(post, "qa-2", question, [
        {"index": 1, "kind": "tool_call", "tool": "Search",
         "arguments": {"entity": "Sandberg province"},
         "observation": "Could not find [Sandberg province]."},
        {"index": 2, "kind": "llm_reasoning", "content": "I could not find it."},
    ])  # fmt: skip
    assert lesson.blame["evidence"] == "it failed" and lesson.same_case_only

    (item,) = recall(question)["items"]
    assert item["same_instance"] is True and "Sandberg province" in item["replay"]
    assert recall("Which river flows through the capital of the Fuchs province?")["items"] == []


def test_a_family_yields_a_workflow_and_an_insight_served_for_a_new_task(post):
    reviewed(post, change_flight("ok-1", "omar_rossi_1241", "UM3OG5"))
    reviewed(post, change_flight("ok-2", "sara_doe_496", "ZFA04Y"))
    reviewed(
        post,
        change_flight("bad-1", "noah_brown_123", "K1NW8N", outcome="failure", read_first=False),
    )
    family = TaskFamily.objects.get()
    assert (family.signature, family.size) == ("update_reservation_flights", 3)

    assert family_induce(family_id=family.pk) == "3 item(s)"
    assert family_induce(family_id=family.pk) == "up to date"
    workflow = Experience.objects.get(kind="workflow")
    assert workflow.advice == (
        "When you use update_reservation_flights, first get_user_details <user_id from the "
        "request>, then get_reservation_details <reservation_id from the request>; call it with "
        "<date of the case> <reservation_id from the request>."
    )
    assert workflow.support_count == 2 and workflow.sources.count() == 2
    insights = [e.advice for e in Experience.objects.filter(kind="insight")]
    assert (
        "When you use update_reservation_flights: successful runs call get_reservation_details "
        "before it (2 of 2 successful runs, 0 of 1 failed runs)."
    ) in insights, insights

    answer = post(
        "recall",
        {"task": "I am li_wei_77, please move my flight on reservation QQ12AB to June 3.",
         "include_candidates": True},
    )  # fmt: skip
    kinds = [i["kind"] for i in answer["items"]]
    assert "workflow" in kinds and "insight" in kinds
    assert answer["prompt_block"].splitlines()[1].startswith("- Workflow (2 successful runs): ")
    assert len(answer["prompt_block"]) <= 1000


def test_one_user_s_request_run_again_is_no_family_s_workflow(post):
    # Two successes of one case: what they share is that case's (its episodes replay it).
    reviewed(post, change_flight("ok-1", "omar_rossi_1241", "UM3OG5"))
    reviewed(post, change_flight("ok-2", "omar_rossi_1241", "UM3OG5"))
    family = TaskFamily.objects.get()
    assert family_induce(family_id=family.pk) == "0 item(s)"
    reviewed(post, change_flight("ok-3", "sara_doe_496", "ZFA04Y"))
    assert family_induce(family_id=family.pk) != "0 item(s)"
    assert Experience.objects.get(kind="workflow").support_count == 3


def test_a_family_s_runs_send_one_induction_while_one_is_due(
    post, monkeypatch, django_capture_on_commit_callbacks
):
    from core import publish

    sent = []
    monkeypatch.setattr(publish, "tasks_publish", lambda name, calls: sent.append(name) or 1)
    runs = [("omar_rossi_1241", "UM3OG5"), ("sara_doe_496", "ZFA04Y"), ("li_wei_77", "QQ12AB")]
    for n, (user, reservation) in enumerate(runs):
        with django_capture_on_commit_callbacks(execute=True):
            reviewed(post, change_flight(f"ok-{n}", user, reservation))
    # The first run's induction is due until it runs: the two runs after it send none.
    assert sent.count("experiences.induce_family") == 1
    family = TaskFamily.objects.get()
    assert (family.size, family.induced_size) == (3, 0)
    assert family_induce(family_id=family.pk) == "1 item(s)"
    assert Experience.objects.get(kind="workflow").support_count == 3  # every run was read
    with django_capture_on_commit_callbacks(execute=True):
        reviewed(post, change_flight("ok-3", "noah_brown_123", "K1NW8N"))
    assert sent.count("experiences.induce_family") == 2


def test_a_review_sends_one_dedup_task_for_every_experience_it_made_due(
    post, monkeypatch, django_capture_on_commit_callbacks
):
    from core import publish

    sent = []
    monkeypatch.setattr(publish, "tasks_publish", lambda name, calls: sent.append((name, calls)))
    with django_capture_on_commit_callbacks(execute=True):
        reviewed(post, change_flight("ok-1", "omar_rossi_1241", "UM3OG5"))
    (success,) = Experience.objects.filter(kind="episode")
    sent.clear()
    failed = change_flight("bad-1", "omar_rossi_1241", "UM3OG5", outcome="failure")
    with django_capture_on_commit_callbacks(execute=True):
        reviewed(post, failed)
    failure = Experience.objects.exclude(pk=success.pk).get(kind="episode")
    success.refresh_from_db()
    assert "(that worked in another run of this task)" in failure.advice  # the contrast, both
    assert "it failed in an earlier run of this task" in success.advice  # ways
    checks = [calls for name, calls in sent if name.startswith("experiences.dedup")]
    assert checks == [[([failure.pk, success.pk],)]]  # one task: the new one, then the other


@pytest.mark.django_db(transaction=True)
def test_an_induction_waits_for_a_join_that_holds_its_family(post):
    import threading

    from django.db import connections, transaction

    reviewed(post, change_flight("ok-1", "omar_rossi_1241", "UM3OG5"))
    reviewed(post, change_flight("ok-2", "sara_doe_496", "ZFA04Y"))
    family = TaskFamily.objects.get()
    locked, release = threading.Event(), threading.Event()

    def join_in_progress():  # a review's transaction, between its join and its commit
        try:
            with transaction.atomic():
                TaskFamily.objects.select_for_update().get(pk=family.pk)
                locked.set()
                release.wait(5)
        finally:
            connections.close_all()

    holder = threading.Thread(target=join_in_progress)
    holder.start()
    assert locked.wait(5)
    threading.Timer(0.3, release.set).start()
    # The joins after the first sent no induction of their own: this one must not step aside.
    assert family_induce(family_id=family.pk) == "1 item(s)"
    holder.join()
    family.refresh_from_db()
    assert family.induced_size == family.size == 2


def test_an_episode_merged_into_another_is_no_member_of_its_family(post, monkeypatch):
    from experiences.services import families
    from experiences.services.merging import experience_merge

    reviewed(post, change_flight("ok-1", "omar_rossi_1241", "UM3OG5"))
    reviewed(post, change_flight("ok-2", "sara_doe_496", "ZFA04Y"))
    reviewed(post, change_flight("ok-3", "li_wei_77", "QQ12AB"))
    first, second, third = Experience.objects.filter(kind="episode").order_by("id")
    experience_merge(survivor_id=first.pk, absorbed_id=third.pk, similarity=0.99, kind="auto")
    # The induction reads the latest two episodes: the merged one is not among them.
    monkeypatch.setattr(families, "MAX_MEMBERS", 2)
    family = TaskFamily.objects.get()
    assert family_induce(family_id=family.pk) != "0 item(s)"
    workflow = Experience.objects.get(kind="workflow")
    assert workflow.support_count == 2
    assert set(workflow.sources.values_list("trace_id", flat=True)) >= {
        s.trace_id for s in second.sources.all()
    }


def test_a_declared_read_only_tool_is_never_what_a_lesson_forbids(post):
    # "reservations" has no verb: only its declaration says it reads. The failed run's user
    # objected right after it: the lesson blames the agent's reply, not the look-up.
    body = {
        "external_id": "declared-1", "agent": "airline-bot", "outcome": "failure",
        "task": "Which flights are on my reservation K1NW8N?",
        "tools": [{"name": "reservations", "description": "", "read_only": True}],
        "steps": [
            {"index": 0, "kind": "user_input", "content": "Which flights are on K1NW8N?"},
            {"index": 1, "kind": "tool_call", "tool": "reservations",
             "arguments": {"id": "K1NW8N"}, "observation": RESERVATION % "K1NW8N"},
            {"index": 2, "kind": "llm_reasoning", "content": "You fly HAT001 on May 20."},
            {"index": 3, "kind": "user_input", "content": "That's wrong, I fly on May 21."},
        ],
    }  # fmt: skip
    trace = reviewed(post, body)
    profile = ToolProfile.objects.get(name="reservations")
    assert (profile.declared_read_only, profile.calls, profile.runs) == (True, 1, 1)
    experience = Experience.objects.get(sources__trace=trace)
    assert experience.blame["index"] == 2 and experience.blame["evidence"] == "the user objected"
    assert "do not reservations" not in experience.advice


def test_an_imported_transcript_s_tool_schemas_are_its_declarations(post):
    body = {
        "format": "openai", "external_id": "chat-tools-1", "agent": "airline-bot",
        "outcome": "success",
        "tools": [{"type": "function", "function": {
            "name": "fetch_booking", "description": "Get the details of a booking.",
            "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "user", "content": "What is on booking K1NW8N?"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": "c1", "type": "function",
                "function": {"name": "fetch_booking", "arguments": '{"id": "K1NW8N"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "HAT001 on May 20"},
            {"role": "assistant", "content": "You fly HAT001 on May 20."},
        ],
    }  # fmt: skip
    post("traces/import", body)
    profile = ToolProfile.objects.get(name="fetch_booking")
    assert profile.description == "Get the details of a booking."
    assert profile.declared_read_only is None  # a schema says it in words only


def cancel_trip(external_id, user, reservation):
    """The same airline agent cancelling a reservation: another family (another change)."""
    steps = [
        {"index": 0, "kind": "user_input",
         "content": f"I am {user}. Please cancel my reservation {reservation}."},
        {"index": 1, "kind": "tool_call", "tool": "get_user_details",
         "arguments": {"user_id": user}, "observation": PROFILE % (user, reservation)},
        {"index": 2, "kind": "tool_call", "tool": "get_reservation_details",
         "arguments": {"reservation_id": reservation}, "observation": RESERVATION % reservation},
        {"index": 3, "kind": "tool_call", "tool": "cancel_reservation",
         "arguments": {"reservation_id": reservation},
         "observation": '{"status": "cancelled"}'},
        {"index": 4, "kind": "llm_reasoning", "content": "Your reservation is cancelled."},
    ]  # fmt: skip
    return {"external_id": external_id, "agent": "airline-bot", "task": steps[0]["content"],
            "environment": ["airline"], "outcome": "success", "steps": steps}  # fmt: skip


def test_a_request_whose_near_runs_split_between_families_is_told_the_ways(post, settings):
    for n, (user, reservation) in enumerate([("omar_rossi_1241", "UM3OG5"),
                                             ("sara_doe_496", "ZFA04Y")]):  # fmt: skip
        reviewed(post, change_flight(f"move-{n}", user, reservation))
        reviewed(post, cancel_trip(f"cancel-{n}", user, reservation))
    for family in TaskFamily.objects.all():
        family_induce(family_id=family.pk)
    assert {f.signature for f in TaskFamily.objects.all()} == {
        "update_reservation_flights",
        "cancel_reservation",
    }
    vague = {"task": "I am li_wei_77 and I need some help with my reservation QQ12AB.",
             "include_candidates": True}  # fmt: skip

    # No family holds the share the setting asks: the ways are named, the decision left open.
    settings.HINDSIGHT_RECALL_FAMILY_CLEAR_SHARE = 0.99
    split = post("recall", vague)
    ways = split["prompt_block"].splitlines()[1]
    assert ways.startswith("Successful runs of requests like this made different changes: ")
    assert "update_reservation_flights (2 runs)" in ways and "cancel_reservation (2 runs)" in ways
    assert ways.endswith("find out which this one needs before you change anything.")
    scores = [i["score"] for i in split["items"] if not i["same_instance"]]
    assert scores == sorted(scores, reverse=True)  # no workflow put ahead of its score

    # A clear vote: the asked family's workflow first, no ways line.
    settings.HINDSIGHT_RECALL_FAMILY_CLEAR_SHARE = 0.0
    clear = post("recall", vague)
    assert "made different changes" not in clear["prompt_block"]
    assert clear["prompt_block"].splitlines()[1].startswith("- Workflow (2 successful runs): ")


def test_a_run_that_stopped_short_teaches_its_task_s_success_to_finish_not_to_avoid_a_reply(post):
    """A failed run blamed on the reply it ended on (only the outcome spoke against it) adds to
    the same task's success that the failure stopped short, never "do not end with a reply like
    …" (the contrast of a success / failure pair)."""
    request = "I am omar_rossi_1241. Please move my flight on reservation UM3OG5 to May 25."
    stopped = {
        "external_id": "stopped-1", "agent": "airline-bot", "task": request,
        "environment": ["airline"], "outcome": "failure",
        "steps": [
            {"index": 0, "kind": "user_input", "content": request},
            {"index": 1, "kind": "tool_call", "tool": "get_user_details",
             "arguments": {"user_id": "omar_rossi_1241"},
             "observation": PROFILE % ("omar_rossi_1241", "UM3OG5")},
            {"index": 2, "kind": "tool_call", "tool": "get_reservation_details",
             "arguments": {"reservation_id": "UM3OG5"}, "observation": RESERVATION % "UM3OG5"},
            {"index": 3, "kind": "llm_reasoning",
             "content": "I'm sorry, that flight cannot be moved online."},
        ],
    }  # fmt: skip
    failure = reviewed(post, stopped).experience_sources.get().experience
    assert failure.blame["evidence"] == "the run ended on it"
    assert "do not" not in failure.advice.lower()

    reviewed(post, change_flight("moved-1", "omar_rossi_1241", "UM3OG5"))
    advice = Experience.objects.get(kind="episode", polarity="success").advice
    assert advice.endswith(
        " Do not answer before every part of the request is done (an earlier run of this task "
        "failed that way)."
    ), advice
    assert "end with a reply" not in advice


CHECK_CHANGE = (
    " Check update_reservation_flights against every part of the request before you "
    "update_reservation_flights: it failed in an earlier run of this task (the run failed)."
)


def test_a_success_and_a_failure_of_the_same_task_each_learn_from_the_other_once(post):
    success = reviewed(post, change_flight("ok-1", "omar_rossi_1241", "UM3OG5"))
    failure = reviewed(
        post,
        change_flight("bad-1", "omar_rossi_1241", "UM3OG5", outcome="failure", read_first=False),
    )
    won = Experience.objects.get(kind="episode", polarity="success")
    lost = Experience.objects.get(kind="episode", polarity="failure")
    # The success made the change the failure is blamed on too: "do not" would forbid its own
    # way, so it learns to check the change.
    assert won.advice.endswith(CHECK_CHANGE), won.advice
    assert " Instead, " in lost.advice
    assert lost.advice.endswith("(that worked in another run of this task)."), lost.advice
    # Each side's provenance holds the other run, and its history says why it changed.
    assert set(won.sources.values_list("trace_id", flat=True)) == {success.pk, failure.pk}
    assert set(lost.sources.values_list("trace_id", flat=True)) == {success.pk, failure.pk}
    for experience, other in ((won, lost), (lost, won)):
        newest = experience.versions.order_by("-version").first()
        assert (newest.version, newest.reason) == (
            2,
            f"contrasted with experience {other.pk} of the same task",
        )
    # The same lesson again adds nothing to the success.
    reviewed(
        post,
        change_flight("bad-2", "omar_rossi_1241", "UM3OG5", outcome="failure", read_first=False),
    )
    won.refresh_from_db()
    assert won.advice.count(CHECK_CHANGE) == 1


def test_a_success_learns_do_not_for_a_call_it_never_made(post):
    reviewed(post, change_flight("ok-1", "omar_rossi_1241", "UM3OG5"))
    cancelled = change_flight("bad-1", "omar_rossi_1241", "UM3OG5", outcome="failure")
    cancelled["steps"][3] |= {
        "tool": "cancel_reservation",
        "arguments": {"reservation_id": "UM3OG5"},
    }
    reviewed(post, cancelled)
    won = Experience.objects.get(kind="episode", polarity="success")
    assert won.advice.endswith(
        " Do not cancel_reservation <reservation_id from the request>: the run failed (an earlier "
        "run of this task failed that way)."
    ), won.advice


def test_a_contrast_changes_three_experiences_in_one_update(post):
    reviewed(post, change_flight("ok-1", "omar_rossi_1241", "UM3OG5"))
    reviewed(post, change_flight("ok-2", "omar_rossi_1241", "UM3OG5"))
    with CaptureQueriesContext(connection) as review:
        reviewed(
            post,
            change_flight(
                "bad-1", "omar_rossi_1241", "UM3OG5", outcome="failure", read_first=False
            ),
        )

    # Both successes learn from the failure, and the failure from one of them (the other
    # teaches the same): three experiences changed, each with a version saying why.
    lost = Experience.objects.get(kind="episode", polarity="failure")
    assert lost.versions.latest("version").reason.startswith("contrasted with experience ")
    for won in Experience.objects.filter(kind="episode", polarity="success"):
        assert won.versions.latest("version").reason == (
            f"contrasted with experience {lost.pk} of the same task"
        )
    updates = [q["sql"].strip().replace('"', "") for q in review.captured_queries]
    assert sum(sql.startswith("UPDATE experiences_experience ") for sql in updates) == 1


DECLARED = [
    *({"name": n, "description": "", "read_only": True}
      for n in ("get_user_details", "get_reservation_details")),
    *({"name": n, "description": "", "read_only": False}
      for n in ("update_reservation_flights", "cancel_reservation")),
]  # fmt: skip


def test_a_failed_run_of_the_same_case_is_told_what_its_successful_run_did_otherwise(post):
    # The outcome alone never says which change of a failed run was the mistake, or what it
    # left undone; the same case's successful run, served beside it, does.
    user, reservation = "omar_rossi_1241", "UM3OG5"
    reviewed(post, change_flight("run-ok", user, reservation, tools=DECLARED))
    failed = cancel_trip("run-failed", user, reservation) | {"outcome": "failure"}
    failed["tools"] = DECLARED
    failed["steps"][0]["content"] = failed["task"] = (
        f"I am {user}. Please move my flight on reservation {reservation} to May 25."
    )
    reviewed(post, failed)

    def served():
        answer = post("recall", {"task": f"I am {user}, move my flight on {reservation} please",
                                 "include_candidates": True})  # fmt: skip
        return {i["polarity"]: i for i in answer["items"] if i["same_instance"]}, answer

    same, answer = served()
    assert set(same) == {"success", "failure"}
    replay = same["failure"]["replay"]
    assert replay.startswith(
        "This case's successful run also made update_reservation_flights date=2024-05-25, "
        f"reservation_id={reservation}; the failed run below did not. "
        f'Do not make cancel_reservation "{reservation}" again: this case\'s successful run '
        "did not, and the run below failed after it. The same case ran before (failure): "
    ), replay
    assert replay[:200] in answer["prompt_block"]  # first: the block cuts a long line's end
    assert same["success"]["replay"].startswith("The same case ran before (success)")
    stored = Experience.objects.get(polarity="failure", kind="episode")
    assert stored.replay.startswith("The same case ran before (failure)")  # told when served

    # Two successful runs of the case that changed different things: no side is taken.
    other = cancel_trip("run-ok-2", user, reservation)
    other["tools"] = DECLARED
    other["steps"][0]["content"] = other["task"] = (
        f"I am {user}. Kindly move my flight on reservation {reservation} to May 25."
    )
    reviewed(post, other)
    same, _ = served()
    assert same["failure"]["replay"].startswith("The same case ran before (failure)")
