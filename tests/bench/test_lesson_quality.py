"""The served-advice figures' detectors (bench/lesson_quality.py) read the wordings the
reviewer writes: a warning is found whether it forbids ("do not X") or asks to check first
("… before you X."), and a warning is no recommendation; the figures read what the agent is
shown (a same-case item's replay, not its advice); the τ-bench query of the labelled "recalled
again before the first write" line."""

from bench.lesson_quality import _recommends, lesson_figures, warned_tools

TOOLS = {"cancel_reservation", "get_reservation_details", "fs.read"}


def test_a_check_before_the_call_warns_of_it_even_at_the_end_of_a_sentence():
    advice = (
        "When you use cancel_reservation: a run that called it with <reservation_id from "
        "get_reservation_details> failed; make this change only when the request asks for it "
        "and the rules allow it: check both before you cancel_reservation."
    )
    assert warned_tools(advice, TOOLS) == {"cancel_reservation"}
    assert not _recommends(advice, {"cancel_reservation"})
    assert warned_tools("Check the path before you fs.read.", TOOLS) == {"fs.read"}
    assert warned_tools("do not cancel_reservation <reservation_id>: the run failed.", TOOLS) == {
        "cancel_reservation"
    }


def test_a_failed_run_s_replay_names_its_changes_to_check_not_to_make():
    for replay in (
        'The same case ran before (failure): get_reservation_details "K1NW8N"; the run failed '
        'after cancel_reservation "K1NW8N": check that change against the request and the '
        "rules before you make it again.",
        'The same case ran before (failure): get_reservation_details "K1NW8N"; after '
        'cancel_reservation "K1NW8N" the user replied "No!"; its changes were cancel_reservation '
        '"K1NW8N", fs.read "a": check each change against the request and the rules before you '
        "make it again.",
    ):
        assert "cancel_reservation" in warned_tools(replay, TOOLS)
        assert not _recommends(replay, {"cancel_reservation"})
    success = (
        'The same case ran before (success): get_reservation_details "K1NW8N"; its changes were '
        'cancel_reservation "K1NW8N"; the answer was "Done.".'
    )
    assert _recommends(success, {"cancel_reservation"})


def test_the_figures_read_the_replay_a_same_case_item_is_served_as():
    from bench.datasets import Run

    probe = Run(body={"external_id": "p", "task": "cancel K1NW8N", "outcome": "success"},
                dataset="hotpotqa", group="g", split_key=4)  # fmt: skip
    replay = "The same case ran before (failure): it led to a result with id, status, user_id."
    item = {"experience_id": 1, "advice": "When you use Search: call it with <query>.",
            "same_instance": True, "replay": replay}  # fmt: skip

    def figures():
        return lesson_figures("hotpotqa", [], [probe], [{"items": [item], "prompt_block": ""}])

    assert figures()["junk_consequences"] == 1  # the replay is what the agent read
    item["replay"] = ""  # served to another case: the advice is
    assert figures()["junk_consequences"] == 0


def test_a_workflow_that_makes_the_change_recommends_it():
    advice = (
        "When you use get_reservation_details, first get_user_details <user_id from the "
        "request>, then cancel_reservation <reservation_id from get_user_details>."
    )
    assert _recommends(advice, {"cancel_reservation"})
    assert warned_tools(advice, TOOLS) == set()


def test_a_recipe_recommends_the_tool_it_is_for_a_lesson_only_names_it():
    # "When you use X, first …; call it with …" teaches how to make the change X: it pushes X.
    recipe = (
        "When you use cancel_reservation, first get_reservation_details <reservation_id from the "
        "request>; call it with <reservation_id from the request>."
    )
    assert _recommends(recipe, {"cancel_reservation"})
    assert _recommends("When you use cancel_reservation: call it with <reservation_id>.",
                       {"cancel_reservation"})  # fmt: skip
    lesson = (
        "When you use cancel_reservation: do not cancel_reservation <reservation_id>: it failed."
    )
    assert not _recommends(lesson, {"cancel_reservation"})


def test_the_later_recall_knows_every_user_turn_before_the_first_change():
    from bench.datasets.tau import _request, _request_before_write

    def called(tool):
        return {"role": "assistant", "tool_calls": [{"function": {"name": tool}}]}

    messages = [
        {"role": "user", "content": "Hi, I need help with my reservation."},
        called("get_user_details"),
        {"role": "user", "content": "Please cancel it: I cannot travel."},
        called("cancel_reservation"),
        {"role": "user", "content": "Thanks!"},
    ]
    assert _request(messages) == "Hi, I need help with my reservation."
    assert _request_before_write(messages, {"cancel_reservation"}) == (
        "Hi, I need help with my reservation.\nPlease cancel it: I cannot travel."
    )
    assert _request_before_write(messages[:3], {"cancel_reservation"}).endswith("travel.")


def test_a_replayed_hand_off_is_counted_in_the_headline_and_set_aside_in_its_own_line():
    from bench.datasets import Run

    probe = Run(body={"external_id": "p", "task": "cancel 3RK2T9", "outcome": "success"},
                dataset="tau", group="41", split_key=3,
                meta={"writes": ["cancel_reservation", "transfer_to_human_agents"],
                      "gold_actions": [{"name": "get_reservation_details"}]})  # fmt: skip
    replay = (
        "The same case ran before (success) and changed nothing: get_reservation_details "
        '"3RK2T9"; then it handed the case to a person (transfer_to_human_agents "…").'
    )
    told = (  # the hand-off told without its tool's name, after what the run told the user
        "The same case ran before (success) and changed nothing: get_reservation_details "
        '"3RK2T9"; it told the user "No insurance was bought.", then handed the case to a person.'
    )
    for text in (replay, told):
        item = {"experience_id": 1, "advice": "", "same_instance": True, "replay": text}
        figures = lesson_figures("tau", [], [probe], [{"items": [item], "prompt_block": ""}])
        assert figures["state_changing_unneeded_share"] == 1.0
        assert figures["state_changing_unneeded_hand_offs_aside_share"] == 0.0


def test_a_quoted_shell_command_is_one_piece_of_its_clause_and_its_diagnostic_a_failure():
    from bench.lesson_quality import _FAILED_WORDS, forbidden_calls

    advice = (
        'When you use bash: do not bash "find <path> -name x -exec rm {} \\; | wc -l": it '
        'returned "find: missing argument to `-exec\'". Instead, bash "ls".'
    )
    [(tool, argument, clause)] = forbidden_calls(advice, {"bash"})
    assert tool == "bash" and "| wc -l" in argument  # the quoted "; " ends no clause
    assert _FAILED_WORDS.search(clause)  # a program's diagnostic is a failure
    assert not _FAILED_WORDS.search('bash "ls": it returned "a.txt b.txt"')


def test_a_shell_command_instructs_another_run_s_literal_by_its_file_names_and_ids():
    from bench.lesson_quality import _instructs_other_literal

    def literal(advice: str, task: str) -> bool:
        return _instructs_other_literal(advice, task, {"bash"}, set(), shell=True)

    php = 'When you use bash: call it with "find <path from the request> -name "*.php" | wc -l".'
    assert literal(php, "count the lines of all '*.c' files in /testbed")
    assert not literal(php, "count the lines of all php files in /testbed")
    # Programs (md5sum), options and syntax are the same next time; a directory name is a value.
    assert not literal('When you use bash: call it with "md5sum $(sort -u "$f") 2>/dev/null".', "x")
    assert literal('When you use bash: call it with "ls dir1 | wc -l".', "list the files")


def test_a_shell_command_recommends_the_writes_it_runs_not_its_words():
    advice = (
        'When you use bash: call it with "find <path> -name "*.o" -exec rm {} \\;". Do not bash '
        '"rm -rf <path>": it returned "rm: cannot remove". Then bash "gunzip -c <path> | wc -l".'
    )
    assert _recommends(advice, {"rm"}, shell=True)  # the -exec after the quoted "*.o"
    assert not _recommends(advice, {"gunzip"}, shell=True)  # -c only prints
    assert not _recommends('Do not bash "rm -rf <path>": it failed.', {"rm"}, shell=True)


def test_a_recipe_for_a_purpose_the_task_does_not_name_is_pushed_on_nobody():
    recipe = 'When you use bash to remove: call it with "find <path> -name "*.o" -exec rm {} \\;".'
    assert not _recommends(recipe, {"rm"}, shell=True, task="Find the latest modified file")
    assert _recommends(recipe, {"rm"}, shell=True, task="Recursively remove the *.o files")
    assert _recommends('When you use bash: call it with "rm -f <path>".', {"rm"}, shell=True,
                       task="Find the latest modified file")  # fmt: skip
