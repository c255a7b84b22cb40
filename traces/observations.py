"""Raw tool output into what people and reviewers read: a short summary that keeps errors."""

import json
import re
from typing import Any

# Lines worth keeping even past the cut: errors, exceptions, HTTP/exit status codes. Matched on
# lower-cased text (IGNORECASE makes Python's re ~3x slower on long logs). Every alternative
# starts with a plain character, so re skips ahead to the next possible first character instead
# of trying all of them at each position (2.5x faster: summaries were ~15 % of ingest's CPU).
# A 4xx / 5xx standing alone, `\b[45]\d\d\b`, is written so: its first digit, then the
# look-behind for "no word character before that digit".
_SIGNAL = re.compile(
    r"error|exception|traceback|fail|fatal|denied|refused|timed? ?out|not found|invalid|"
    r"status[ :=]+\d{3}|http/\d(\.\d)? [45]\d\d|exit (code|status)[ :=]*\d+|"
    r"4(?<!\w4)\d\d\b|5(?<!\w5)\d\d\b"
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
    lowered = text.lower()
    if len(lowered) != len(text):  # a few non-ASCII letters lengthen when lower-cased
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    lines: list[str] = []
    position = 0
    while len(lines) < MAX_SIGNAL_LINES:
        match = _SIGNAL.search(lowered, position)
        if match is None:
            break
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        end = len(text) if end < 0 else end
        lines.append(text[start:end].strip()[:MAX_SIGNAL_LINE_CHARS])
        position = end + 1
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
