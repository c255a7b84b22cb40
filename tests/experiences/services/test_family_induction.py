"""What a family of runs teaches: its workflow (pure functions)."""

from experiences.services.family_induction import Member, distinct_cases, workflow
from experiences.services.family_insights import insights
from tests.support.family_members import CHANGE, FAMILY, RESERVATION, USER, calls, failure, success


def test_a_workflow_is_the_calls_most_successful_runs_made_in_order():
    induced = workflow(FAMILY)
    assert induced.advice == (
        f"When you use update_reservation_flights, first {USER}, then {RESERVATION}; call it with "
        "<reservation_id from get_user_details>."
    )
    assert (induced.support, induced.trace_ids) == (3, [1, 2, 3])


def test_one_success_is_no_workflow():
    assert workflow(FAMILY[:1] + FAMILY[3:]) is None


def test_runs_naming_a_common_id_are_one_case():
    def run(trace_id, *ids):
        return Member(trace_id, True, [], frozenset(ids))

    assert distinct_cases([run(1, "mia_li_3668"), run(2, "mia_li_3668", "k1nw8n")]) == 1
    # Linked through a third run: one user's two bookings.
    assert distinct_cases([run(1, "a1b2"), run(2, "c3d4"), run(3, "a1b2", "c3d4")]) == 1
    assert distinct_cases([run(1, "mia_li_3668"), run(2, "sara_doe_496"), run(3)]) == 3


def test_the_successes_of_one_case_teach_the_family_nothing():
    # One user's request run again: its common calls (two changes, one refused) are that case.
    same = frozenset({"aarav_ahmed_6699"})
    family = [
        Member(1, True, calls(RESERVATION, "cancel_reservation <reservation_id>", CHANGE), same),
        Member(2, True, calls(RESERVATION, "cancel_reservation <reservation_id>", CHANGE), same),
        Member(3, False, calls(USER, CHANGE, necessary=False), frozenset({"mia_li_3668"})),
        Member(4, False, calls(CHANGE, necessary=False), frozenset({"sara_doe_496"})),
    ]
    assert workflow(family) is None and insights(family) == []
    # A success of another case: now the runs teach the family.
    family.append(Member(5, True, calls(USER, RESERVATION, CHANGE), frozenset({"noah_brown_123"})))
    assert workflow(family) is not None and insights(family)


def test_a_family_whose_successes_only_read_is_told_they_changed_nothing():
    # Requests the policy refuses, questions: the look-ups, and that nothing was changed.
    answered = [success(1, USER, RESERVATION), success(2, USER, RESERVATION), success(3, USER)]
    induced = workflow(answered)
    assert induced.advice == (
        f"When the request needs no change: first {USER}, then {RESERVATION}, then answer; the 3 "
        "successful runs of this kind changed nothing."
    )
    assert induced.tools == ["get_reservation_details", "get_user_details"]
    # One success that made a change is no family that only reads.
    assert workflow([*answered[:2], success(4, USER, CHANGE)]).advice.startswith("When you use")


def test_a_look_up_a_minority_of_successes_needed_is_named_with_its_count():
    # 3 of 8 answers also read the user's profile (a membership that sets the allowance): left
    # out, the workflow reads as "do without it".
    answered = [success(i, RESERVATION) for i in range(1, 6)] + [
        success(i, USER, RESERVATION) for i in (6, 7, 8)
    ]
    assert workflow(answered).advice == (
        f"When the request needs no change: first {RESERVATION} (in 3 of 8 runs also "
        "get_user_details), "
        "then answer; the 8 successful runs of this kind changed nothing."
    )
    changed = [success(i, RESERVATION, CHANGE) for i in range(1, 6)] + [
        success(i, USER, RESERVATION, CHANGE) for i in (6, 7, 8)
    ]
    assert workflow(changed).advice == (
        f"When you use update_reservation_flights, first {RESERVATION} (in 3 of 8 runs also "
        "get_user_details); call it with <reservation_id from get_user_details>."
    )
    # Two runs of seven are no pattern yet.
    assert "also" not in workflow(changed[:5] + changed[6:]).advice
    # One run in eight is no pattern; a change is never optional (successes share their changes).
    rare = [success(i, RESERVATION, CHANGE) for i in range(1, 8)] + [
        success(8, USER, RESERVATION, CHANGE)
    ]
    assert "also" not in workflow(rare).advice


def test_the_family_s_change_is_in_its_workflow_whatever_its_label():
    # The reviewer called two successes' change redundant (they repeated it): it is still what
    # those runs did to succeed, and the workflow ends on it.
    relabelled = [
        success(1, USER, RESERVATION, CHANGE),
        Member(2, True, calls(USER, RESERVATION) + calls(CHANGE, necessary=False)),
        Member(3, True, calls(USER, RESERVATION) + calls(CHANGE, necessary=False)),
    ]
    assert workflow(relabelled).advice == (
        f"When you use update_reservation_flights, first {USER}, then {RESERVATION}; call it "
        "with <reservation_id from get_user_details>."
    )


def test_a_hand_off_is_how_runs_ended_never_a_step_nor_a_recommendation():
    # The successes read and handed the case to a person; the failures cancelled. What the
    # family teaches is to check before cancelling, never "hand it over instead".
    cancel = "cancel_reservation <reservation_id from get_user_details>"
    hand_off = "transfer_to_human_agents <summary in the request's words>"
    family = [
        success(1, USER, RESERVATION, hand_off),
        success(2, USER, RESERVATION, hand_off),
        success(3, USER, RESERVATION),
        failure(4, USER, RESERVATION, cancel),
        failure(5, USER, cancel),
    ]
    said = [i.advice for i in insights(family)]
    assert not any("successful runs call transfer_to_human_agents" in a for a in said), said
    assert any(
        a.startswith("When you use cancel_reservation: failed runs of this kind called it")
        and a.endswith("check both before you cancel_reservation.")
        for a in said
    ), said
    assert workflow(family).advice == (
        f"When the request needs no change: first {USER}, then {RESERVATION}, then answer; the 3 "
        "successful runs of this kind changed nothing (2 of them handed the case to a human "
        "agent)."
    )


def test_cases_that_make_the_same_changes_in_opposite_orders_have_no_workflow():
    cancel = "cancel_reservation <reservation_id from get_user_details>"
    upgrade_then_cancel = [
        Member(i, True, calls(USER, RESERVATION, CHANGE, cancel), frozenset({"daiki"}))
        for i in (1, 2, 3)
    ]
    cancel_then_change = [
        Member(i, True, calls(USER, RESERVATION, cancel, CHANGE), frozenset({"aarav"}))
        for i in (4, 5)
    ]
    assert workflow(upgrade_then_cancel + cancel_then_change) is None
    # One success of the other order among many is no disagreement.
    agreeing = [
        Member(i, True, calls(USER, RESERVATION, CHANGE, cancel), frozenset({f"user{i}"}))
        for i in (6, 7, 8)
    ]
    induced = workflow(upgrade_then_cancel + agreeing + cancel_then_change[:1])
    assert induced.advice.startswith(
        f"When you use cancel_reservation, first {USER}, then {RESERVATION}, then {CHANGE}"
    )


def test_each_command_a_tool_runs_is_a_step_of_its_own():
    def coding(trace_id):
        made = ['bash "ls src"', 'bash "cat <path from the request>"',
                'str_replace_editor <path from the request> "str_replace"',
                'bash "python -m pytest <path of the case>"', "submit"]  # fmt: skip
        member = Member(trace_id, True, calls(*made))
        for call in member.calls:
            call["effect"] = "write" if call["tool"] in ("submit", "str_replace_editor") else "read"
        return member

    induced = workflow([coding(1), coding(2), coding(3)])
    # Keyed by the tool alone, the workflow was one step, 'bash "ls src"', for every command.
    assert induced.advice == (
        'When you use submit, first bash "ls src", then bash "cat <path from the request>", then '
        'str_replace_editor <path from the request> "str_replace", then bash "python -m pytest '
        '<path of the case>".'
    )
    assert induced.tools == ["bash", "str_replace_editor", "submit"]


def test_the_clicks_on_the_way_and_the_purchase_are_two_steps():
    """A tool that navigates and commits (its runs end on click "Buy Now"): the product click
    is a step before the purchase, not the purchase's pattern, nor left out."""

    def shopped(trace_id, product):
        made = calls("search <query in the request's words>", "click <target from search>")
        made[1]["effect"] = "read"  # a click that only navigates (ToolEffect.of_call)
        made += calls('click "Buy Now"')
        return Member(trace_id, True, made, frozenset({product}))

    induced = workflow([shopped(1, "tee"), shopped(2, "mug")])
    assert induced.advice == (
        "When you use click, first search <query in the request's words>, then click <target "
        'from search>; call it with "Buy Now".'
    )


def test_a_command_line_only_one_run_ran_is_shown_by_its_command_alone():
    # A shell agent's look-ups (InterCode Bash): each run found its own files its own way.
    def look_up(trace_id, command):
        member = Member(trace_id, True, calls(f'bash "{command}"'))
        member.calls[0]["effect"] = "read"
        return member

    runs = [
        look_up(1, 'find <path from the request> -name "*.java" -exec md5sum {} + | sort'),
        look_up(2, 'find <path from the request> -name "*.java" -exec md5sum {} + | sort'),
        look_up(3, "find <path from the request> -type f | wc -l"),
        look_up(4, "find <path from the request> -empty"),
        look_up(5, "find <path from the request> -mtime +7"),
    ]
    # Was the first command, 2 of 5 runs', taught to every request of the family; shown as
    # 'bash "find …"' alone it names the family, not a way: no workflow.
    assert workflow(runs) is None
    # A command most of them ran is shown whole.
    induced = workflow(runs[:3])
    assert 'first bash "find <path from the request> -name "*.java" -exec md5sum' in induced.advice
    # Beside a step the runs share, a command of one case each reads as its command alone.
    for run in runs:
        run.calls.insert(0, {**run.calls[0], "pattern": 'bash "ls <path from the request>"'})
    induced = workflow(runs)
    assert induced.advice.startswith(
        'When the request needs no change: first bash "ls <path from the request>", then bash '
        '"find …", then answer'
    )


def test_a_shell_run_s_family_is_the_commands_that_changed_something():
    from experiences.models import Experience
    from experiences.services.families import _signature

    def run(*made):
        episode = Experience(calls=calls(*made))
        return _signature(episode)

    assert run('bash "rm -rf <path from the request>"') == "bash rm"
    assert run('bash "tar czf <path of the case> <path>"', CHANGE) == (
        "bash tar,update_reservation_flights"
    )
    assert run(CHANGE) == "update_reservation_flights"


def test_a_command_workflow_says_what_most_of_its_requests_asked():
    # "When you use bash: call it with "rm -rf …"" was served to a request to list permissions.
    def removal(trace_id, request):
        return Member(trace_id, True, calls('bash "rm -rf <path from the request>/<pattern>"'),
                      frozenset({str(trace_id)}), request)  # fmt: skip

    runs = [
        removal(1, "Remove all *.txt files under /system/folder1"),
        removal(2, "Remove all files in /workspace/tmp"),
        removal(3, "Delete every hidden file under /workspace"),
    ]
    assert workflow(runs).advice == (
        'When you use bash to remove all files: call it with "rm -rf <path from the '
        'request>/<pattern>".'
    )
    # Requests that each asked their own: the way stays, as before, without a condition.
    runs = [removal(1, "Clean up /tmp"), removal(2, "Make room on the disk")]
    assert workflow(runs).advice.startswith('When you use bash: call it with "rm -rf')
    # A tool that runs no command line has no purpose said: its name is its condition.
    flights = [Member(i, True, calls(USER, CHANGE), frozenset({str(i)}), "Change my flight")
               for i in (1, 2)]  # fmt: skip
    assert workflow(flights).advice.startswith("When you use update_reservation_flights, first")
