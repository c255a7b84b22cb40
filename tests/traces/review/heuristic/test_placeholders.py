"""A call as a strategy: the values inside a short command are named by where they came from,
the command itself stays (pure functions of hand-built steps)."""

import pytest

from tests.support.review_builders import sv
from traces.review.heuristic.placeholders import Sources, call_pattern

TASK = "Fix parse_date in utils/date.py: parse_date('2024-02-30') must raise ValueError"


def bash(index: int, command: str, result: str = ""):
    return sv(index, tool="bash", arguments={"command": command}, observation=result)


@pytest.mark.parametrize(
    ("command", "pattern"),
    [
        ("cat utils/date.py", 'bash "cat <path from the request>"'),
        ("python -m pytest tests/test_date.py", 'bash "python -m pytest <path from bash>"'),
        ("kubectl logs pod-7f9c", 'bash "kubectl logs <value of the case>"'),
        ("cat setup.cfg", 'bash "cat <path of the case>"'),
        ("ls utils", 'bash "ls utils"'),  # a word: the same next time
        ("git status", 'bash "git status"'),
    ],
)  # fmt: skip
def test_the_values_inside_a_short_command_are_named_by_where_they_came_from(command, pattern):
    steps = [bash(0, "ls tests", "test_date.py\ntests/test_date.py"), bash(1, command)]
    assert call_pattern(steps[1], Sources.of(TASK, steps)) == pattern


def test_a_name_from_nowhere_the_run_shows_or_a_value_of_one_piece_stays_as_it_was():
    edit = sv(0, tool="str_replace_editor", arguments={"command": "str_replace"})
    assert call_pattern(edit, Sources.of(TASK, [edit])) == 'str_replace_editor "str_replace"'
    read = sv(0, tool="read_file", arguments={"path": "/etc/app.yml"})
    assert call_pattern(read, Sources.of(TASK, [read])) == 'read_file "/etc/app.yml"'


def test_a_command_whose_words_are_the_request_s_keeps_its_command():
    """The request names the test file: the whole command was "<command in the request's
    words>", which hid that the run ran the tests."""
    task = "Fix slugify in utils/text.py: tests/test_text.py fails"
    steps = [bash(0, "python -m pytest tests/test_text.py", "4 passed")]
    assert call_pattern(steps[0], Sources.of(task, steps)) == (
        'bash "python -m pytest <path from the request>"'
    )
    shell = sv(0, tool="terminal", arguments="python -m pytest tests/test_text.py")
    assert call_pattern(shell, Sources.of(task, [shell])) == (
        'terminal "python -m pytest <path from the request>"'
    )
    # A search's words stay the request's: it is no command line.
    search = sv(0, tool="search", arguments={"query": "slugify utils text tests"})
    assert call_pattern(search, Sources.of(task, [search])) == (
        "search <query in the request's words>"
    )
