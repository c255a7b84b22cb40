"""InterCode's Bash runs (princeton-nlp/intercode, `data/results/bash/`) as native trajectories.

A shell agent on the NL2Bash tasks (200 requests over four file systems, `data/nl2bash/
nl2bash_fs_N.json`, each with its gold command) in up to 10 turns, one JSON file per model and
file system: `{id: {"query", "task_id", "turn_history": {"actions", "observations", "rewards",
"valid_action"}, "summary": {"max_reward", ...}}}`. Not in ../shared/datasets: fetch the
repository (`fetch github:princeton-nlp/intercode`, then a clone of the snapshot) and pass its
folder to bench/quality.py with `--intercode DIR`. The models' runs of the same task are the
same task asked again: MODELS[0]'s runs are the probes, the others' the history. Each run:

* step 0, `user_input`: the request;
* each action -> `tool_call` `bash` `{"command": action}`, its observation (cut at
  OBSERVATION_CHARS: a `find /` listing can be a megabyte; a NUL, `find -print0`'s separator,
  written `\\0`: the API refuses NUL, which PostgreSQL text cannot hold) and `is_error` when the
  harness marked the action invalid;
* outcome: success when the checker's best reward is 1.0, else failure (InterCode counts a task
  solved only at 1.0; its lower rewards are a similarity of outputs and file systems, not a part
  of the task done).

The gold (for bench/lesson_quality.py and bench/splits.family, never for the product): the gold
command's programs (`programs`: the first word of each pipeline stage, `-exec` and `xargs`
target), the programs that change the file system (WRITING, `find -delete` as `rm`, or a `>`
redirect), and the task's
operative program (`operative_program`: its first program that is not a file finder or a text
filter, else its first program).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.datasets import Run

# MODELS[0] answers the probes; the rest are the history (their runs of the same 200 tasks).
MODELS = ["gpt-4", "gpt-3.5", "text-davinci-003", "chat-bison-001"]
FILE_SYSTEMS = [1, 2, 3, 4]
OBSERVATION_CHARS = 10_000
TOOLS = ["bash"]
ENVIRONMENT = ["bash"]

WRITING = frozenset(
    "rm rmdir mv cp mkdir touch chmod chown chgrp ln tar gzip gunzip zip unzip bzip2 tee dd "
    "truncate install rsync split patch rename cpio".split()
)
# Finders, filters and cd: a stage that only selects, formats or goes where another works.
_FEEDERS = frozenset(
    "find xargs echo cat sort uniq head tail wc awk sed cut tr grep egrep tee printf ls cd".split()
)
_STAGE = re.compile(r"\|\||&&|[|;`]|\$\(|-exec(?:dir)?\b|\bxargs\b(?:\s+-\S+(?:\s+\{\})?)*")
_REDIRECT = re.compile(r"(?<![<>&0-9])>{1,2}(?![&(])\s*(?!/dev/null)\S")


def programs(command: str) -> list[str]:
    """The programs a command line runs, in order (each stage's first word, paths stripped)."""
    found = []
    for stage in _STAGE.split(command):
        words = [w for w in stage.split() if "=" not in w.split("/")[0] or w.startswith("-")]
        while words and (words[0] in ("sudo", "time", "(", "{", "!") or words[0].startswith("-")):
            words = words[1:]
        if words:
            name = words[0].strip("()'\"").rsplit("/", 1)[-1]
            if re.fullmatch(r"[a-z][\w.+-]*", name):
                found.append(name)
    return found


_ARCHIVE_READS = re.compile(r"\s-(?:[a-zA-Z]*[clt][a-zA-Z]*|-stdout|-list|-test)\b")


def writes(command: str) -> set[str]:
    """The programs of `command` that change the file system ("redirect" for a `>`); an
    archiver that only lists, tests or prints (`tar -tzf`, `gunzip -c`) changes nothing."""
    changed = {p for p in programs(command) if p in WRITING}
    for archiver in changed & {"tar", "gzip", "gunzip", "bzip2", "unzip"}:
        stage = command.split(archiver, 1)[1].split("|", 1)[0]
        mode = _ARCHIVE_READS.search(" " + stage)
        if mode and not (archiver == "tar" and re.search(r"\s-?[a-z]*[cxru]", " " + stage)):
            changed.discard(archiver)
    if "sed" in programs(command) and re.search(r"\bsed\s+(?:-\w+\s+)*-i", command):
        changed.add("sed")
    if "find" in programs(command) and re.search(r"\s-delete\b", command):
        changed.add("rm")  # find's own removal: what the task's `rm` is
    if _REDIRECT.search(re.sub(r"'[^']*'|\"[^\"]*\"", "", command)):
        changed.add("redirect")
    return changed


def operative_program(command: str) -> str:
    ran = programs(command)
    return next((p for p in ran if p not in _FEEDERS), ran[0] if ran else "")


def episode_steps(episode: dict, tool: str, key: str, refused: str = "") -> list[dict]:
    """An InterCode episode's request, then one `tool` call per action the harness ran (its text
    under `key`), the observation cut at OBSERVATION_CHARS with NUL written `\\0`; `is_error`
    when the harness marked the action invalid or the observation starts with `refused`."""
    history = episode["turn_history"]
    steps: list[dict] = [{"index": 0, "kind": "user_input", "content": episode["query"]}]
    valid = history.get("valid_action") or [True] * len(history["actions"])
    # An action past the last observation was never run (a reply the harness blocked): left out.
    ran = zip(history["actions"], history["observations"], valid, strict=False)
    for action, observation, ok in ran:
        text = observation if isinstance(observation, str) else json.dumps(observation)
        text = text.replace("\x00", "\\0")
        steps.append({
            "index": len(steps), "kind": "tool_call", "tool": tool,
            "arguments": {key: action}, "observation": text[:OBSERVATION_CHARS],
            "is_error": not ok or bool(refused and text.startswith(refused)),
        })  # fmt: skip
    return steps


def _episode(model: str, fs: int, episode: dict, gold: str) -> Run:
    steps = episode_steps(episode, "bash", "command")
    reward = float(episode["summary"]["max_reward"])
    task = f"fs{fs}-{episode['task_id']}"
    body = {
        "external_id": f"intercode-bash-{model}-{task}",
        "agent": f"intercode-{model}",
        "task": episode["query"],
        "task_type": "operation",
        "environment": ENVIRONMENT,
        "outcome": "success" if reward >= 1.0 else "failure",
        "steps": steps,
        "metadata": {"dataset": "intercode-bash", "model": model, "task": task, "reward": reward},
    }
    meta = {"gold": gold, "writes": sorted(writes(gold)), "program": operative_program(gold)}
    return Run(body=body, dataset="bash", group=task, split_key=MODELS.index(model), meta=meta)


def load(repo: Path) -> list[Run]:
    """Every run of MODELS on every file system, in task order (runs of a task together)."""
    runs = []
    for fs in FILE_SYSTEMS:
        gold = json.loads((repo / "data" / "nl2bash" / f"nl2bash_fs_{fs}.json").read_text())
        for model in MODELS:
            name = f"ic_bash_multiturn_{model}_10_turns_fs_{fs}.json"
            path = repo / "data" / "results" / "bash" / model / name
            if not path.is_file():
                continue  # gpt-3.5 on fs 2 is not in the snapshot (too large)
            for episode in json.loads(path.read_text()).values():
                runs.append(_episode(model, fs, episode, gold[episode["task_id"]]["gold"]))
    runs.sort(key=lambda r: (FILE_SYSTEMS.index(int(r.group[2])), int(r.group.split("-")[1]),
                             r.split_key))  # fmt: skip
    return runs
