"""Pure helpers describing a failed call: the shape of its arguments and its error signature."""

import re
from typing import Any

from traces.observations import signal_lines
from traces.review.types import StepView

_NUMBER = re.compile(r"\b\d+(\.\d+)?\b")
_HEX = re.compile(r"\b[0-9a-f]{8,}\b")
_PATH = re.compile(r"(/[\w.-]+){2,}")
_QUOTED = re.compile(r"(['\"]).*?\1")


def error_signature(step: StepView) -> str:
    """The error, with the run-specific parts (numbers, ids, paths, quoted values) blanked."""
    observation = step.observation_raw or step.observation
    lines = (
        signal_lines(observation) or [line for line in observation.splitlines() if line.strip()][:1]
    )
    line = lines[0] if lines else ""
    prefix = step.error_type
    if prefix and line.lower().lstrip().startswith(prefix.lower()):
        prefix = ""  # "FileNotFoundError: ..." already names the type
    text = (prefix + ": " if prefix else "") + line
    text = _QUOTED.sub("<s>", text.lower())
    text = _PATH.sub("<path>", text)
    text = _HEX.sub("<id>", text)
    text = _NUMBER.sub("<n>", text)
    return " ".join(text.split())[:300] or "error"


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    text = str(value)
    if text.startswith(("http://", "https://")):
        return "url"
    if text.startswith(("/", "./", "~")):
        return "path"
    return "string"


def argument_shape(arguments: Any) -> dict[str, str]:
    if isinstance(arguments, dict):
        return {str(k): _kind_of(v) for k, v in sorted(arguments.items())}
    return {"_": _kind_of(arguments)} if arguments not in (None, "") else {}


def shape_similarity(a: dict[str, str], b: dict[str, str]) -> float:
    """Jaccard similarity of two argument shapes (key and value kind pairs)."""
    if not a and not b:
        return 1.0
    pairs_a, pairs_b = set(a.items()), set(b.items())
    return len(pairs_a & pairs_b) / len(pairs_a | pairs_b)
