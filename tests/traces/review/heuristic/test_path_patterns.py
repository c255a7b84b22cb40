"""What a strategy shows of a long path: every change, the first call and the calls nearest the
one it leads to; never "then 1 more call" for a call that fits (pure functions of hand-built
steps and the reviewer's template)."""

from tests.support.review_builders import request_for, sv, tv
from traces.review.heuristic.path_patterns import path_pattern
from traces.review.heuristic.placeholders import Sources
from traces.review.heuristic.template import build_template
from traces.review.tool_effects import tool_effect
from traces.review.types import StepJudgement

TASK = "Fix parse_date in utils/date.py: parse_date('2024-02-30') must raise ValueError"


def call(index: int, tool: str, arguments: dict, result: str = "ok"):
    return sv(index, tool=tool, arguments=arguments, observation=result)


def by_name(step):
    return tool_effect(step.tool)


def test_a_path_one_call_over_the_limit_shows_every_call():
    steps = [call(i, tool, {}) for i, tool in enumerate(["list_a", "get_b", "get_c", "get_d"])]
    path = path_pattern(steps, Sources.of(TASK, steps), 3, by_name)
    assert path == "list_a, then get_b, then get_c, then get_d"


def test_a_long_path_keeps_its_changes_its_first_call_and_the_calls_nearest_its_end():
    tools = ["list_a", "get_b", "get_c", "update_d", "get_e", "get_f", "get_g"]
    steps = [call(i, tool, {}) for i, tool in enumerate(tools)]
    path = path_pattern(steps, Sources.of(TASK, steps), 3, by_name)
    # The change is a way the agent must be told; the look-ups left out are said to be look-ups.
    assert (
        path == "list_a, then 2 more look-up(s), then update_d, then 2 more look-up(s), then get_g"
    )
    # Without effects known, the calls left out are only "calls".
    assert path_pattern(steps, Sources.of(TASK, steps), 3) == (
        "list_a, then 4 more call(s), then get_f, then get_g"
    )


def test_a_coding_run_keeps_the_test_run_before_the_submit_not_only_its_first_reads():
    commands = ["ls", "cat utils/date.py", "grep -n parse utils/date.py", "cat tests/x.py"]
    steps = [
        *(call(i, "bash", {"command": c}) for i, c in enumerate(commands)),
        call(4, "str_replace_editor", {"command": "str_replace"}),
        call(5, "bash", {"command": "python -m pytest"}, "3 passed"),
    ]
    path = path_pattern(steps, Sources.of(TASK, steps), 3, by_name)
    assert path.startswith('bash "ls", then ')
    assert path.endswith('str_replace_editor "str_replace", then bash "python -m pytest"')


def test_a_change_made_again_before_the_last_reads_each_not_a_step_before_itself():
    steps = [
        call(0, "get_user_details", {"user_id": "sara_doe_1"}, '{"reservations": ["K1", "K2"]}'),
        call(1, "cancel_reservation", {"reservation_id": "K1"}, '{"status": "cancelled"}'),
        call(2, "cancel_reservation", {"reservation_id": "K2"}, '{"status": "cancelled"}'),
    ]
    trace = tv(task="Cancel both of my trips, I'm sara_doe_1", outcome="success")
    labels = {
        i: StepJudgement(index=i, label="necessary", reason="r", confidence=0.9) for i in range(3)
    }
    template = build_template(request_for(trace, steps), labels)
    assert template.experience == (
        "When you use cancel_reservation, first get_user_details <user_id from the request>; "
        "call it with <reservation_id from get_user_details> (each)."
    )
