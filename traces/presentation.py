"""Display-ready fields for the trace pages, computed once in Python instead of per template tag:
the inspector's decorated steps and reviews, its reading aids (filters, repeats, my changes), and
the word-level comparison texts. The read layer (traces.selectors) returns plain rows."""

import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from traces.display.text import reveal
from traces.models import Review, Step, Trace


def _pretty_json(value: Any) -> str:
    if value in (None, "", {}, []):
        return ""
    return reveal(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str))


def duration_text(ms: int | None) -> str:
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    return f"{ms // 60_000} min {ms % 60_000 // 1000} s"


def step_decorate(step: Step) -> Step:
    """Display-ready fields, computed once here instead of per template tag."""
    step.arguments_json = _pretty_json(step.arguments)  # type: ignore[attr-defined]
    step.duration_text = duration_text(step.duration_ms)  # type: ignore[attr-defined]
    context = step.context or {}
    known = [(k, context.get(k)) for k in ("task_goal", "subtask", "latest_user_input")]
    extra = {k: v for k, v in context.items() if k not in dict(known)}
    step.context_items = [(k.replace("_", " "), v) for k, v in known if v]  # type: ignore[attr-defined]
    step.context_extra_json = _pretty_json(extra)  # type: ignore[attr-defined]
    return step


def _display_items(value: Any) -> list[str]:
    """Review lists may hold strings or small objects; people read them as lines."""
    if not value:
        return []
    if not isinstance(value, list):
        value = [value]
    lines = []
    for item in value:
        if isinstance(item, dict):
            lines.append(" · ".join(f"{k}: {v}" for k, v in item.items() if v not in (None, "")))
        else:
            lines.append(str(item))
    return lines


def review_decorate(review: Review) -> Review:
    review.path_lines = _display_items(review.execution_path)  # type: ignore[attr-defined]
    review.decision_lines = _display_items(review.key_decisions)  # type: ignore[attr-defined]
    review.improvement_lines = _display_items(review.improvements)  # type: ignore[attr-defined]
    return review


# ------------------------------------------------------------------------- inspector: reading aids


def step_is_own_change(step: Step, *, user: User) -> bool:
    """The step's current label is one `user` set by judging the step ("my changes").

    A label confirmed wholesale ("Accept all", "Finish & next") is the machine's, not a change.
    """
    return (
        bool(step.label)
        and step.label_source == Step.LabelSource.HUMAN
        and step.labelled_by_id == user.pk
        and not step.is_accepted_as_is
    )


def steps_mark_for_reading(
    steps: list[Step], *, user: User, first_index: dict[str, int]
) -> list[Step]:
    """Mark each step with `repeats_index` (the first earlier step with the same text: a repeated
    prompt; `first_index` from traces.selectors.inspector.first_index_of_contents) and
    `is_own_change`."""
    for step in steps:
        first = first_index.get(step.content) if step.content else None
        step.repeats_index = first if first is not None and first < step.index else None  # type: ignore[attr-defined]
        step.is_own_change = step_is_own_change(step, user=user)  # type: ignore[attr-defined]
    return steps


def reviews_drop_repeats(reviews: list[Review]) -> None:
    """Show each goal, key decision, improvement and experience once across a trace's reviews:
    local reviews repeat the full review's. `repeats_left_out` counts what a review lost."""
    seen: set[tuple[str, str]] = set()

    def first_time(part: str, text: str) -> bool:
        key = (part, " ".join(text.split()).casefold())
        if key in seen:
            return False
        seen.add(key)
        return True

    for review in reviews:
        lines = {
            "decision_lines": getattr(review, "decision_lines", []),
            "improvement_lines": getattr(review, "improvement_lines", []),
        }
        kept = {name: [x for x in found if first_time(name, x)] for name, found in lines.items()}
        left_out = sum(len(lines[name]) - len(kept[name]) for name in lines)
        for name, found in kept.items():
            setattr(review, name, found)
        review.is_goal_repeated = bool(review.goal) and not first_time("goal", review.goal)  # type: ignore[attr-defined]
        review.is_experience_repeated = bool(review.experience) and not first_time(  # type: ignore[attr-defined]
            "experience", review.experience
        )
        left_out += review.is_goal_repeated + review.is_experience_repeated  # type: ignore[attr-defined]
        review.repeats_left_out = left_out  # type: ignore[attr-defined]


# A text longer than this shows a preview, and the whole (with its diff) one click away.
COMPARE_PREVIEW_CHARS = 300
# Word diffs beyond this many tokens a side are skipped (difflib is quadratic at worst): the
# texts are then shown whole, the row still marked as differing.
WORD_DIFF_MAX_TOKENS = 4000
_TOKENS_RE = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass(frozen=True)
class CompareText:
    """One field of one step in the comparison: its parts (kind: same / del / ins), and a
    preview when it is long."""

    parts: list[tuple[str, str]]
    preview: str
    length: int

    @property
    def differs(self) -> bool:
        return any(kind != "same" for kind, _ in self.parts)


def word_diff(one: str, two: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Two texts as parts: what both share ("same"), what only the first has ("del"), what only
    the second has ("ins"). Tokens are words, runs of spaces and single punctuation marks."""
    left, right = _TOKENS_RE.findall(one), _TOKENS_RE.findall(two)
    if one == two or max(len(left), len(right)) > WORD_DIFF_MAX_TOKENS:
        return [("same", one)], [("same" if one == two else "ins", two)]
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    first: list[tuple[str, str]] = []
    second: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            first.append(("same", "".join(left[i1:i2])))
            second.append(("same", "".join(right[j1:j2])))
            continue
        if i2 > i1:
            first.append(("del", "".join(left[i1:i2])))
        if j2 > j1:
            second.append(("ins", "".join(right[j1:j2])))
    return _joined(first), _joined(second)


def _joined(parts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Neighbouring parts of one kind as one; a lone run of spaces between two changes joins
    them, so "a b c" replaced by "x y z" reads as one change, not three."""
    out: list[tuple[str, str]] = []
    for kind, text in parts:
        if out and (
            out[-1][0] == kind or (kind == "same" and not text.strip() and out[-1][0] != "same")
        ):
            out[-1] = (out[-1][0], out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def _preview(text: str, limit: int = COMPARE_PREVIEW_CHARS) -> str:
    if len(text) <= limit:
        return ""
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def _compare_texts(one: Step | None, two: Step | None) -> dict[str, dict[str, CompareText]]:
    """The arguments, content and observation of an aligned pair, word-diffed when both exist."""
    sides: dict[str, dict[str, CompareText]] = {"left": {}, "right": {}}
    for name in ("arguments_json", "content", "observation"):
        a = reveal(getattr(one, name, "") or "") if one is not None else ""
        b = reveal(getattr(two, name, "") or "") if two is not None else ""
        if one is not None and two is not None:
            left, right = word_diff(a, b) if a and b else ([("del", a)], [("ins", b)])
        else:
            left, right = [("same", a)], [("same", b)]
        for side, text, parts in (("left", a, left), ("right", b, right)):
            if text:
                sides[side][name] = CompareText(
                    parts=parts, preview=_preview(text), length=len(text)
                )
    return sides


def compare_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The aligned rows of traces.selectors.compare.steps_aligned with their texts word-diffed
    (`left_texts`, `right_texts`), and `differs` when the texts differ too."""
    for row in rows:
        for step in (row["left"], row["right"]):
            if step is not None:
                step_decorate(step)
        texts = _compare_texts(row["left"], row["right"])
        row["left_texts"], row["right_texts"] = texts["left"], texts["right"]
        row["differs"] = row["differs"] or any(
            t.differs for side in texts.values() for t in side.values()
        )
    return rows


def trace_decorate(trace: Trace) -> Trace:
    """The inspector's trace (traces.selectors.inspector.trace_for_inspector) ready to display."""
    for review in trace.reviews.all():
        review_decorate(review)
    return trace


# ------------------------------------------------------------------------- inspector: run details

# Keys agents and SDKs send their model and token usage under (in `metadata`, or its `usage`).
MODEL_KEYS = (
    "model",
    "model_name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "llm.model_name",
)
TOKEN_KEYS = (
    ("input", ("input_tokens", "prompt_tokens", "gen_ai.usage.input_tokens")),
    ("output", ("output_tokens", "completion_tokens", "gen_ai.usage.output_tokens")),
    ("total", ("total_tokens", "tokens", "llm.token_count.total")),
)
SHOWN_KEYS = ("system_prompt", "transcript_format", "usage", *MODEL_KEYS)


@dataclass(frozen=True)
class RunDetails:
    """What the inspector's "Run details" shows of a trace's metadata and steps."""

    models: list[str]
    tokens: list[tuple[str, int]]  # (input / output / total, count), where sent
    system_prompt: str
    transcript_format: str
    other_json: str  # the rest of the metadata, pretty JSON ("" when none)

    @property
    def gist(self) -> str:
        """The fold's one line: models, tokens, the system prompt's size."""
        parts = [", ".join(self.models)] if self.models else []
        parts += [f"{count:,} {name} tokens" for name, count in self.tokens]
        if self.system_prompt:
            parts.append(f"system prompt {len(self.system_prompt):,} chars")
        return " · ".join(parts)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value)


def run_details(trace: Trace, *, step_models: list[str]) -> RunDetails:
    metadata = trace.metadata if isinstance(trace.metadata, dict) else {}
    sent_usage = metadata.get("usage")
    usage = sent_usage if isinstance(sent_usage, dict) else {}
    models = [m for k in MODEL_KEYS if isinstance(m := metadata.get(k), str) and m]
    models += [m for m in step_models if m not in models]
    tokens = []
    for name, keys in TOKEN_KEYS:
        found = next(
            (
                n
                for k in keys
                for n in (_count(usage.get(k)), _count(metadata.get(k)))
                if n is not None
            ),
            None,
        )
        if found is not None:
            tokens.append((name, found))
    prompt = metadata.get("system_prompt")
    transcript = metadata.get("transcript_format")
    other = {k: v for k, v in metadata.items() if k not in SHOWN_KEYS}
    return RunDetails(
        models=list(dict.fromkeys(models)),
        tokens=tokens,
        system_prompt=prompt if isinstance(prompt, str) else "",
        transcript_format=transcript if isinstance(transcript, str) else "",
        other_json=_pretty_json(other),
    )
