"""τ-bench historical trajectories (sierra-research/tau-bench, `historical_trajectories/*.json`)
as OpenAI transcript imports: a third domain, customer service, that the benchmark does not
ship (the file is not in ../shared/datasets; pass its path, e.g. from a clone of the repository).

Each episode (`task_id`, `trial`, `reward`, `info`, `traj`) is an OpenAI Chat Completions
transcript: the policy as the system message, the simulated user's turns, the agent's tool calls
and the tools' JSON results. It becomes a `POST /api/v1/traces/import` body as it is (format
`openai`, no converter beyond naming the run): reward 1 -> success, else failure. Runs of the
same task are relevant to each other; the trial is the split key (trials 0-2 history, trial 3
probes). The recall query is what the agent has before its first action: every user turn before
it.

The agent's tool schemas go with the transcript, as an agent sends them with every completion
request (`tools`), when the file sits in a checkout of the repository: each tool's `get_info()`
in `tau_bench/envs/<domain>/tools/*.py`, read as data (`ast.literal_eval`, nothing imported).
The gold is τ-bench's own: each task's expected actions (`info.task.actions`, the writes the
checker compares), kept in `Run.meta["gold_actions"]` for the benchmark, never sent.
"""

import ast
import json
from pathlib import Path

from bench.datasets import Run

AGENT = "tau-bench"


def _user_turns_before(messages: list[dict], tools: set[str] | None = None) -> str:
    """The user's turns before the agent's first call of one of `tools` (None: of any tool)."""
    turns: list[str] = []
    for message in messages:
        calls = message.get("tool_calls") or [] if message.get("role") == "assistant" else []
        if any(tools is None or c["function"]["name"] in tools for c in calls):
            break
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            turns.append(message["content"])
    return "\n".join(turns)


def _request(messages: list[dict]) -> str:
    """The user's turns before the agent's first tool call (what it knows when it recalls)."""
    return _user_turns_before(messages)


def _request_before_write(messages: list[dict], writes: set[str]) -> str:
    """The user's turns before the agent's first state-changing call (what it knows when it
    recalls again just before it changes anything; every turn when it changes nothing)."""
    return _user_turns_before(messages, writes)


def tool_schemas(path: Path, domain: str) -> list[dict]:
    """The OpenAI tool schemas of the domain's tools, from the repository checkout the file
    sits in (its `get_info()` return value, a literal dict); [] when they are not there."""
    folder = Path(path).resolve().parent.parent / "tau_bench" / "envs" / domain / "tools"
    schemas = []
    for source in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == "get_info":
                returned = next(n for n in ast.walk(node) if isinstance(n, ast.Return))
                schemas.append(ast.literal_eval(returned.value))
    return schemas


def _root(node: ast.expr) -> str:
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _mutates(function: ast.FunctionDef) -> bool:
    """`invoke` writes into the database it is given: an assignment to an item or attribute, or
    an in-place list / dict method, on something that is not a list or dict it made itself."""
    fresh = ast.List | ast.Dict | ast.ListComp | ast.DictComp
    local = {
        t.id
        for n in ast.walk(function)
        if isinstance(n, ast.Assign) and isinstance(n.value, fresh)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    for node in ast.walk(function):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            if any(
                isinstance(t, ast.Subscript | ast.Attribute) and _root(t) not in local
                for t in targets
            ):
                return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in ("append", "extend", "pop", "update", "remove", "insert"):
                if _root(node.func.value) not in local:
                    return True
    return False


HAND_OFF = "transfer_to_human_agents"  # passes the case to a person; changes no data


def write_tools(path: Path, domain: str) -> set[str]:
    """The gold's state-changing tools: those whose implementation changes the database, and
    the hand-off to a human agent (it ends the case; τ-bench's checker expects it as an action)."""
    folder = Path(path).resolve().parent.parent / "tau_bench" / "envs" / domain / "tools"
    writes = {HAND_OFF}
    for source in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        tree = ast.parse(source.read_text())
        invoke = next(
            (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "invoke"),
            None,
        )
        if invoke is not None and _mutates(invoke):
            writes.add(source.stem)
    return writes


def load(path: Path, *, declared_tools: bool = True) -> list[Run]:
    episodes = json.loads(Path(path).read_text())
    domain = Path(path).stem
    schemas = tool_schemas(path, domain.rsplit("-", 1)[-1]) if declared_tools else []
    writes = sorted(write_tools(path, domain.rsplit("-", 1)[-1]))
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
        if schemas:
            body["tools"] = schemas
        gold = (episode.get("info") or {}).get("task", {}).get("actions", [])
        run = Run(
            body=body,
            dataset="tau",
            group=str(episode["task_id"]),
            split_key=int(episode["trial"]),
            meta={
                "query": _request(messages) or first_user,
                "query_before_write": _request_before_write(messages, set(writes)) or first_user,
                "gold_actions": gold,
                "writes": writes,
            },  # fmt: skip
        )
        runs.append(run)
    return runs
