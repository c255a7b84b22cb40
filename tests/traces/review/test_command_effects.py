"""A command line is judged by its command: a shell tool reads in one call and changes files in
the next (pure functions, and a coding run reviewed by the heuristic reviewer)."""

import pytest

from tests.support.review_builders import request_for, sv, tv
from traces.review.command_effects import call_verdict, command_effect, command_line
from traces.review.heuristic import HeuristicReviewer

TASK = "Fix parse_date in utils/date.py: parse_date('2024-02-30') must raise ValueError"


@pytest.mark.parametrize(
    ("command", "reads"),
    [
        ("cat utils/date.py", True),
        ('ls -la && grep -n "a|b" utils/date.py | head', True),  # a quoted | is no pipe
        ("cd /repo && python -m pytest -x 2>&1 | tail -20", True),
        ("git diff HEAD", True),
        ("awk '$1 > 5' data.txt", True),  # a quoted > is no redirect
        ("grep -q x f >/dev/null 2>&1", True),
        ("timeout 30 pytest -q", True),
        ("npm test", True),
        ("view", True),  # str_replace_editor's command: a verb of reading
        ("sed -i 's/a/b/' utils/date.py", False),
        ("echo fixed > notes.txt", False),
        ("cat > f.py <<EOF\nprint(1)\nEOF", False),
        ("git commit -am fix", False),
        ("python -m pip install requests", False),
        ('find . -name "*.pyc" -delete', False),
        ("grep -l tmp . | xargs rm", False),
        ("create", False),
        ("str_replace", False),
        ("python fix.py", None),  # a script: nothing says what it does
        ("ls && python fix.py", None),
        ('echo "unclosed', None),
        # find judged by what it runs on each file (`\\;` ends its -exec; a second -exec too)
        ("find /testbed -name '*.java' -exec md5sum {} + | sort | uniq -d", True),
        ("find . -type f -exec md5sum {} \\; -exec echo {} \\; | wc -l", True),
        ("find . -name '*.php' -exec chmod 755 {} \\; -exec echo {} \\;", False),
        ("find /system -name '*.o' -exec rm {} \\;", False),
        ("find /system -type f -print0 | xargs -0 -n1 rm -f", False),  # xargs' options skipped
        ("find . -name x | xargs -I {} cp {} /tmp", False),
        ("hostname; md5sum a.java | comm -23 <(sort a) -", True),
        ("tar czf /backup.tar dir1", False),
        ("tar -tzf backup.tar", True),  # lists
        ("gzip -9 notes.txt", False),
        ("gzip -c notes.txt | wc -c", True),
    ],
)  # fmt: skip
def test_a_command_line_reads_only_when_every_command_of_it_does(command, reads):
    assert command_effect(command)[0] is reads


def test_a_command_line_is_a_command_argument_or_the_argument_of_a_shell_tool():
    assert command_line("str_replace_editor", {"command": "view", "path": "a.py"}) == "view"
    assert command_line("execute_bash", {"command": "ls"}) == "ls"
    assert command_line("terminal", "git status") == "git status"
    assert command_line("search", "red cotton t-shirt") is None  # not a shell: its words stay
    assert command_line("click", "Buy Now") is None
    assert command_line("get_user_details", {"user_id": "mia_li_3668"}) is None


@pytest.mark.parametrize(
    ("tool", "arguments", "reads"),
    [
        ("run_sql", {"query": "SELECT name FROM users WHERE id = 3"}, True),
        ("run_sql", {"sql": "-- totals\nWITH t AS (SELECT 1) SELECT * FROM t"}, True),
        ("query_db", "EXPLAIN SELECT 1", True),
        ("run_sql", {"query": "UPDATE users SET name = 'x' WHERE id = 3"}, False),
        ("execute_sql", "DELETE FROM orders WHERE id = 1", False),
        ("run_sql", {"statement": "select count(*) from t; drop table t"}, False),
        ("run_sql", {"query": "WITH old AS (SELECT 1) DELETE FROM t"}, False),
        ("search", {"query": "update on the election"}, None),  # words, no statement
        ("Search", {"query": "Grant Hill"}, None),
        ("Search", {"query": "Show Boat"}, None),
        ("search_logs", {"query": "SELECT msg FROM logs WHERE level = 'error'"}, True),
        ("get_user_details", {"user_id": "mia_li_3668"}, None),
    ],
)  # fmt: skip
def test_a_sql_statement_reads_or_changes_state_by_what_it_does(tool, arguments, reads):
    assert call_verdict(tool, arguments)[0] is reads


def bash(index, command, result, error=False):
    return sv(index, tool="bash", arguments={"command": command}, observation=result,
              is_error=error)  # fmt: skip


def fix(index):
    return sv(index, tool="str_replace_editor",
              arguments={"command": "str_replace", "path": "utils/date.py",
                         "old_str": "return date", "new_str": "return _checked"},
              observation="The file utils/date.py has been edited.")  # fmt: skip


def test_a_coding_success_teaches_its_edit_and_the_test_run_that_checked_it():
    """The reads before the edit are look-ups (the gap says so); the tests run again after the
    edit check it, so they are neither a repeat nor left out of the strategy."""
    steps = [
        sv(0, "user_input", content=TASK),
        bash(1, "ls utils", "date.py\n__init__.py"),
        bash(2, "cat utils/date.py", "def parse_date(s):\n    return date(*s.split('-'))"),
        bash(3, "grep -n parse_date tests/test_date.py", "5:    parse_date('2024-02-30')"),
        bash(4, "python -m pytest tests/test_date.py", "1 failed"),
        fix(5),
        bash(6, "python -m pytest tests/test_date.py", "3 passed"),
        sv(7, tool="submit", observation="submitted"),
    ]  # fmt: skip
    outcome = HeuristicReviewer().review(request_for(tv(task=TASK, outcome="success"), steps))
    labels = {j.index: j.label for j in outcome.template.labels}
    assert labels[6] == "necessary"  # not "repeats step 4": the edit came between
    assert outcome.template.experience == (
        'When you use submit, first bash "ls utils", then 3 more look-up(s), then '
        'str_replace_editor "str_replace" <path from the request> <old_str from bash> …, then '
        'bash "python -m pytest <path of the case>" again.'
    )


def test_the_same_case_is_told_its_tests_failed_before_the_fix_not_to_stop_running_them():
    steps = [
        sv(0, "user_input", content=TASK),
        bash(1, "python -m pytest tests/test_date.py", "1 failed", error=True),
        fix(2),
        bash(3, "python -m pytest tests/test_date.py", "3 passed"),
        sv(4, tool="submit", observation="submitted"),
    ]  # fmt: skip
    outcome = HeuristicReviewer().review(request_for(tv(task=TASK, outcome="success"), steps))
    replay = outcome.template.replay
    assert 'do not bash "python -m pytest' not in replay, replay
    assert replay.endswith(
        'bash "python -m pytest tests/test_date.py" failed at first (it returned "1 failed").'
    ), replay
