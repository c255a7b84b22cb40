"""ReAct on WebShop (ysymyth/ReAct, `WebShop.ipynb`, 500 episodes) as native trajectories.

The episodes are printed in the outputs of the notebook cell `run_episodes(prompt1, 500)`,
separated by dashed lines. Each is `Action: reset` (the harness; its observation holds the
instruction), then `Action: ...` / `Observation: ...` pairs. It becomes:

* step 0, `user_input`: the instruction;
* `search[q]` -> `tool_call` `search` `{"query": q}`; `click[x]` -> `tool_call` `click`
  `{"target": x}`; `think[t]` -> `llm_reasoning` (its observation is always "OK.");
* an `Invalid action!` observation -> the step is flagged `is_error` (the harness refused it);
* outcome from `Your score (min 0.0, max 1.0): x`: 1.0 -> success, 0 -> failure, in between ->
  partial; an episode that never bought anything (the 15-action limit) -> failure.
The running averages the harness prints after each episode are not part of it.
"""

import json
import re
from pathlib import Path

from bench.datasets import DATASETS, Run

PATH = DATASETS / "react-webshop" / "WebShop.ipynb"
KINDS = Path(__file__).with_name("webshop_kinds.json")
AGENT = "react-webshop"
_SCORE = re.compile(r"Your score \(min 0\.0, max 1\.0\): ([0-9.]+)")
# The log cuts some long think[...] actions off before their closing bracket.
_ACTION = re.compile(r"^(\w+)\[(.*?)\]?$", re.DOTALL)
_STATS = re.compile(r"^\d+ [0-9.]+ [0-9.]+ [0-9.]+$")


def _output_text(path: Path) -> str:
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if "run_episodes(prompt1" in "".join(cell.get("source", [])):
            return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
    raise ValueError(f"{path}: no run_episodes(prompt1, ...) cell")


def _pairs(block: str) -> list[tuple[str, str]]:
    """(action, observation) pairs of one episode's text, in order."""
    pairs: list[tuple[str, str]] = []
    for chunk in re.split(r"\n(?=Action: )", "\n" + block):
        chunk = chunk.strip("\n")
        if not chunk.startswith("Action: "):
            continue
        action, _, observation = chunk.removeprefix("Action: ").partition("\nObservation:")
        lines = [line for line in observation.strip().splitlines() if not _STATS.match(line)]
        pairs.append((action.strip(), "\n".join(lines).strip()))
    return pairs


def instruction_of(observation: str) -> str:
    text = observation.split("Instruction:", 1)[-1]
    return " ".join(text.replace("[Search]", " ").split())


def kind_of(instruction: str, kinds: dict[str, list[str]]) -> str:
    """The product kind: the first kind (in the file's order) one of whose words the
    instruction contains as a whole word; "" when none does."""
    words = set(re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", instruction.lower()))
    text = " ".join(re.findall(r"[a-z0-9-]+", instruction.lower()))
    for kind, triggers in kinds.items():
        for trigger in triggers:
            if (" " in trigger and f" {trigger} " in f" {text} ") or trigger in words:
                return kind
    return ""


def _episode(number: int, pairs: list[tuple[str, str]], kinds: dict[str, list[str]]) -> Run:
    instruction = instruction_of(pairs[0][1])
    steps: list[dict] = [{"index": 0, "kind": "user_input", "content": instruction}]
    score: float | None = None
    for action, observation in pairs[1:]:
        if found := _SCORE.search(observation):
            score = float(found.group(1))
        call = _ACTION.match(action)
        name, argument = (call.group(1), call.group(2)) if call else ("", action)
        if name == "think":
            steps.append({"index": len(steps), "kind": "llm_reasoning", "content": argument})
            continue
        key = {"search": "query", "click": "target"}.get(name, "input")
        steps.append({
            "index": len(steps), "kind": "tool_call", "tool": name or "unparsed",
            "arguments": {key: argument}, "observation": observation,
            "is_error": observation.startswith("Invalid action"),
        })  # fmt: skip
    if score is None:
        outcome = "failure"
    else:
        outcome = "success" if score >= 1.0 else "failure" if score <= 0.0 else "partial"
    body = {
        "external_id": f"webshop-{number:03d}",
        "agent": AGENT,
        "task": instruction,
        "task_type": "operation",
        "environment": ["webshop"],
        "outcome": outcome,
        "steps": steps,
        "metadata": {"dataset": "react-webshop", "episode": number, "score": score},
    }
    return Run(body=body, dataset="webshop", group=kind_of(instruction, kinds),
               split_key=number, meta={"score": score})  # fmt: skip


def load(path: Path = PATH) -> list[Run]:
    kinds = json.loads(KINDS.read_text())["kinds"]
    runs = []
    for block in re.split(r"(?m)^-{10,}$", _output_text(path)):
        lines = block.strip().splitlines()
        if not lines or not lines[0].strip().isdigit():
            continue
        pairs = _pairs("\n".join(lines[1:]))
        if pairs and pairs[0][0] == "reset":
            runs.append(_episode(int(lines[0]), pairs, kinds))
    return runs
