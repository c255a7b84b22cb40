"""InterCode's Bash runs as native trajectories, from a checkout laid out as the repository's."""

import json
from pathlib import Path

import pytest

from bench.datasets import intercode
from bench.lesson_quality import is_read_only, right_tools_first
from bench.splits import family, split, unseen_split


def episode(task_id: int, query: str, actions, observations, rewards, valid=None) -> dict:
    return {
        "environment": "ic_bash",
        "task_id": task_id,
        "query": query,
        "turn_history": {
            "actions": actions,
            "observations": observations,
            "rewards": rewards,
            "valid_action": valid if valid is not None else [True] * len(observations),
        },
        "summary": {"max_reward": max(rewards), "turns_taken": len(actions)},
    }


GOLD = [
    {"query": "Count the .py files under /testbed", "gold": "find /testbed -name '*.py' | wc -l"},
    {"query": "Remove the empty files in /testbed", "gold": "find /testbed -empty -exec rm {} \\;"},
]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    nl2bash = tmp_path / "data" / "nl2bash"
    nl2bash.mkdir(parents=True)
    for fs in intercode.FILE_SYSTEMS:
        (nl2bash / f"nl2bash_fs_{fs}.json").write_text(json.dumps(GOLD if fs == 1 else []))
    for number, model in enumerate(intercode.MODELS):
        folder = tmp_path / "data" / "results" / "bash" / model
        folder.mkdir(parents=True)
        runs = {
            "0": episode(
                0, GOLD[0]["query"],
                ["find /testbed -name '*.py' -print0", "find /testbed -name '*.py' | wc -l"],
                ["/testbed/a.py\x00/testbed/b.py\x00", "2\n"],
                [0.5, 1.0 if number % 2 == 0 else 0.9],
            ),
            # The harness blocked the second reply: an action with no observation.
            "1": episode(1, GOLD[1]["query"], ["ls /testbed", "blocked"], ["a.py b.py\n"], [0.3]),
        }  # fmt: skip
        (folder / f"ic_bash_multiturn_{model}_10_turns_fs_1.json").write_text(json.dumps(runs))
    return tmp_path


def test_each_run_becomes_a_request_and_its_shell_calls(checkout):
    runs = intercode.load(checkout)

    first = runs[0]
    assert first.external_id == "intercode-bash-gpt-4-fs1-0" and first.split_key == 0
    steps = first.body["steps"]
    assert steps[0] == {"index": 0, "kind": "user_input", "content": GOLD[0]["query"]}
    assert steps[1]["tool"] == "bash"
    assert steps[1]["arguments"] == {"command": "find /testbed -name '*.py' -print0"}
    # find -print0's NUL separators are written \0: the API refuses NUL.
    assert steps[1]["observation"] == "/testbed/a.py\\0/testbed/b.py\\0"
    assert first.body["outcome"] == "success"


def test_a_reward_below_one_is_a_failure_and_an_unrun_action_is_left_out(checkout):
    runs = {r.external_id: r for r in intercode.load(checkout)}

    assert runs["intercode-bash-gpt-3.5-fs1-0"].body["outcome"] == "failure"  # 0.9
    blocked = runs["intercode-bash-gpt-4-fs1-1"].body["steps"]
    assert [s.get("arguments") for s in blocked[1:]] == [{"command": "ls /testbed"}]


def test_runs_of_a_task_are_grouped_and_the_first_model_answers_the_probes(checkout):
    data = split("bash", None, intercode_dir=checkout)

    assert {r.group for r in data.probes} == {"fs1-0", "fs1-1"}
    assert all(r.body["agent"] == "intercode-gpt-4" for r in data.probes)
    assert len(data.history) == 2 * (len(intercode.MODELS) - 1)
    assert unseen_split(data) is None  # two tasks: none held out


@pytest.mark.parametrize(
    ("command", "ran", "changed", "operative"),
    [
        ("find /testbed -type f -name '*.java' -exec md5sum {} + | sort | uniq -d",
         ["find", "md5sum", "sort", "uniq"], set(), "md5sum"),
        ("find /system -type f -print0 | xargs -0 -n1 rm -f", ["find", "rm"], {"rm"}, "rm"),
        ("find /testbed -name '*.py' | wc -l", ["find", "wc"], set(), "find"),
        ("sed -i 's/a/b/' /testbed/f.txt", ["sed"], {"sed"}, "sed"),
        ("echo 'a > b' | grep a > /testbed/out.txt", ["echo", "grep"], {"redirect"}, "echo"),
        ("ls /testbed 2>/dev/null", ["ls"], set(), "ls"),
        ("cd /testbed && tar czf x.tgz dir1", ["cd", "tar"], {"tar"}, "tar"),
        ("tar -tzf /testbed/x.tgz | grep a", ["tar", "grep"], set(), "tar"),  # lists
        # find's own -delete removes as rm does: a removal task's gold needs what rm does.
        ("find /testbed -name '*.txt' -delete", ["find"], {"rm"}, "find"),
        ("find /testbed -type f -exec rename 's/a/b/' {} +", ["find", "rename"], {"rename"},
         "rename"),
        ("find /testbed -name '*.gz' -exec gunzip -c {} + | wc -l",
         ["find", "gunzip", "wc"], set(), "gunzip"),  # prints
    ],
)  # fmt: skip
def test_the_gold_commands_programs_writes_and_kind(command, ran, changed, operative):
    assert intercode.programs(command) == ran
    assert intercode.writes(command) == changed
    assert intercode.operative_program(command) == operative


def test_the_lesson_figures_read_a_shell_command_by_what_it_runs(checkout):
    runs = intercode.load(checkout)
    probe = runs[0]
    assert family(probe) == "find"
    assert is_read_only("bash", "bash", ' "find <path> -name …"', set())
    assert not is_read_only("bash", "bash", ' "find <path> -empty -delete | xargs rm"', set())
    answers = [{"items": [{"advice": "When you use bash: first find <path from the request>"}]}]
    assert right_tools_first("bash", [probe], answers, runs) == 1.0
    answers = [{"items": [{"advice": 'When you use bash: call it with "ls <path>"'}]}]
    assert right_tools_first("bash", [probe], answers, runs) == 0.0
