"""A small agent wired to hindsight with the Python client. Runs against a local `make run`.

    .venv/bin/python examples/agent_example.py

Uses HINDSIGHT_URL (default http://localhost:8000) and HINDSIGHT_API_KEY (default: the demo
key that `make run` keeps in .hindsight/demo-api-key). The "agent" inspects this repository
with two real tools (list a directory, read a file); one call fails on purpose, so the
trajectory has an error for the review to label.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# hindsight_client is installed (clients/python/), vendored, or importable from a checkout
sys.path.insert(0, str(ROOT / "clients" / "python"))

from hindsight_client import HindsightClient  # noqa: E402

TASK = "Find which Python version this project needs and where that is checked"
TOOLS = ["list_dir", "read_file"]


def list_dir(path: str) -> list[str]:
    return sorted(entry.name for entry in (ROOT / path).iterdir())


def read_file(path: str, max_chars: int = 2000) -> str:
    return (ROOT / path).read_text()[:max_chars]


def main() -> None:
    key = os.environ.get("HINDSIGHT_API_KEY") or (ROOT / ".hindsight" / "demo-api-key").read_text()
    client = HindsightClient(os.environ.get("HINDSIGHT_URL", "http://localhost:8000"), key.strip())

    # 1. Before the task: recall. The prompt block goes after the tool descriptions and
    #    before the user's input in the agent's prompt. A fresh experience is a candidate
    #    until someone approves it in the dashboard, hence include_candidates here.
    recall = client.recall(
        TASK, tools=TOOLS, environment=["bare-metal"], agent="repo-agent", include_candidates=True
    )
    print("recalled:\n" + (recall.prompt_block or "(nothing yet: run this again in a moment)"))

    # 2. During the task: record every event. record_event and step() never wait for the
    #    server; a background thread streams the trajectory (and retries if the server is down).
    with client.recorder(agent="repo-agent", task=TASK, environment=["bare-metal"]) as rec:
        rec.user_input(TASK)
        rec.reasoning("The Python requirement is in the packaging metadata; list the root.")
        with rec.step("list_dir", {"path": "."}) as call:
            call.observation = list_dir(".")
        for legacy in ("setup.cfg", "setup.py"):  # two failed calls in a row: an anomaly
            # Warnings before a risky call: frequent failure patterns of similar calls.
            for warning in client.check_tool_call("read_file", {"path": legacy}, task=TASK):
                print("warning:", warning.text)
            try:
                with rec.step("read_file", {"path": legacy}) as call:
                    call.observation = read_file(legacy)
            except FileNotFoundError:
                rec.reasoning(f"No {legacy}.")
        with rec.step("read_file", {"path": "pyproject.toml"}) as call:
            call.observation = read_file("pyproject.toml")
        requirement = next(
            line.strip() for line in call.observation.splitlines() if "requires-python" in line
        )
        rec.reasoning("Where is the version enforced at setup? Look at the scripts.")
        with rec.step("list_dir", {"path": "scripts"}) as call:
            call.observation = list_dir("scripts")
        with rec.step("read_file", {"path": "scripts/find_python.sh"}) as call:
            call.observation = read_file("scripts/find_python.sh")
        rec.set_outcome(
            "success",
            final_answer=f"{requirement} (pyproject.toml), checked by scripts/find_python.sh",
        )
    # Leaving the block finishes the trace (failure if it raised). Wait for the upload here;
    # at interpreter exit the client also flushes, with a bounded wait.
    rec.flush(timeout=10)
    print(f"trace {rec.trace_id} stored ({rec.external_id}); review follows in the background")

    # 3. After the task: say which recalled items helped.
    if recall.items:
        client.recall_feedback(recall.id, helpful=[recall.items[0].experience_id])


if __name__ == "__main__":
    main()
