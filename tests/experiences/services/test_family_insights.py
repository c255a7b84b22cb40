"""What a family's successes and failures did differently: its insights (pure functions)."""

from experiences.services.family_induction import Member
from experiences.services.family_insights import insights
from tests.support.family_members import CHANGE, FAMILY, RESERVATION, USER, calls, failure, success


def test_the_strongest_contrast_is_reading_before_the_change():
    found = insights(FAMILY)
    first = found[0]
    assert first.advice == (
        "When you use update_reservation_flights: successful runs call get_reservation_details "
        "before it (3 of 3 successful runs, 0 of 3 failed runs)."
    )
    assert first.polarity == "success" and first.support == 3


def test_an_insight_never_tells_to_avoid_a_look_up():
    # Failed runs read the profile far more often than successes did: no "avoid reading" comes.
    family = [
        success(1, CHANGE),
        success(2, CHANGE),
        failure(3, USER, CHANGE),
        failure(4, USER, CHANGE),
        failure(5, USER, CHANGE),
    ]
    for found in insights(family):
        assert not (found.polarity == "failure" and "get_user_details" in found.advice), found


def test_a_call_that_failed_in_the_successes_is_no_insight():
    # Both successes had the change fail once, then made it; no failed run saw it fail. That
    # the successes "have no failed call" would be false, and a failure is no way to do it.
    def failed_then_made(trace_id):
        made = calls(USER, CHANGE, CHANGE)
        made[1]["errored"] = True
        return Member(trace_id, True, made)

    family = [failed_then_made(1), failed_then_made(2), failure(3, USER, CHANGE),
              failure(4, USER, CHANGE), failure(5, CHANGE)]  # fmt: skip
    assert not [i.advice for i in insights(family) if "fail" in i.advice.split(":", 1)[1]]


def test_a_state_change_that_failures_make_is_warned_of_with_its_counts():
    cancel = "cancel_reservation <reservation_id from get_user_details>"
    family = [
        success(1, USER, CHANGE),
        success(2, USER, CHANGE),
        failure(3, USER, cancel, CHANGE),
        failure(4, USER, cancel),
    ]
    warned = [i for i in insights(family) if i.polarity == "failure"]
    assert any(
        i.advice
        == (
            "When you use cancel_reservation: failed runs of this kind called it with "
            "<reservation_id from get_user_details> more often (0 of 2 successful runs, 2 of 2 "
            "failed runs did); make this change only when the request asks for it and the rules "
            "allow it: check both before you cancel_reservation."
        )
        for i in warned
    ), [i.advice for i in warned]


def test_that_the_successes_made_the_family_s_change_is_no_insight():
    # Every success of a family makes its changes (that is how it joined): the failures that
    # did not are as often other tasks' failures joined by nearness. Said, it told cancellations
    # to change their flights.
    cancel = "cancel_reservation <reservation_id from get_user_details>"
    family = [
        success(1, USER, RESERVATION, CHANGE),
        success(2, USER, RESERVATION, CHANGE),
        failure(3, USER, RESERVATION, cancel),
        failure(4, USER, cancel),
        failure(5, USER),
    ]
    said = [i.advice for i in insights(family)]
    assert said  # the family's contrasts are still said
    assert not any("successful runs call update_reservation_flights" in a for a in said), said


def test_a_command_that_failed_in_the_failures_is_named_and_not_blamed_on_its_arguments():
    def run(trace_id, passed):
        tests = 'bash "python -m pytest <path of the case>"'
        made = calls('bash "cat <path from the request>"', tests, "submit")
        made[1]["errored"] = not passed
        for call in made:
            call["effect"] = "write" if call["tool"] == "submit" else "read"
        return Member(trace_id, passed, made, frozenset({str(trace_id)}))

    found = insights([run(1, True), run(2, True), run(3, False), run(4, False)])
    assert [i.advice for i in found] == [
        # A command is a step of its own ("bash", every run read a file): the test run.
        'When you use bash: successful runs call bash "python -m pytest <path of the case>" (2 of '
        "2 successful runs, 0 of 2 failed runs).",
        'When you use bash: in failed runs bash "python -m pytest <path of the case>" failed (0 of '
        "2 successful runs, 2 of 2 failed runs): do not go on while it fails.",
    ]
    assert [i.tools for i in found] == [["bash"], ["bash"]]


def test_a_command_insight_says_what_the_runs_it_speaks_for_asked():
    def run(trace_id, passed, request, *commands):
        made = calls(*(f'bash "{c}"' for c in commands))
        made[-1]["errored"] = not passed
        return Member(trace_id, passed, made, frozenset({str(trace_id)}), request)

    family = [
        run(1, True, "Count the lines of all php files in /testbed", "find <path> | xargs wc -l"),
        run(2, True, "Count the lines of every *.c file in /src", "find <path> | xargs wc -l"),
        run(3, False, "Count the lines of the logs in /var", "wc -l <path>/*"),
        run(4, False, "Count the lines of all py files in /app", "wc -l <path>/*"),
    ]
    failed = [i.advice for i in insights(family) if i.polarity == "failure"]
    assert failed == [
        'When you use bash to count the lines: in failed runs bash "wc -l <path>/*" failed (0 of '
        "2 successful runs, 2 of 2 failed runs): do not go on while it fails."
    ]
