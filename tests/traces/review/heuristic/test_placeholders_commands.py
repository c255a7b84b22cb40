"""A shell agent's command as a strategy: its programs, options and scripts stay, its values are
named, a long one is cut rather than hidden; the replay of the same case shows the command it ran
(pure functions of hand-built steps; the commands are of InterCode's Bash runs)."""

from tests.support.review_builders import sv
from traces.review.heuristic.placeholders import (
    COMMAND_CHARS,
    Sources,
    call_pattern,
    is_aside,
    literal_call,
)

TASK = "Calculate md5 sum of the md5 sum of all the sorted files under /testbed/dir2/subdir2"


def bash(index: int, command: str, result: str = ""):
    return sv(index, tool="bash", arguments={"command": command}, observation=result)


def pattern(command: str, task: str = TASK) -> str:
    steps = [bash(0, "ls /testbed/dir2/subdir2", "a.txt b1.txt"), bash(1, command)]
    return call_pattern(steps[1], Sources.of(task, steps))


def test_a_program_with_a_digit_in_its_name_is_never_a_value():
    # Was "<value of the case> $(sort -u "$files")": the advice lost the program it was about.
    assert pattern('md5sum $(sort -u "$files")') == 'bash "md5sum $(sort -u "$files")"'
    assert pattern("find /testbed/dir2/subdir2 -print0 | xargs -0 -n1 md5sum") == (
        'bash "find <path from the request> -print0 | xargs -0 -n1 md5sum"'
    )


def test_a_quoted_script_or_pattern_keeps_its_own_text():
    # Was "sed 's/[^;0-9]<path of the case>'": a regular expression read as a file.
    task = 'Remove everything but digits and semicolons from "hello world;876"'
    assert pattern("echo 'hello world;876' | sed 's/[^;0-9]//g'", task) == (
        "bash \"echo '<value from the request>' | sed 's/[^;0-9]//g'\""
    )
    # A value the run shows is named inside quotes too.
    assert pattern("grep -c 'b1.txt' /tmp/list") == (
        "bash \"grep -c '<path from bash>' <path of the case>\""
    )


def test_a_long_command_is_cut_not_hidden():
    long = (
        "find /testbed/dir2/subdir2 -type f -exec md5sum {} \\; | sort -k 2 | awk '{print $1}' "
        "| tr -d '\\n' | md5sum | cut -d ' ' -f 1"
    )
    shown = pattern(long)
    assert shown.startswith('bash "find <path from the request> -type f -exec md5sum {} \\; |')
    assert shown.endswith('…"') and "written for the case" not in shown
    assert len(shown) <= len('bash ""') + COMMAND_CHARS
    # A script of several lines is the case's own.
    assert pattern("cat > fix.py <<EOF\nimport os\nprint(os.getcwd())\nEOF") == (
        "bash <command written for the case>"
    )


def test_the_same_case_replay_shows_the_command_it_ran():
    # Cut at 30 it read "find /testbed/dir2/subdir2 -t…": nothing of what it did.
    ran = bash(1, "find /testbed/dir2/subdir2 -type f | sort | xargs md5sum | md5sum")
    assert literal_call(ran) == (
        'bash "find /testbed/dir2/subdir2 -type f | sort | xargs md5sum | md5sum"'
    )
    edit = sv(2, tool="str_replace_editor", arguments={"command": "view", "path": "a.py"})
    assert literal_call(edit) == "str_replace_editor command=view, path=a.py"


def test_a_command_that_printed_nothing_did_its_work_and_is_taught():
    # `rm` says nothing when it works: taken for an aside (a `think` tool), the one-command
    # success taught nothing and its replay named no call.
    from tests.support.review_builders import request_for, tv
    from traces.review.heuristic import HeuristicReviewer

    task = "Remove all *.doc files from the /system/folder1 tree"
    steps = [bash(1, "rm -rf /system/folder1/*.doc")]
    outcome = HeuristicReviewer().review(request_for(tv(task=task, outcome="success"), steps))
    template = outcome.template
    assert template.worth_reference
    # "When you use bash:" is every shell run's condition: the recipe names the request's goal.
    assert template.experience.startswith(
        'When you use bash to remove all files: call it with "rm -rf '
    )
    assert template.strategy == 'bash "rm -rf <path from the request>/<pattern from the request>"'
    assert template.replay == (
        'The same case ran before (success): bash "rm -rf /system/folder1/*.doc".'
    )
    # A think tool's empty result is still an aside.
    think = sv(1, tool="think", arguments={"thought": "first list the folder"}, observation="")
    assert is_aside(think) and not is_aside(steps[0])


def test_a_file_pattern_the_request_names_is_the_request_s():
    # Served to "count the lines of all '*.c' files", `-name "*.php"` was another run's files.
    task = "Count all the lines of all php files in /testbed directory recursively"
    assert pattern('find /testbed -name "*.php" | xargs wc -l', task) == (
        'bash "find <path from the request> -name "<pattern from the request>" | xargs wc -l"'
    )
    assert pattern("find /testbed -name 'new*.sh' -delete", "Remove new*.sh under /testbed") == (
        "bash \"find <path from the request> -name '<pattern from the request>' -delete\""
    )
    # A pattern whose words the request does not hold stays: it is this run's choice.
    assert pattern('find /testbed -name "*.txt" | wc -l', task) == (
        'bash "find <path from the request> -name "*.txt" | wc -l"'
    )


def test_a_sql_statement_is_shown_as_a_command_is():
    # "execute_sql <sql in the request's words>" and "call it with …" hid the query itself.
    def sql(index, statement, result=""):
        return sv(index, tool="execute_sql", arguments={"sql": statement}, observation=result)

    task = "Give the flight numbers of flights leaving from APG."
    steps = [
        sql(1, "DESC flights", "[('FlightNo', 'int'), ('SourceAirport', 'text')]"),
        sql(2, "SELECT FlightNo FROM flights WHERE SourceAirport = 'APG'", "[(28,), (29,)]"),
    ]
    shown = call_pattern(steps[1], Sources.of(task, steps))
    # The airport came from the request: the next request names its own; the schema's names
    # stay (a name with an underscore from the look-up would read <value from execute_sql>).
    assert shown == (
        "execute_sql \"SELECT FlightNo FROM flights WHERE SourceAirport = '<value from the "
        "request>'\""
    )
    long = (
        "SELECT COUNT(*) FROM orchestra WHERE Major_Record_Format = 'CD' OR "
        "Major_Record_Format = 'DVD'"
    )
    assert call_pattern(sql(3, long), Sources.of(task, steps)).startswith(
        'execute_sql "SELECT COUNT(*) FROM orchestra WHERE'
    )
    assert literal_call(steps[1]) == (
        "execute_sql \"SELECT FlightNo FROM flights WHERE SourceAirport = 'APG'\""
    )


def test_a_sql_change_that_printed_nothing_is_taught_for_its_request_s_purpose():
    from tests.support.review_builders import request_for, tv
    from traces.review.heuristic import HeuristicReviewer

    change = sv(
        1, tool="execute_sql", arguments={"sql": "UPDATE users SET plan = 'pro' WHERE id = 7"}
    )
    assert not is_aside(change)  # an UPDATE says nothing when it works
    task = "Update user 7's plan to pro"
    outcome = HeuristicReviewer().review(request_for(tv(task=task, outcome="success"), [change]))
    assert outcome.template.experience.startswith(
        "When you use execute_sql to update user plan: call it"
    )


def test_a_command_recipe_and_a_command_lesson_name_the_goal_they_served():
    # "When you use bash:" holds on every shell task: another task's `tree` recipe was served
    # as advice for "print the source of the file system" (hand-judged misleading).
    from tests.support.review_builders import request_for, tv
    from traces.review.heuristic import HeuristicReviewer

    task = "Print the directory tree of /testbed up to depth 2"
    steps = [bash(1, "tree -L 2 /testbed", "/testbed\n|-- dir1")]
    outcome = HeuristicReviewer().review(request_for(tv(task=task, outcome="success"), steps))
    assert outcome.template.experience.startswith(
        'When you use bash to print the directory tree: call it with "tree -L'
    )
    typo = sv(1, tool="bash", arguments={"command": "tre -L 2 /testbed"}, is_error=True,
              observation="bash: tre: command not found")  # fmt: skip
    failed = [typo]
    outcome = HeuristicReviewer().review(request_for(tv(task=task, outcome="failure"), failed))
    assert outcome.template.experience.startswith("When you use bash to print the directory tree")
    # A change asked in the middle of the request is taught by its verb, not by the look-up
    # the request starts with.
    task = "Find all *.tmp files under /testbed and delete them"
    steps = [bash(1, 'find /testbed -name "*.tmp" -delete')]
    outcome = HeuristicReviewer().review(request_for(tv(task=task, outcome="success"), steps))
    assert outcome.template.experience.startswith("When you use bash to delete: call it")


def test_a_number_the_request_holds_is_the_request_s():
    # "find testbed -type f -mtime +7 -exec gzip" was served, literal, to a request for files
    # "modified in the last 60 days" and judged misleading: another case's filter.
    task = "Compress regular files in /testbed modified more than 7 days ago, the 3 largest"
    assert pattern("find /testbed -mtime +7 -exec gzip {} +", task) == (
        'bash "find <path from the request> -mtime +<value from the request> -exec gzip {} +"'
    )
    assert pattern("du -a /testbed | sort -nr | head -n 3", task).endswith(
        'head -n <value from the request>"'
    )
    assert pattern("find /testbed -size +7k", task) == (
        'bash "find <path from the request> -size +<value from the request>k"'
    )
    # 0 and 1 are syntax; a number the request does not hold, or one in a script, stays.
    assert pattern("find /testbed -maxdepth 1 -mtime +30 | awk '{print $3}'", task) == (
        "bash \"find <path from the request> -maxdepth 1 -mtime +30 | awk '{print $3}'\""
    )
