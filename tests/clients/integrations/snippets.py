"""The copy-paste examples of docs/integrations/: each page holds exactly one fenced code
block, which its framework's end-to-end test runs as written."""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[3] / "docs" / "integrations"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def snippet(page: str) -> tuple[str, str]:
    """The page's only code block: (language, code)."""
    blocks = FENCE.findall((DOCS / page).read_text())
    assert len(blocks) == 1, f"{page} should hold exactly one code block, has {len(blocks)}"
    return blocks[0]


def run_python_snippet(page: str) -> dict[str, Any]:
    """Execute the page's Python block as a script (`__name__ == "__main__"`) in this
    process, in the current directory and environment; returns its globals. It runs in a
    thread of its own: Playwright's sync API (the browser tests, earlier in the same session)
    keeps an event loop in the main thread, where `asyncio.run` cannot start another."""
    language, code = snippet(page)
    assert language == "python", page
    namespace: dict[str, Any] = {"__name__": "__main__", "__file__": str(DOCS / page)}
    run_in_thread(lambda: exec(compile(code, str(DOCS / page), "exec"), namespace))
    return namespace


def run_in_thread(call: Callable[[], Any]) -> Any:
    """`call()` in a thread of its own (see `run_python_snippet`), its exception raised here."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()


def assert_first_run(
    trace: dict[str, Any], *, task: str, answer: str, calls: list[tuple[str, dict]], found: str
) -> None:
    """What every framework's first run of its example must have recorded: the task, the
    outcome and answer, a user input, five model turns (four asking for a tool, one answer),
    the tool calls in order with their arguments (the first failed with FileNotFoundError), and
    the content the last call found."""
    assert (trace["task"], trace["outcome"], trace["final_answer"]) == (task, "success", answer)
    tool_steps = [s for s in trace["steps"] if s["tool"]]
    assert [(s["tool"], s["arguments"], s["is_error"]) for s in tool_steps] == [
        (tool, arguments, n == 0) for n, (tool, arguments) in enumerate(calls)
    ]
    assert "FileNotFoundError" in tool_steps[0]["observation"]
    assert found in tool_steps[-1]["observation"]
    kinds = [s["kind"] for s in trace["steps"]]
    assert kinds[:2] == ["user_input", "llm_reasoning"] and kinds.count("llm_reasoning") == 5
    asked = [s["content"] for s in trace["steps"] if s["kind"] == "llm_reasoning"]
    assert [line.split(" ")[1] for line in asked[:4]] == ["hindsight_recall"] + [
        tool for tool, _ in calls
    ]
    assert asked[-1] == answer
