"""Pure text helpers behind the trace pages: invisible characters made
visible, one-line previews and sizes of long parts, JSON indented for reading. Plain functions
on strings (no Django, no markup): `step_item` and the templates build the HTML.
"""

import json
import re

# Bidi overrides/isolates and invisible characters can make "gnp.exe" read as "exe.png" or hide
# text; agent-sent text shows them as visible code points instead (escaping happens after).
_INVISIBLE = [0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2060, 0x2061, 0x2062, 0x2063,
              0x2064, 0xFEFF, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]  # fmt: skip
_INVISIBLE_RE = re.compile("[" + "".join(chr(code) for code in _INVISIBLE) + "]")


def _code_point(match: re.Match[str]) -> str:
    return f"[U+{ord(match.group()):04X}]"


def reveal(text: str) -> str:
    # search first: almost no text has any, and a search is much cheaper than a substitution
    return _INVISIBLE_RE.sub(_code_point, text) if _INVISIBLE_RE.search(text) else text


# When a part of a step is long enough to start folded, and how much of it the fold previews.
PREVIEW_CHARS = 100  # fits one line of a step at 1024-1440 px; CSS cuts it if not
LONG_CHARS = 700  # past this many characters (or LONG_LINES lines) a part starts folded
LONG_LINES = 12


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """`text` on one line within `limit` characters, cut at a word boundary with an ellipsis."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[:limit]
    space = head.rfind(" ")
    if space > limit // 2:  # a word boundary not too far back; else one very long "word"
        head = head[:space]
    return head.rstrip(" ,;:.-") + "…"


def is_long(text: str) -> bool:
    return len(text) > LONG_CHARS or text.count("\n") >= LONG_LINES


def text_size(text: str) -> str:
    lines = text.count("\n") + 1
    chars = f"{len(text) / 1000:.1f} K chars" if len(text) >= 1000 else f"{len(text)} chars"
    return f"{chars} · {lines} lines" if lines > 1 else chars


def json_pretty(text: str) -> str | None:
    """`text` indented if it is a JSON object or array, else None."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
        if not isinstance(value, dict | list):
            return None
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return None
