"""What a task is matched on, in one place: the scene of a trajectory in words.

The scene is the informative request: all user turns before the first action (the task text,
then any `user_input` steps that came before the first tool call), with greetings, thanks and
small talk dropped, identifiers and entities kept, whole up to REQUEST_CHARS (`scene_request`).
An experience's vector is made of it and its intent (`scene_text`), and so is a recall query's;
its identifiers and names are its keywords (`keywords_of`, for the keyword search a sentence
embedding blurs); runs of the same task share a key (`task_key`). The summary
(`scene_summary`, 100-150 characters at a word boundary) is what lists and advice show, not
what is matched. Arguments are summarised by what matters: scalar values, never cut JSON.
"""

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from traces.review.types import StepView
from traces.review.values import key_values, names

SUMMARY_CHARS = 150
SUMMARY_MIN_CHARS = 100
# The whole informative request is what a scene's vector is made of (the summary is its short
# reading): the local model reads its first 256 word pieces (~1,000 characters), and an
# embedding endpoint's cost stays bounded.
REQUEST_CHARS = 2000
ARGUMENT_CHARS = 60

# A sentence that is only a greeting, thanks or small talk carries nothing to match on.
_PLEASANTRY = re.compile(
    r"^\W*(hi|hey|hello|hiya|howdy|greetings|good (morning|afternoon|evening|day)|"
    r"dear \w+|thanks?( you)?( so much| a lot| in advance)?|thank you|cheers|please|"
    r"hope (you are|you're|all is) (well|doing well|good)|how are you( doing)?( today)?|"
    r"i hope this (message|email) finds you well|sorry to bother you|excuse me|ok(ay)?|"
    r"sure|great|perfect|awesome|you there)\b[\s\w']{0,12}\W*$",
    re.IGNORECASE,
)
# A greeting in front of the request in the same sentence ("Hi, I need ...").
_LEADING_GREETING = re.compile(
    r"^\W*(hi|hey|hello|hiya|howdy|greetings|good (morning|afternoon|evening|day))"
    r"( there| team| all| everyone)?(\s*[,!.:;-]+\s*|\s+(?=(i|i'm|im|we|my|can|could|"
    r"please|need|want|looking|is|are|do)\b))",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def informative_text(parts: Iterable[str]) -> str:
    """The request's sentences, in order, without greetings and small talk (deduplicated)."""
    kept: list[str] = []
    for part in parts:
        for sentence in _sentences(part or ""):
            sentence = _LEADING_GREETING.sub("", sentence).strip()
            if not sentence or _PLEASANTRY.match(sentence):
                continue
            if sentence.lower() not in (k.lower() for k in kept):
                kept.append(sentence)
    # Turns that end without punctuation still read as separate sentences.
    return " ".join(
        k if i == len(kept) - 1 or k[-1] in ".!?;:。！？" else f"{k};" for i, k in enumerate(kept)
    )


def cut_at_word(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if " " in head[SUMMARY_MIN_CHARS // 2 :]:
        head = head[: head.rindex(" ")]
    return head.rstrip(" ,;:-") + "…"


def first_sentence(text: str, limit: int) -> str:
    """The first sentence of a line, within `limit`, never ending inside brackets or braces
    (a cut-off list or JSON reads as noise): "Could not find [SAS]. Similar: [...]" gives
    "Could not find [SAS]."."""
    line = " ".join(text.split())
    line = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
    line = cut_at_word(line, limit)
    depth, opened_at = 0, -1
    for position, char in enumerate(line):
        if char in "[{(":
            if depth == 0:
                opened_at = position
            depth += 1
        elif char in "]})" and depth:
            depth -= 1
    if depth:
        line = line[:opened_at].rstrip(" ,;:") + "…"
    return line


def request_turns(task: str, steps: Iterable[StepView]) -> list[str]:
    """The task, then every user turn before the first action."""
    turns = [task]
    for step in steps:
        if step.kind == "tool_call":
            break
        if step.kind == "user_input" and step.content:
            turns.append(step.content)
    return turns


def scene_summary(task: str, steps: Iterable[StepView] = ()) -> str:
    """A 100-150 character summary of the informative request (the whole request when
    everything in it was a pleasantry, so a scene is never empty)."""
    return cut_at_word(scene_request(task, steps), SUMMARY_CHARS)


def scene_request(task: str, steps: Iterable[StepView] = ()) -> str:
    """The informative request whole (within REQUEST_CHARS): what a scene's vector is made of.
    Measured on three domains of others' runs, embedding it rather than its 150-character
    summary found the same task again first more often (τ-bench hit@1 0.86 -> 0.90, WebShop
    0.739 -> 0.750): a cut summary loses the ids and details that come after the greeting.
    Never empty: when everything in it was a pleasantry, the request as it was."""
    turns = request_turns(task, steps)
    text = informative_text(turns) or " ".join(t for t in turns if t)
    return cut_at_word(text, REQUEST_CHARS)


def query_request(text: str) -> str:
    """The same treatment for a recall query, so a query and a scene are written alike."""
    return cut_at_word(informative_text([text]) or text, REQUEST_CHARS)


def scene_text(*, summary: str, intent: str = "", request: str = "") -> str:
    """What an experience's vector is made of, and what a recall query is compared with: the
    informative request whole (its summary for experiences stored before it was kept), and
    the intent."""
    text = request or summary
    return f"{text}\n{intent}" if intent else text


MAX_KEYWORDS = 40


def task_key(task: str) -> str:
    """Runs of the same task share a key: the task text, case and spacing aside."""
    return hashlib.sha1(" ".join(task.lower().split()).encode()).hexdigest()


def keywords_of(texts: Iterable[str]) -> str:
    """Identifiers (ids, numbers, paths, error codes) and names, whole, for keyword search:
    exactly what a sentence embedding blurs."""
    found: list[str] = []
    for text in texts:
        for value in sorted(key_values(text) | names(text)):
            # PostgreSQL's parser splits "mia_li_3668" but keeps "mia-li-3668" whole too.
            value = value.replace("_", "-")
            if value not in found:
                found.append(value)
    return " ".join(found[:MAX_KEYWORDS])


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None if value is None else str(value).lower()
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        text = " ".join(value.split())
        return text if text else None
    return None


def argument_summary(arguments: Any, *, limit: int = ARGUMENT_CHARS) -> str:
    """What matters in a call's arguments: the scalar values (quoted text, `key=value` when
    there are several), lists and objects by their size; never a cut-off JSON dump."""
    if arguments is None or arguments == {} or arguments == []:
        return ""
    if not isinstance(arguments, dict):
        value = _scalar(arguments)
        if value is not None:
            return f'"{cut_at_word(value, limit)}"'
        return f"{len(arguments)} items" if isinstance(arguments, list) else ""
    parts = []
    for key, value in arguments.items():
        scalar = _scalar(value)
        if scalar is not None:
            shown = cut_at_word(scalar, limit)
            # One text argument reads as itself ("web"); a flag or number needs its name.
            alone = len(arguments) == 1 and isinstance(value, str)
            parts.append(f'"{shown}"' if alone else f"{key}={shown}")
        elif isinstance(value, list):
            parts.append(f"{key}=[{len(value)} items]")
        elif isinstance(value, dict):
            parts.append(f"{key}={{{len(value)} fields}}")
    text = ", ".join(parts)
    return text if len(text) <= limit * 2 else cut_at_word(text, limit * 2)


def action_phrase(step: StepView) -> str:
    """A step as a short imperative: `Search "Bon Jovi"`, `click "Buy Now"`."""
    if not step.tool:
        return f"{step.kind.replace('_', ' ')}: {cut_at_word(step.content, ARGUMENT_CHARS)}"
    arguments = argument_summary(step.arguments)
    return f"{step.tool} {arguments}" if arguments else step.tool
