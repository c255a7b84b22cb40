"""What a failed run's change is blamed with when only the outcome speaks against it: the error
a call had last returned, when no later call of its tool worked (pure functions of hand-built
steps)."""

from tests.support.review_builders import request_for, sv, tv
from traces.review.heuristic.blame import blame_of

TASK = "Fix parse_date in utils/date.py: parse_date('2024-02-30') must raise ValueError"


def coding_run(*, tests_pass_at_last: bool):
    steps = [
        sv(0, "user_input", content=TASK),
        sv(1, tool="str_replace_editor", arguments={"path": "utils/date.py"},
           observation="The file utils/date.py has been edited."),
        sv(2, tool="bash", arguments={"command": "python -m pytest"},
           observation="NameError: name 'datetime' is not defined", is_error=True),
    ]  # fmt: skip
    if tests_pass_at_last:
        steps.append(sv(3, tool="bash", arguments={"command": "python -m pytest"},
                        observation="1 passed"))  # fmt: skip
    steps.append(sv(4, tool="submit", observation="submitted"))
    return tv(task=TASK, outcome="failure"), steps


def test_a_change_made_while_a_call_still_failed_is_blamed_with_that_error():
    trace, steps = coding_run(tests_pass_at_last=False)
    blame = blame_of(request_for(trace, steps), {})
    assert (blame.step.tool, blame.evidence) == ("submit", "a change the outcome contradicts")
    assert blame.consequence == (
        "the run failed; bash had last returned \"NameError: name 'datetime' is not defined\""
    )


def test_an_error_its_tool_got_past_leaves_the_outcome_alone():
    trace, steps = coding_run(tests_pass_at_last=True)
    blame = blame_of(request_for(trace, steps), {})
    assert blame.step.tool == "submit" and blame.consequence == "the run failed"
