"""The scene, what a task is matched on (traces/review/scene.py): pure functions over text."""

from traces.review import scene
from traces.review.types import StepView


def step(index: int, kind: str, *, tool: str = "", arguments=None, content: str = "") -> StepView:
    return StepView(index=index, kind=kind, tool=tool, arguments=arguments, observation="",
                    observation_raw="", is_error=False, error_type="", content=content,
                    agent="a")  # fmt: skip


def test_the_request_drops_greetings_and_keeps_every_user_turn_before_the_first_call():
    steps = [
        step(0, "user_input", content="Thanks so much!"),
        step(1, "user_input", content="My user id is mia_li_3668"),
        step(2, "tool_call", tool="get_user_details", arguments={"user_id": "mia_li_3668"}),
        step(3, "user_input", content="Also cancel reservation K1NW8N."),
    ]

    request = scene.scene_request("Hi, I want to book a flight from JFK to SFO.", steps)

    # The greeting and the thanks carry nothing; the turn after the first call is not the request.
    assert request == "I want to book a flight from JFK to SFO. My user id is mia_li_3668"


def test_a_request_of_pleasantries_alone_is_kept_as_it_was():
    assert scene.scene_request("Hello!") == "Hello!"


def test_the_summary_is_cut_at_a_word_within_150_characters_and_the_request_is_whole():
    task = "Find why the web container restarts " + "and check the logs of every replica " * 10

    summary, request = scene.scene_summary(task), scene.scene_request(task)

    assert scene.SUMMARY_MIN_CHARS <= len(summary) <= scene.SUMMARY_CHARS
    assert summary.endswith("…") and not summary[:-1].endswith(" ")
    assert request == " ".join(task.split())  # under REQUEST_CHARS: nothing cut


def test_a_query_is_written_as_a_scene_is():
    text = "Good morning! Cancel reservation K1NW8N please."
    assert scene.query_request(text) == scene.scene_request(text)


def test_the_matched_text_is_the_request_and_the_intent_or_the_summary_for_old_experiences():
    assert scene.scene_text(summary="s", intent="i", request="r") == "r\ni"
    assert scene.scene_text(summary="s") == "s"


def test_runs_of_one_task_share_a_key_whatever_their_case_and_spacing():
    assert scene.task_key("Book  a Flight") == scene.task_key("book a flight")
    assert scene.task_key("book a flight") != scene.task_key("cancel a flight")


def test_keywords_are_the_identifiers_and_names_kept_whole_once_each():
    once = scene.keywords_of(["Cancel K1NW8N for mia_li_3668"])

    assert {"k1nw8n", "mia-li-3668"} <= set(once.split())  # the hyphened form: kept whole
    assert scene.keywords_of(["Cancel K1NW8N for mia_li_3668", "cancel K1NW8N"]) == once


def test_arguments_are_summarised_by_their_values_never_as_cut_json():
    assert scene.argument_summary({"query": "web"}) == '"web"'
    assert scene.argument_summary({"tail": 200, "force": True}) == "tail=200, force=true"
    assert scene.argument_summary({"flights": [1, 2], "payment": {"a": 1, "b": 2}}) == (
        "flights=[2 items], payment={2 fields}"
    )
    assert scene.argument_summary(None) == "" and scene.argument_summary([1, 2, 3]) == "3 items"


def test_a_step_reads_as_a_short_imperative():
    assert scene.action_phrase(step(1, "tool_call", tool="Search", arguments="Bon Jovi")) == (
        'Search "Bon Jovi"'
    )
    assert scene.action_phrase(step(2, "tool_call", tool="finish")) == "finish"
    assert scene.action_phrase(step(3, "user_input", content="yes")) == "user input: yes"


def test_a_first_sentence_never_ends_inside_brackets():
    line = "Could not find [SAS Institute, SAS Airlines and more of a long list"
    assert scene.first_sentence("Could not find [SAS]. Similar: [...]", 100) == (
        "Could not find [SAS]."
    )
    assert scene.first_sentence(line, 40) == "Could not find…"
