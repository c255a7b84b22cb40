"""Raw tool output into what people and reviewers read: a short summary that keeps errors."""

import json
import re
from typing import Any

# Lines worth keeping even past the cut: errors, exceptions, HTTP/exit status codes.
_SIGNAL_LINE = re.compile(
    r"(error|exception|traceback|fail|fatal|denied|refused|timed? ?out|not found|invalid|"
    r"status[ :=]+\d{3}|http/\d(\.\d)? [45]\d\d|\b[45]\d\d\b|exit (code|status)[ :=]*\d+)",
    re.IGNORECASE,
)
MAX_SIGNAL_LINES = 5
MAX_SIGNAL_LINE_CHARS = 200


def as_text(value: Any) -> str:
    """Observations and arguments may arrive as JSON; the text form is compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def signal_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if _SIGNAL_LINE.search(line):
            lines.append(line.strip()[:MAX_SIGNAL_LINE_CHARS])
            if len(lines) >= MAX_SIGNAL_LINES:
                break
    return lines


def summarize(text: str, *, chars: int) -> str:
    """The first `chars` characters, plus the error/status lines found after the cut."""
    if len(text) <= chars:
        return text
    head = text[:chars].rstrip()
    kept = [line for line in signal_lines(text[chars:]) if line and line not in head]
    summary = head + " …"
    if kept:
        summary += "\n" + "\n".join(kept)
    return summary


def cap(text: str, *, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return text[:limit], True
