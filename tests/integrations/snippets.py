"""The copy-paste examples of docs/integrations/: each page holds exactly one fenced code
block, which its framework's end-to-end test runs as written."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[2] / "docs" / "integrations"
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
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(exec, compile(code, str(DOCS / page), "exec"), namespace).result()
    return namespace
