"""What a step's text and arguments contain, as the rules compare them.

A step feeds a later one through *values*: distinctive tokens (identifiers, numbers, paths,
CamelCase words), capitalised names, and the plain content words that say what a request is
about. Scanning stops after the first few thousand characters of a text.
"""

import re
from functools import lru_cache

from traces.observations import as_text
from traces.review.types import StepView

_SCAN_CHARS = 8000
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@#=-]*[A-Za-z0-9]")
_PARTS = re.compile(r"[/:=@]")
_CAMEL = re.compile(r"^[A-Z][a-z]+[A-Z]|^[A-Z]{3,}[a-z]")
# A digit or punctuation inside a token (tokens are ASCII: `_TOKEN`).
_DISTINCT = re.compile(r"[0-9_.:/@#=-]")
# Capitalised names of one or more words ("Bon Jovi", "World War II", "Nick Park").
_NAME = re.compile(r"\b[A-Z][\w'&.-]*(?:\s+(?:of|the|and|de|la|von|van|&)?\s*[A-Z0-9][\w'&.-]*)*")
_GENERIC = {
    "true", "false", "null", "none", "error", "errors", "info", "debug", "warning", "http",
    "https", "localhost", "json", "utf-8", "ok", "status", "stdout", "stderr", "exit", "code",
}  # fmt: skip
_COMMON_CAPITALISED = {
    "i", "a", "an", "the", "this", "that", "it", "he", "she", "they", "we", "you", "my", "his",
    "her", "its", "our", "their", "in", "on", "at", "for", "to", "of", "and", "or", "but", "so",
    "if", "is", "was", "are", "be", "as", "by", "with", "from", "not", "no", "yes", "there",
    "what", "which", "who", "when", "where", "why", "how", "thought", "action", "observation",
    "page", "search", "results", "result", "total", "next", "prev", "back", "price", "rating",
}  # fmt: skip
_WORD = re.compile(r"[a-z0-9]+")
_STOP = _COMMON_CAPITALISED | {
    "me", "need", "want", "would", "like", "looking", "find", "get", "some", "one", "also",
    "can", "could", "should", "do", "does", "did", "have", "has", "had", "than", "then", "any",
    "all", "more", "less", "lower", "higher", "about", "into", "out", "up", "down", "over",
    "buy", "now", "click", "select", "choose", "make", "sure", "please", "am", "im", "were",
}  # fmt: skip


def key_values(text: str) -> set[str]:
    """Distinctive tokens: contain a digit or punctuation inside, or are CamelCase/ALLCAPS words."""
    return set(_key_values(text[:_SCAN_CHARS]))


def case_identifiers(text: str) -> set[str]:
    """Ids of one case: a token with two letters and two digits at least ("k1nw8n",
    "b08fsysm24") or an underscored name ("mia_li_3668"); never a bare number, price or date
    ("40.00" is in half of all shopping requests), nor a spec like "1080p" or "12v", nor a path
    or address whole ("/testbed/dir3/subdir1": a place many cases work in, its parts still
    count: "/users/mia_li_3668" names "mia_li_3668")."""
    return {
        v
        for v in key_values(text)
        if "/" not in v
        and ("_" in v or (sum(c.isdigit() for c in v) >= 2 and sum(c.isalpha() for c in v) >= 2))
    }


# A review reads the same step texts once per window (the full review and each local one) and
# the flow rules again: the scans are kept for the texts seen last.
@lru_cache(maxsize=1024)
def _key_values(text: str) -> frozenset[str]:
    values = set()
    # Each distinct token once, tested by one regex: a character loop per token was most of a
    # review's text scanning (tokens repeat across a log's lines).
    for whole in set(_TOKEN.findall(text)):
        # "host:8080/path" also yields "host", "8080" and "path": a later step may use any part.
        for token in {whole, *_PARTS.split(whole)}:
            if len(token) < 3:
                continue
            lower = token.lower()
            if lower not in _GENERIC and (_DISTINCT.search(token) or _CAMEL.match(token)):
                values.add(lower)
    return frozenset(values)


def names(text: str) -> set[str]:
    """Capitalised names, whole and word by word past the first ("World War II", "War II")."""
    return set(_names(text[:_SCAN_CHARS]))


@lru_cache(maxsize=1024)
def _names(text: str) -> frozenset[str]:
    found = set()
    for match in _NAME.finditer(text):
        words = [w for w in match.group(0).split() if w.lower() not in _COMMON_CAPITALISED]
        if not words:
            continue
        phrase = " ".join(words).lower()
        if len(phrase) >= 3:
            found.add(phrase)
        found.update(w.lower() for w in words if len(w) >= 4)
    return frozenset(found)


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in _STOP}


def argument_values(step: StepView) -> list[str]:
    values: list[str] = []

    def collect(value: object) -> None:
        if isinstance(value, str):
            text = " ".join(value.split()).strip("\"' ")
            if len(text) >= 2:
                values.append(text)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            values.append(str(value))

    collect(step.arguments)
    return values


def step_output(step: StepView) -> str:
    if step.kind == "tool_call":
        return (step.observation_raw or step.observation)[:_SCAN_CHARS]
    return f"{step.content}\n{step.observation_raw or step.observation}"[:_SCAN_CHARS]


def consumed_text(step: StepView) -> str:
    if step.kind == "tool_call":
        return as_text(step.arguments)
    return step.content
