"""ReAct on HotpotQA (noahshinn/reflexion, 100 questions x 5 trials) as native trajectories.

An episode is `Question:`, then numbered `Thought k:` / `Action k: Tool[argument]` /
`Observation k:` lines (observations may run over several lines). It becomes:

* step 0, `user_input`: the question;
* per k: an `llm_reasoning` step (the thought) and a `tool_call` step (`Search` / `Lookup` /
  `Finish`, the bracketed argument as `{"query"}`, `{"keyword"}` or `{"answer"}`, the
  observation as it was printed);
* outcome: the `CORRECT AGENTS` section -> success, `INCORRECT` and `HALTED` -> failure;
  the final answer is the `Finish[...]` argument. `Correct answer:` (the gold answer, which the
  agent never saw) is not sent: the benchmark keeps it in `Run.meta["gold_answer"]`.
No step is flagged `is_error`: the log has no such flag, and telling a failed search from a
useful one is the reviewer's work.
"""

import hashlib
import re
from pathlib import Path

from bench.datasets import DATASETS, Run

PATH = DATASETS / "reflexion-hotpotqa" / "react_base_100_questions_5_trials.txt"
AGENT = "react-hotpotqa"
_LINE = re.compile(r"^(Thought|Action|Observation) (\d+): ?(.*)$")
_ACTION = re.compile(r"^\s*(\w+)\[(.*)\]\s*$", re.DOTALL)
_ARGUMENT = {"Search": "query", "Lookup": "keyword", "Finish": "answer"}
_SECTION = {"CORRECT": "success", "INCORRECT": "failure", "HALTED": "failure"}


def question_key(question: str) -> str:
    return hashlib.sha1(" ".join(question.split()).lower().encode()).hexdigest()[:12]


def _episode(trial: int, number: int, section: str, lines: list[str]) -> Run:
    question = lines[0].removeprefix("Question:").strip()
    steps: list[dict] = [{"index": 0, "kind": "user_input", "content": question}]
    answer, gold = "", ""
    current: dict | None = None
    for line in lines[1:]:
        if line.startswith("Correct answer:"):
            gold = line.removeprefix("Correct answer:").strip()
            current = None
            continue
        match = _LINE.match(line)
        if match is None:
            if current is not None and current["kind"] == "tool_call":
                current["observation"] += "\n" + line  # an observation over several lines
            continue
        what, _, text = match.groups()
        if what == "Thought":
            current = {"index": len(steps), "kind": "llm_reasoning", "content": text.strip()}
            steps.append(current)
        elif what == "Action":
            call = _ACTION.match(text)
            tool, argument = (call.group(1), call.group(2)) if call else ("Unparsed", text)
            current = {
                "index": len(steps),
                "kind": "tool_call",
                "tool": tool,
                "arguments": {_ARGUMENT.get(tool, "input"): argument.strip()},
                "observation": "",
            }
            if tool == "Finish":
                answer = argument.strip()
            steps.append(current)
        elif current is not None and current["kind"] == "tool_call":
            current["observation"] = text
    for step in steps:
        if step["kind"] == "tool_call":
            step["observation"] = step["observation"].strip()
    key = question_key(question)
    body = {
        "external_id": f"hotpotqa-t{trial}-{number:03d}",
        "agent": AGENT,
        "task": question,
        "task_type": "query",
        "environment": ["wikipedia"],
        "outcome": _SECTION[section],
        "final_answer": answer,
        "steps": steps,
        "metadata": {"dataset": "reflexion-hotpotqa", "trial": trial, "section": section},
    }
    return Run(body=body, dataset="hotpotqa", group=key, split_key=trial,
               meta={"section": section, "gold_answer": gold})  # fmt: skip


def load(path: Path = PATH) -> list[Run]:
    """Every episode of every trial, in file order (trial 0 = `BEGIN TRIAL 1`)."""
    runs: list[Run] = []
    trial, section, episode = -1, "", None
    numbers: dict[int, int] = {}

    def close() -> None:
        if episode:
            runs.append(_episode(trial, numbers[trial], section, episode))
            numbers[trial] += 1

    for raw in path.read_text().splitlines():
        line = raw.rstrip()
        if line.startswith("BEGIN TRIAL"):
            close()
            episode = None
            trial = int(line.split()[-1]) - 1
            numbers[trial] = 0
        elif line.startswith("------------- BEGIN"):
            close()
            episode = None
            section = line.split()[2]
        elif line.startswith("Question:"):
            close()
            episode = [line]
        elif episode is not None and line and not line.startswith("#"):
            episode.append(line)
    close()
    return runs
