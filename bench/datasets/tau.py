"""τ-bench historical trajectories (sierra-research/tau-bench, `historical_trajectories/*.json`)
as OpenAI transcript imports: a third domain, customer service, that the benchmark does not
ship (the file is not in ../shared/datasets; pass its path, e.g. from a clone of the repository).

Each episode (`task_id`, `trial`, `reward`, `traj`) is an OpenAI Chat Completions transcript: the
policy as the system message, the simulated user's turns, the agent's tool calls and the tools'
JSON results. It becomes a `POST /api/v1/traces/import` body as it is (format `openai`, no
converter beyond naming the run): reward 1 -> success, else failure. Runs of the same task are
relevant to each other; the trial is the split key (trials 0-2 history, trial 3 probes).
The recall query is what the agent has before its first action: every user turn before it.
"""

import json
from pathlib import Path

from bench.datasets import Run

AGENT = "tau-bench"


def _request(messages: list[dict]) -> str:
    """The user's turns before the agent's first tool call (what it knows when it recalls)."""
    turns: list[str] = []
    for message in messages:
        if message.get("role") == "assistant" and message.get("tool_calls"):
            break
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            turns.append(message["content"])
    return "\n".join(turns)


def load(path: Path) -> list[Run]:
    episodes = json.loads(Path(path).read_text())
    domain = Path(path).stem
    runs = []
    for episode in episodes:
        messages = episode["traj"]
        first_user = next(
            (m["content"] for m in messages if m.get("role") == "user" and m.get("content")), ""
        )
        body = {
            "format": "openai",
            "external_id": f"{domain}-{episode['task_id']}-{episode['trial']}",
            "agent": AGENT,
            "outcome": "success" if float(episode["reward"]) >= 1.0 else "failure",
            "environment": [domain],
            "messages": messages,
        }
        run = Run(
            body=body,
            dataset="tau",
            group=str(episode["task_id"]),
            split_key=int(episode["trial"]),
            meta={"query": _request(messages) or first_user},
        )
        runs.append(run)
    return runs
