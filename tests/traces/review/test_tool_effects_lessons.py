"""What a lesson may forbid and how it is worded: tool effects (declared, described, behaviour,
name), the blame rules, and placeholders in place of one run's values (no database)."""

from dataclasses import replace

import pytest

from tests.support.review_builders import request_for, sv, tv
from traces.review.heuristic import HeuristicReviewer
from traces.review.heuristic.blame import blame_of, blames_a_failed_look_up, blames_the_answer
from traces.review.heuristic.guard import lesson_checked, rule_breaks
from traces.review.heuristic.placeholders import Sources, call_pattern
from traces.review.tool_effects import (
    Behaviour,
    Declaration,
    declarations_from,
    tool_effect,
    verb_effect,
)
from traces.review.types import StepJudgement

READ = "get_user_details"
WRITE = "update_reservation_flights"
PROFILE = '{"user_id": "omar_rossi_1241", "reservations": ["UM3OG5", "K1NW8N"]}'
RESERVATION = '{"reservation_id": "K1NW8N", "cabin": "economy", "flights": ["HAT001"]}'


def call(index, tool, arguments=None, result="", **fields):
    return sv(index, tool=tool, arguments=arguments or {}, observation=result, **fields)


def said(index, text):
    return sv(index, "user_input", content=text)


def reply(index, text):
    return sv(index, "llm_reasoning", content=text)


def airline_run(outcome="failure", complaint=""):
    """A user asks to change a flight: the agent reads the profile and the reservation (both
    used), then changes the flight; the run fails."""
    steps = [
        said(0, "Hi, I am omar_rossi_1241 and I want to move my flight to May 25."),
        call(1, READ, {"user_id": "omar_rossi_1241"}, PROFILE),
        call(2, "get_reservation_details", {"reservation_id": "K1NW8N"}, RESERVATION),
        call(3, WRITE, {"reservation_id": "K1NW8N", "cabin": "economy"}, RESERVATION),
        reply(4, "Your flight is now on May 25."),
    ]
    if complaint:
        steps.append(said(5, complaint))
    return tv(task=steps[0].content, outcome=outcome, environment=["airline"]), steps


def labels(steps, **overrides):
    chosen = {s.index: "necessary" for s in steps} | overrides
    return {
        i: StepJudgement(index=i, label=v, reason="r", confidence=0.9) for i, v in chosen.items()
    }


# ---------------------------------------------------------------------------- tool effects


@pytest.mark.parametrize(
    ("name", "read_only"),
    [
        ("get_user_details", True),
        ("Search", True),
        ("kubectl_logs", True),
        ("calculate", True),
        ("book_reservation", False),
        ("docker_restart", False),
        ("Finish", False),
        ("cancelPendingOrder", False),
        ("click", None),
    ],
)
def test_the_name_s_verb_says_whether_a_tool_reads(name, read_only):
    effect = tool_effect(name)
    assert (effect.read_only, effect.basis) == (
        read_only,
        "name" if read_only is not None else "unknown",
    )


def test_a_declaration_wins_over_the_description_behaviour_and_name():
    declared = Declaration("get_report", "Delete the report.", read_only=True)
    assert tool_effect("get_report", declared).basis == "declared"
    assert tool_effect("get_report", declared).read_only is True


def test_a_description_s_verb_says_it_when_nothing_is_declared():
    effect = tool_effect(
        "reservations", Declaration("reservations", "Cancel the whole reservation.")
    )
    assert (effect.read_only, effect.basis) == (False, "described")
    assert 'its description "Cancel the whole reservation." changes state' == effect.evidence


def test_behaviour_across_runs_comes_before_the_name():
    reads = Behaviour(calls=30, fed_calls=25, runs=10, final_in_runs=0, final_in_successes=0)
    commits = Behaviour(calls=30, fed_calls=25, runs=10, final_in_runs=9, final_in_successes=8)
    assert tool_effect("click", behaviour=reads).read_only is True
    assert tool_effect("click", behaviour=commits).read_only is False
    # A look-up that often ends a run (the answer was in what it read) still reads.
    assert tool_effect("read_file", behaviour=commits).read_only is True
    few = Behaviour(calls=3, fed_calls=3, runs=1, final_in_runs=0, final_in_successes=0)
    assert tool_effect("click", behaviour=few).basis == "unknown"


def test_a_tool_whose_runs_end_on_one_argument_commits_with_it_and_navigates_otherwise():
    shop = Behaviour(
        calls=40, fed_calls=30, runs=10, final_in_runs=10, final_in_successes=7,
        final_arguments={'"Buy Now"': 9, '"Back to Search"': 1},
    )  # fmt: skip
    click = tool_effect("click", behaviour=shop)
    assert (click.read_only, click.commit_arguments) == (False, '"Buy Now"')
    assert click.of_call('"Buy Now"').changes_state
    product = click.of_call('"B07X1"')
    assert product.is_read_only and "other calls only navigate" in product.evidence
    mixed = Behaviour(calls=40, fed_calls=30, runs=10, final_in_runs=10, final_in_successes=7,
                      final_arguments={'"a"': 5, '"b"': 5})  # fmt: skip
    assert tool_effect("click", behaviour=mixed).of_call('"B07X1"').changes_state


def test_behaviour_says_whether_a_tool_is_made_in_nearly_every_run():
    finish = Behaviour(calls=10, fed_calls=0, runs=10, final_in_runs=10, final_in_successes=6,
                       project_runs=10)  # fmt: skip
    hand_off = Behaviour(calls=2, fed_calls=0, runs=2, final_in_runs=2, final_in_successes=0,
                         project_runs=10)  # fmt: skip
    assert tool_effect("Finish", behaviour=finish).every_run is True
    assert tool_effect("transfer_to_human_agents", behaviour=hand_off).every_run is False
    # Too few runs to say, or nothing known of the project: None (read as "it may be").
    young = Behaviour(calls=1, fed_calls=0, runs=1, final_in_runs=1, final_in_successes=0,
                      project_runs=2)  # fmt: skip
    assert tool_effect("Finish", behaviour=young).every_run is None
    assert tool_effect("Finish").every_run is None


def test_declarations_are_read_from_native_openai_anthropic_and_mcp_shapes():
    found = declarations_from(
        [
            {"name": "lookup", "read_only": True},
            {"type": "function", "function": {"name": "book", "description": "Book a seat."}},
            {"name": "notes", "description": "Read notes", "input_schema": {}},
            {"name": "rm", "annotations": {"destructiveHint": True}},
            {"name": "ls", "annotations": {"readOnlyHint": True}},
            "not a tool",
            {"description": "no name"},
        ]
    )
    assert {n: (d.read_only, d.description) for n, d in found.items()} == {
        "lookup": (True, ""),
        "book": (None, "Book a seat."),
        "notes": (None, "Read notes"),
        "rm": (False, ""),
        "ls": (True, ""),
    }
    assert verb_effect(found["book"].description) is False


@pytest.mark.parametrize(
    ("name", "description", "hands_off"),
    [
        ("transfer_to_human_agents", "", True),
        ("escalate_to_support", "", True),
        ("handoff", "Hand the conversation to a human operator.", True),
        ("xfer", "Transfer the user to a human agent, with a summary of the issue.", True),
        ("transfer_funds", "Transfer money between two accounts.", False),
        ("get_agent_status", "", False),
    ],
)
def test_a_hand_off_passes_the_case_to_a_person(name, description, hands_off):
    effect = tool_effect(name, Declaration(name, description=description))
    assert effect.hands_off is hands_off
    if hands_off:
        assert effect.changes_state  # it acts: it is never what a lesson calls a look-up


def test_a_success_that_handed_the_case_over_is_taught_by_its_changes_or_on_its_condition():
    def review(*calls_made):
        steps = [said(0, "Hi, I am omar_rossi_1241 and I want to cancel reservation K1NW8N."),
                 call(1, READ, {"user_id": "omar_rossi_1241"}, PROFILE),
                 call(2, "get_reservation_details", {"reservation_id": "K1NW8N"}, RESERVATION),
                 *calls_made]  # fmt: skip
        trace = tv(task=steps[0].content, outcome="success", environment=["airline"])
        return HeuristicReviewer().review(request_for(trace, steps)).template

    hand_off = call(
        4, "transfer_to_human_agents", {"summary": "wants to cancel"}, "Transfer successful"
    )
    # A change, then the hand-off: the change is the way.
    changed = review(
        call(3, WRITE, {"reservation_id": "K1NW8N", "cabin": "economy"}, "{}"), hand_off
    )
    assert changed.experience.startswith(f"When you use {WRITE}, first ")
    assert "transfer_to_human_agents" not in changed.experience
    # The hand-off alone: it stays the condition (what to do if you hand over).
    only = review(
        call(
            3,
            "transfer_to_human_agents",
            {"summary": "wants to cancel K1NW8N"},
            "Transfer successful",
        )
    )
    assert only.experience.startswith("When you use transfer_to_human_agents, first ")
    assert "changed nothing" not in only.experience
    assert "transfer_to_human_agents" in only.replay  # the same case is replayed exactly


# ---------------------------------------------------------------------------- blame


def test_a_failed_run_blames_the_state_change_not_the_look_ups_it_used():
    trace, steps = airline_run()
    blame = blame_of(request_for(trace, steps), {2: "misleading", 3: "misleading"})
    assert (blame.step.index, blame.evidence) == (3, "a change the outcome contradicts")
    assert blame.consequence == "the run failed"


def test_the_step_the_user_objected_to_is_blamed_with_their_words():
    trace, steps = airline_run(complaint="Thanks. But that's wrong, I said May 26!")
    blame = blame_of(request_for(trace, steps), {})
    assert (blame.step.index, blame.evidence) == (3, "the user objected")
    assert blame.consequence == 'the user replied "But that\'s wrong, I said May 26!"'


def test_an_errored_look_up_may_be_blamed_a_successful_one_never():
    steps = [
        call(0, READ, {"user_id": "x"}, "Error: user not found"),
        call(1, READ, {"user_id": "omar_rossi_1241"}, PROFILE),
        reply(2, "I could not help."),
    ]
    trace = tv(task="Change my flight, I am omar_rossi_1241", outcome="failure")
    blame = blame_of(request_for(trace, steps), {1: "misleading"})
    assert (blame.step.index, blame.evidence) == (0, "it failed")
    assert blame.consequence == 'it returned "Error: user not found"'


def test_a_marker_a_simulated_user_writes_is_not_a_complaint():
    trace, steps = airline_run(complaint="###STOP###")
    blame = blame_of(request_for(trace, steps), {})
    assert blame.evidence == "a change the outcome contradicts"


def test_a_success_s_pitfall_is_only_a_call_that_failed():
    trace, steps = airline_run(outcome="success")
    assert blame_of(request_for(trace, steps), {3: "misleading"}) is None


# ---------------------------------------------------------------------------- placeholders


def test_values_from_the_request_and_from_results_become_named_placeholders():
    trace, steps = airline_run()
    sources = Sources.of(trace.task, steps)
    assert call_pattern(steps[1], sources) == f"{READ} <user_id from the request>"
    assert call_pattern(steps[2], sources) == (
        "get_reservation_details <reservation_id from get_user_details>"
    )


def test_a_lesson_names_no_value_of_the_old_run_and_the_replay_keeps_them():
    trace, steps = airline_run(complaint="That's wrong.")
    template = HeuristicReviewer().review(request_for(trace, steps)).template
    assert template.experience.startswith(f"When you use {WRITE}: do not {WRITE} <reservation_id")
    for literal in ("omar_rossi_1241", "K1NW8N", "May 25", "When you work on"):
        assert literal not in template.experience
    assert 'get_user_details "omar_rossi_1241"' in template.replay
    assert f"do not {WRITE} reservation_id=K1NW8N" in template.replay
    assert template.blamed_step == 3


def _ended_on(tool, runs, project_runs):
    """The template of a failed run that ends on `tool` after two used look-ups; the project has
    seen `tool` in `runs` of `project_runs` runs."""
    return HeuristicReviewer().review(_ended_on_request(tool, runs, project_runs)).template


def _ended_on_request(tool, runs, project_runs):
    steps = [
        said(0, "Hi, I am omar_rossi_1241 and I want to move my flight to May 25."),
        call(1, READ, {"user_id": "omar_rossi_1241"}, PROFILE),
        call(2, "get_reservation_details", {"reservation_id": "K1NW8N"}, RESERVATION),
        call(3, tool, {"reservation_id": "K1NW8N"}, '{"status": "done"}'),
    ]
    seen = Behaviour(calls=runs, fed_calls=0, runs=runs, final_in_runs=runs,
                     final_in_successes=0, project_runs=project_runs)  # fmt: skip
    effects = {tool: tool_effect(tool, behaviour=seen)}
    trace = tv(task=steps[0].content, outcome="failure", tool_effects=effects)
    return request_for(trace, steps)


def test_a_write_most_runs_never_make_is_warned_of_never_forbidden_by_the_outcome_alone():
    # A hand-off made in 2 of 20 runs, in a run that failed: the outcome says the run went
    # wrong, not that a hand-off is always wrong (the next task may need one). The lesson is to
    # make it only when asked and allowed, with the arguments' provenance; no "do not".
    template = _ended_on("transfer_to_human_agents", runs=2, project_runs=20)
    assert template.experience == (
        "When you use transfer_to_human_agents: a run that called it with <reservation_id from "
        "get_reservation_details> failed; make this change only when the request asks for it "
        "and the rules allow it: check both before you transfer_to_human_agents."
    )
    # The replay of the same case names the call, and says the run failed after it.
    assert template.replay.endswith(
        '; the run failed after transfer_to_human_agents "K1NW8N": check that '
        "change against the request and the rules before you make it again."
    )
    # A commit made in nearly every run (an answer, a purchase) is needed again: check it first.
    template = _ended_on("submit_order", runs=19, project_runs=20)
    assert template.experience.endswith(
        "check it against every part of the request before you submit_order."
    )
    assert "do not" not in template.experience


def test_which_lessons_are_about_their_own_case_s_values():
    # The commit nearly every run ends on (a purchase): its lesson is that case's answer.
    purchase = _ended_on_request("submit_order", runs=19, project_runs=20)
    blame = blame_of(purchase, {3: "misleading"})
    assert blame.evidence == "a change the outcome contradicts"
    assert blames_the_answer(blame, purchase) and not blames_a_failed_look_up(blame, purchase)
    # A write most runs never make is a warning for other cases too.
    hand_off = _ended_on_request("transfer_to_human_agents", runs=2, project_runs=20)
    blame = blame_of(hand_off, {3: "misleading"})
    assert not blames_the_answer(blame, hand_off)
    # A look-up that failed on the case's values; a failed write is no such look-up.
    for tool, expected in ((READ, True), (WRITE, False)):
        failed = call(1, tool, {"user_id": "omar_rossi_1241"}, "Error: user not found")
        steps = [said(0, "I am omar_rossi_1241."), failed]
        request = request_for(tv(task=steps[0].content, outcome="failure"), steps)
        blame = blame_of(request, {})
        assert blame.evidence == "it failed"
        assert blames_a_failed_look_up(blame, request) is expected, tool


def test_text_the_agent_wrote_itself_is_never_replayed_as_a_literal():
    summary = "The user, Noah Muller, wants a refund for reservation 4OG6T3 of last week"
    steps = [said(0, "I want a refund."), call(1, "transfer_to_human_agents", {"summary": summary})]
    pattern = call_pattern(steps[1], Sources.of("I want a refund.", steps))
    assert pattern == "transfer_to_human_agents <summary written for the case>"


# ---------------------------------------------------------------------------- the LLM's lesson


def test_an_llm_lesson_forbidding_a_used_look_up_is_replaced_by_the_rules():
    trace, steps = airline_run()
    judged = labels(steps)
    from traces.review.types import ReviewTemplate

    llm = ReviewTemplate(
        goal="g", execution_path=[], effective_steps=[], ineffective_steps=[],
        key_decisions=[], improvements=[], worth_reference=True,
        experience='When you change a flight, do not get_reservation_details "K1NW8N".',
        pitfall='get_reservation_details "K1NW8N"', blamed_step=2,
        labels=list(judged.values()),
    )  # fmt: skip
    request = request_for(trace, steps)
    assert rule_breaks(llm, request) == [
        "forbids the read-only call get_reservation_details",
        "blames the read-only step 2",
    ]
    checked = lesson_checked(llm, request)
    # The change the run ended on is to be checked, not forbidden (the next task may need it).
    assert checked.experience.startswith(f"When you use {WRITE}: {WRITE} <reservation_id")
    assert checked.experience.endswith(
        f"check it against every part of the request before you {WRITE}."
    )
    assert checked.blamed_step == 3 and checked.replay


def test_a_failed_run_s_replay_lists_every_change_it_made():
    # The run cancelled the reservation the user meant and one more, then failed: the same case
    # needs to see both changes (the one too many is the mistake), not only the last one.
    steps = [
        said(0, "Hi, I am omar_rossi_1241: cancel my trip to Boston please."),
        call(1, READ, {"user_id": "omar_rossi_1241"}, PROFILE),
        call(2, "cancel_reservation", {"reservation_id": "UM3OG5"}, '{"status": "cancelled"}'),
        call(3, "cancel_reservation", {"reservation_id": "K1NW8N"}, '{"status": "cancelled"}'),
        reply(4, "Both reservations are cancelled."),
    ]
    trace = tv(task=steps[0].content, outcome="failure")
    replay = HeuristicReviewer().review(request_for(trace, steps)).template.replay
    assert replay == (
        'The same case ran before (failure): get_user_details "omar_rossi_1241"; the run failed '
        'after its changes cancel_reservation "UM3OG5", then cancel_reservation "K1NW8N": check '
        "each change against the request and the rules before you make it again."
    )


def _made_in_some_runs(*tools):
    """The project's record of tools made in 3 of 20 runs (a change most runs never make)."""
    seen = Behaviour(calls=3, fed_calls=0, runs=3, final_in_runs=1, final_in_successes=1,
                     project_runs=20)  # fmt: skip
    return {tool: tool_effect(tool, behaviour=seen) for tool in tools}


def test_a_successful_run_s_replay_says_what_it_changed_or_that_it_changed_nothing():
    def replay(*calls_made, effects, project_tools=None):
        steps = [said(0, "Hi, I am omar_rossi_1241: cancel reservation K1NW8N please."),
                 call(1, READ, {"user_id": "omar_rossi_1241"}, PROFILE),
                 call(2, "get_reservation_details", {"reservation_id": "K1NW8N"}, RESERVATION),
                 *calls_made]  # fmt: skip
        trace = tv(task=steps[0].content, outcome="success", tool_effects=effects,
                   project_tools=project_tools or {},
                   final_answer="Your reservation K1NW8N is cancelled.")  # fmt: skip
        return HeuristicReviewer().review(request_for(trace, steps)).template.replay

    effects = _made_in_some_runs("cancel_reservation", "transfer_to_human_agents")
    cancel = call(3, "cancel_reservation", {"reservation_id": "K1NW8N"}, '{"status": "ok"}')
    # Its changes apart from its look-ups: the decision the same case needs, first to see.
    assert replay(cancel, effects=effects) == (
        'The same case ran before (success): get_reservation_details "K1NW8N"; its changes were '
        'cancel_reservation "K1NW8N"; the answer was "Your reservation K1NW8N is cancelled.".'
    )
    # It changed nothing where it could have (the answer was a refusal), and handed over; its
    # thinking aloud (a `think` call that returns nothing) is no step of the replay.
    hand_off = call(3, "transfer_to_human_agents", {"summary": "wants a refund"}, "Transfer ok")
    thought = call(3, "think", {"thought": "The fare rules say no refund."}, "")
    handed = replay(thought, replace(hand_off, index=4), effects=effects)
    assert "think" not in handed
    assert handed.startswith("The same case ran before (success) and changed nothing: ")
    assert 'get_reservation_details "K1NW8N"; then it handed the case to a person ' in handed
    assert '(transfer_to_human_agents "wants a refund")' in handed
    # What it told the user before handing over says why it changed nothing: the sentence that
    # says no, not the courtesy the reply opened with; the hand-off's note is then left out.
    told = replay(reply(3, "I understand your concern. Sadly, basic economy fares are not "
                           "refundable. I can transfer you."),
                  replace(hand_off, index=4), effects=effects)  # fmt: skip
    assert (
        'get_reservation_details "K1NW8N"; it told the user "Sadly, basic economy fares are not '
        'refundable.", then handed the case to a person;' in told
    ), told
    assert "transfer_to_human_agents" not in told
    polite = replay(reply(3, "I will pass this to a colleague."), replace(hand_off, index=4),
                    effects=effects)  # fmt: skip
    assert 'it told the user "I will pass this to a colleague.", then handed' in polite
    # The run's own tools need not include the change it did not make: the project's tools say
    # what the agent could have done.
    handed_only = _made_in_some_runs("transfer_to_human_agents")
    assert "changed nothing" not in replay(hand_off, effects=handed_only)
    assert "and changed nothing: " in replay(hand_off, effects=handed_only, project_tools=effects)
    # An agent with no tool that changes anything (questions answered from look-ups): nothing
    # to say about changes; nor while the project has too few runs to tell a change from the
    # commit every run makes.
    for unknown in ({}, {"cancel_reservation": tool_effect("cancel_reservation")}):
        text = replay(cancel, effects=unknown)
        assert "changed nothing" not in text and "its changes" not in text
        assert 'cancel_reservation "K1NW8N"' in text
    # Early in a project a change most runs made reads as the commit every run makes: it stays
    # in the path, and the run is not said to have changed nothing.
    commit = Behaviour(calls=20, fed_calls=0, runs=20, final_in_runs=10, final_in_successes=10,
                       project_runs=20)  # fmt: skip
    text = replay(cancel, effects=effects | {"cancel_reservation": tool_effect(
        "cancel_reservation", behaviour=commit)},
        project_tools=_made_in_some_runs("update_reservation_flights"))  # fmt: skip
    assert "changed nothing" not in text and 'cancel_reservation "K1NW8N"' in text, text
    # Another tool known to change: the agent could have changed something, but whether this
    # run's cancellation is a change is not known yet: it is never said to have changed nothing.
    text = replay(cancel, effects={"cancel_reservation": tool_effect("cancel_reservation")},
                  project_tools=_made_in_some_runs("update_reservation_flights"))  # fmt: skip
    assert "changed nothing" not in text and 'cancel_reservation "K1NW8N"' in text


def test_a_failed_search_whose_suggestion_the_run_searched_next_is_a_step_of_the_way():
    question = "What is the mascot of the oldest private university in Georgia?"
    steps = [
        said(0, question),
        call(1, "Search", {"query": "oldest private university in Georgia"},
             "Could not find [oldest private university in Georgia]. Similar: ['Mercer "
             "University', 'Emory University'].", is_error=True),
        reply(2, "Mercer University is the oldest; I will search it."),
        call(3, "Search", {"query": "Mercer University"},
             "Mercer University is a private research university in Macon, Georgia. Its "
             "athletic teams are the Mercer Bears."),
        call(4, "Finish", {"answer": "Bears"}, "Answer is CORRECT"),
    ]  # fmt: skip
    template = HeuristicReviewer().review(request_for(tv(task=question), steps)).template
    # Without the failed search, the second one's query would come from a call never named.
    assert template.experience.startswith(
        "When you use Finish, first Search <query from the request>, then Search <query from "
        "Search>; call it with <answer from Search>."
    ), template.experience
    assert "can fail" in template.experience


def test_an_answer_the_request_held_is_that_case_s_answer():
    question = "Which is older, Mercer University or Emory University?"
    steps = [
        said(0, question),
        call(1, "Search", {"query": "Mercer University"}, "Mercer University, founded 1833."),
        call(2, "Search", {"query": "Emory University"}, "Emory University, founded 1836."),
        call(3, "Finish", {"answer": "Mercer University"}, "Answer is CORRECT"),
    ]  # fmt: skip
    answers = Behaviour(calls=10, fed_calls=0, runs=10, final_in_runs=10, final_in_successes=6,
                        project_runs=10)  # fmt: skip

    def strategy(effects):
        trace = tv(task=question, tool_effects=effects)
        return HeuristicReviewer().review(request_for(trace, steps)).template.experience

    # The answer nearly every run ends on: where this case's answer was is no way to the next.
    assert strategy({"Finish": tool_effect("Finish", behaviour=answers)}).startswith(
        "When you use Finish, first Search <query from the request> (each); call it with "
        "<answer of the case>."
    )
    # Not known to be the answer every run ends on (too few runs): the origin as it is.
    assert "<answer from the request>" in strategy({"Finish": tool_effect("Finish")})


def test_a_success_s_call_that_failed_then_worked_later_is_no_pitfall():
    request_text = "i want a red bath towel, and price lower than 30.00 dollars"
    steps = [
        said(0, request_text),
        call(1, "search", {"query": "red bath towel"}, "[B01] Red Bath Towel $12.99"),
        call(2, "click", {"target": "Buy Now"}, "Invalid action!", is_error=True),
        call(3, "click", {"target": "B01"}, "Red Bath Towel. Price: $12.99. [Buy Now]"),
        call(4, "click", {"target": "Buy Now"}, "Thank you for shopping with us!"),
    ]
    template = HeuristicReviewer().review(request_for(tv(task=request_text), steps)).template
    # "Buy Now" before a product was open failed; the purchase itself is what the task needs.
    assert "Do not" not in template.experience and "do not" not in template.experience
    assert template.experience.startswith("When you use click, first search ")


def test_an_llm_lesson_forbidding_a_command_that_only_read_is_replaced_by_the_rules():
    """`bash` is of no known effect; its calls here only read (`cat`, `grep`): a lesson that
    forbids them forbids a look-up."""
    steps = [
        said(0, "Fix parse_date in utils/date.py"),
        call(1, "bash", {"command": "cat utils/date.py"}, "def parse_date(s): ..."),
        call(2, "bash", {"command": "grep -n parse_date tests/test_date.py"}, "5: parse_date("),
        call(3, "submit", {}, "submitted"),
    ]
    trace = tv(task=steps[0].content, outcome="failure")
    from traces.review.types import ReviewTemplate

    llm = ReviewTemplate(
        goal="g", execution_path=[], effective_steps=[], ineffective_steps=[],
        key_decisions=[], improvements=[], worth_reference=True,
        experience='When you fix a bug, do not bash "cat utils/date.py".',
        pitfall='bash "cat utils/date.py"', blamed_step=3, labels=[],
    )  # fmt: skip
    assert rule_breaks(llm, request_for(trace, steps)) == ["forbids the read-only call bash"]
    # A shell that also wrote is not a look-up as a whole: nothing to say by the tool alone.
    steps[2] = call(2, "bash", {"command": "sed -i 's/a/b/' utils/date.py"}, "")
    assert rule_breaks(llm, request_for(trace, steps)) == []
