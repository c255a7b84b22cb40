"""Template filters for untrusted trace text."""

import html
import json
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from django import template
from django.template import Context
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from traces.models import Step

register = template.Library()

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


@register.filter
def shown(value: object) -> str:
    """Untrusted text with invisible and direction-changing characters made visible.

    Not marked safe: autoescaping still applies to the result.
    """
    if value is None:
        return ""
    return reveal(str(value))


# ---------------------------------------------------------------------------- the inspector's step
# A trajectory can have 2,000 steps; the template engine costs ~2 ms per step item, so the item
# is built here (~0.1 ms): every value goes through `_e` (reveal + escape), nothing else is
# interpolated. The page and the htmx partial both use this one function, so markup cannot drift.

LABELS = tuple(Step.Label.values)  # in key order: 1 necessary … 4 failed


def _e(value: object) -> str:
    # html.escape == django's escape (& < > " '), without the lazy/SafeString wrapping per call
    return html.escape(reveal("" if value is None else str(value)))


def _label_state(step: Any) -> str:
    if not step.label:
        return '<span class="chip unlabelled" data-label="">unlabelled</span>'
    source = _e(step.label_source)
    if step.labelled_by_id and step.labelled_by is not None:
        source += " · " + _e(step.labelled_by.get_username())
    if step.is_accepted_as_is:
        source += " · accepted as is"
    elif step.label_confidence is not None:
        source += f" · {step.label_confidence:.2f}"
    label = _e(step.label)
    return (
        f'<span class="chip lbl-{label}" data-label="{label}">{label}</span> '
        f'<small class="src src-{_e(step.label_source)}">{source}</small>'
    )


def _opinion_of(step: Any) -> Any:
    """The machine's own label of a step a person labelled (None when there is nothing to show)."""
    if step.label_source != "human":
        return None
    return getattr(step, "machine_opinion", None)


def _machine_was(step: Any) -> str:
    opinion = _opinion_of(step)
    if opinion is None or step.is_accepted_as_is:
        return ""  # accepted as is: the label shown is the machine's own
    said = [_e(opinion.label), _e(opinion.reviewer)]
    if opinion.confidence is not None:
        said[-1] += f" {opinion.confidence:.2f}"
    if opinion.reason:
        said.append(f"<bdi>{_e(opinion.reason)}</bdi>")
    return f'<p class="machine-was"><small>was: {" · ".join(said)}</small></p>'


# ---------------------------------------------------------------------------- reading long steps
# A 5 KB system prompt or a 200-line observation at full height buries the steps around it: long
# parts start folded (<details>, so it works without JS) behind a one-line preview.

PREVIEW_CHARS = 100  # fits one line of a step at 1024-1440 px; CSS cuts it if not
LONG_CHARS = 700  # past this many characters (or LONG_LINES lines) a part starts folded
LONG_LINES = 12

KIND_NAMES = {
    "user_input": "User input",
    "llm_reasoning": "LLM",
    "tool_call": "Tool call",
    "system": "System",
    "state_change": "State change",
}  # the choices' automatic labels would say "Llm Reasoning"


@register.filter
def kind_name(step: Any) -> str:
    """A step's kind as people read it ("LLM", not "Llm Reasoning")."""
    return KIND_NAMES.get(step.kind, step.get_kind_display())


CONTENT_NAMES = {
    "user_input": "Prompt",
    "llm_reasoning": "LLM message",
    "tool_call": "Note",
    "system": "System prompt",
    "state_change": "State change",
}


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


def _size(text: str) -> str:
    lines = text.count("\n") + 1
    chars = f"{len(text) / 1000:.1f} K chars" if len(text) >= 1000 else f"{len(text)} chars"
    return f"{chars} · {lines} lines" if lines > 1 else chars


def _fold(
    name: str, text: str, inner: str, *, key: str, is_open: bool, note: str = "",
    gist: str | None = None,
) -> str:  # fmt: skip
    """A labelled part that folds: the summary names it, gives its size and previews `gist`
    (default: the text itself) on one line; CSS hides the preview while the part is open."""
    return (
        f'<details class="fold fold-{key}" data-fold="{key}"{" open" if is_open else ""}>'
        f'<summary><span class="part">{name}</span>{note}'
        f' <small class="size">{_e(_size(text))}</small>'
        f' <span class="preview"><bdi>{_e(preview(text if gist is None else gist))}</bdi></span>'
        f"</summary>{inner}</details>"
    )


# Markdown in LLM messages: no raw HTML (any tag shows as text), links only to http(s), no
# images (no request leaves the page for agent-chosen addresses), headings kept below the page's.
class _Markdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:  # noqa: N802 - markdown-it's name
        return url.strip().lower().startswith(("http://", "https://"))


def _link_open(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
    return renderer.renderToken(tokens, idx, options, env)


def _heading(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].tag = f"h{min(6, int(tokens[idx].tag[1]) + 3)}"  # "# x" in a step is an h4
    return renderer.renderToken(tokens, idx, options, env)


_MD = _Markdown("commonmark", {"html": False, "breaks": True})
_MD.enable(["table", "strikethrough"]).disable("image")
_MD.add_render_rule("link_open", _link_open)
_MD.add_render_rule("heading_open", _heading)
_MD.add_render_rule("heading_close", _heading)
# Text with none of Markdown's syntax renders as it is: skips the parser (~0.4 ms a message).
_MD_SYNTAX = re.compile(
    r"[*_`#\[\]<>|~\\&]|\n[ \t]*\n|^[ \t]*(?:[-+]|\d{1,9}[.)])(?:[ \t]|$)|^[ \t]*(?:=+|-+)[ \t]*$"
    r"|^(?: {4}|\t)",
    re.MULTILINE,
)
_MD_MARKS = re.compile(r"[*`]+|^[ \t]{0,3}(?:#{1,6}|>|[-+*]|\d{1,9}[.)])[ \t]+", re.MULTILINE)


MD_CACHED_CHARS = 20_000  # the cache: 512 messages of at most this size, ~20 MB at worst


def markdown_html(text: str) -> str:
    """Safe HTML for an LLM message written in Markdown (invisible characters revealed first)."""
    return _markdown_cached(text) if len(text) <= MD_CACHED_CHARS else _markdown(text)


def _markdown(text: str) -> str:
    text = reveal(text)
    if not _MD_SYNTAX.search(text):
        return "<p>" + html.escape(text).replace("\n", "<br>\n") + "</p>"
    return _MD.render(text)


_markdown_cached = lru_cache(maxsize=512)(_markdown)  # repeated prompts, htmx re-renders


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


def _head(step: Any, trace_agent: str) -> str:
    parts = [
        f'<span class="step-no">{step.index}</span>',
        f'<span class="kind kind-{_e(step.kind)}">{_e(kind_name(step))}</span>',
    ]
    if step.tool:
        parts.append(f'<code class="tool"><bdi>{_e(step.tool)}</bdi></code>')
    if step.agent != trace_agent:
        parts.append(f'<small class="agent">by <bdi>{_e(step.agent)}</bdi></small>')
    if step.is_error:
        kind = f": <bdi>{_e(step.error_type)}</bdi>" if step.error_type else ""
        parts.append(f'<span class="badge error">error{kind}</span>')
    if step.duration_text:
        parts.append(f'<small class="duration">{_e(step.duration_text)}</small>')
    parts.append(f'<span class="label-state">{_label_state(step)}</span>')
    return '<div class="step-head">' + "\n".join(parts) + "</div>"


def _content(step: Any) -> str:
    text = step.content
    if step.kind == Step.Kind.LLM_REASONING:
        inner = f'<div class="content markdown" dir="auto">{markdown_html(text)}</div>'
    else:
        inner = f'<div class="content"><bdi>{_e(text)}</bdi></div>'
    repeats = getattr(step, "repeats_index", None)
    is_system = step.kind == Step.Kind.SYSTEM and len(" ".join(text.split())) > PREVIEW_CHARS
    if repeats is None and not is_system and not is_long(text):
        return inner
    note = ""
    if repeats is not None:
        note = f' <span class="badge repeat">repeats step {int(repeats)}</span>'
        inner = (
            f'<p class="repeat-note"><small>Same text as <a href="#step-{int(repeats)}">'
            f"step {int(repeats)}</a>.</small></p>{inner}"
        )
    gist = _MD_MARKS.sub("", text) if step.kind == Step.Kind.LLM_REASONING else text
    name = CONTENT_NAMES.get(step.kind, "Content")
    return _fold(name, text, inner, key="content", is_open=False, note=note, gist=gist)


# A step index no trajectory has: reverse() runs once per trace and URL name, and the step's own
# index takes its place (the inspector draws up to thousands of steps).
_ANY_INDEX = 2_147_483_647


@lru_cache(maxsize=4096)
def step_url(name: str, trace_id: int) -> str:
    """The URL of a per-step view (traces:step_raw, traces:step_label) with `{}` for the index."""
    return reverse(name, args=[trace_id, _ANY_INDEX]).replace(str(_ANY_INDEX), "{}")


def _observation(step: Any, trace_id: int) -> str:
    text = step.observation
    pretty = json_pretty(text)
    shown = text if pretty is None else pretty
    fmt = "" if pretty is None else ' <span class="badge fmt">JSON</span>'
    body = f'<pre class="obs{"" if pretty is None else " json"}"><code>{_e(shown)}</code></pre>'
    # An error's observation is what the reader came for: never folded.
    summary = _fold(
        "Observation", shown, body, key="obs", is_open=step.is_error or not is_long(shown),
        note=fmt,
    )  # fmt: skip
    cut = " (cut at the storage limit)" if step.is_observation_truncated else ""
    looks_json = text.lstrip().startswith(("{", "["))
    what = "Full observation: formatted / raw" if looks_json else "Raw observation"
    raw = step_url("traces:step_raw", trace_id).format(step.index)
    return (
        f'<div class="observation">{summary}'
        f'<details class="raw" data-fold="raw" hx-get="{raw}" hx-trigger="toggle once" '
        f'hx-target="find .raw-body"><summary>{what}{cut}</summary>'
        f'<div class="raw-body"><a href="{raw}">Open as text</a></div></details></div>'
    )


def raw_observation_html(raw: str) -> str:
    """The stored raw observation; JSON both indented (open) and exactly as sent."""
    as_sent = f'<pre class="raw-text"><code>{_e(raw)}</code></pre>'
    pretty = json_pretty(raw)
    if pretty is None:
        return as_sent
    return (
        '<div class="json-views"><details class="json-formatted" data-fold="raw-formatted" open>'
        f'<summary>Formatted</summary><pre class="raw-json"><code>{_e(pretty)}</code></pre>'
        '</details><details class="json-raw" data-fold="raw-as-sent"><summary>Raw (as sent)'
        f"</summary>{as_sent}</details></div>"
    )


@register.simple_tag
def raw_observation(raw: str) -> SafeString:
    return mark_safe(raw_observation_html(raw))  # noqa: S308 - every value escaped there


def _body(step: Any, trace_id: int) -> list[str]:
    parts = [was] if (was := _machine_was(step)) else []
    if step.label_reason:
        parts.append(f'<p class="label-reason"><bdi>{_e(step.label_reason)}</bdi></p>')
    if step.content:
        parts.append(_content(step))
    if step.arguments_json:
        parts.append(
            '<details class="args" data-fold="args"><summary><span class="part">Arguments</span>'
            f' <span class="preview"><bdi>{_e(preview(step.arguments_json))}</bdi></span>'
            f"</summary><pre><code>{_e(step.arguments_json)}</code></pre></details>"
        )
    if step.observation:
        parts.append(_observation(step, trace_id))
    if step.context_items or step.context_extra_json:
        items = "".join(
            f"<dt>{_e(k)}</dt><dd><bdi>{_e(v)}</bdi></dd>" for k, v in step.context_items
        )
        extra = (
            f"<pre><code>{_e(step.context_extra_json)}</code></pre>"
            if step.context_extra_json
            else ""
        )
        parts.append(
            '<details class="context" data-fold="context"><summary>Context</summary>'
            f"<dl>{items}</dl>{extra}</details>"
        )
    return parts


def _form(step: Any, trace_id: int, csrf: str) -> str:
    url = step_url("traces:step_label", trace_id).format(step.index)
    buttons = "".join(
        f'<button type="submit" name="label" value="{label}" data-key="{n}" '
        f'class="lbl lbl-{label}" aria-pressed="{"true" if step.label == label else "false"}">'
        f"<kbd>{n}</kbd> {label}</button>"
        for n, label in enumerate(LABELS, start=1)
    )
    reason = _e(step.label_reason) if step.label_source == "human" else ""
    undo = ""
    if (opinion := _opinion_of(step)) is not None:
        undo = (
            '<button type="submit" name="to_machine" value="1" class="to-machine" '
            f'title="Set the step back to {_e(opinion.reviewer)}\'s label: {_e(opinion.label)}">'
            "<kbd>u</kbd> back to the machine label</button>"
        )
    return (
        f'<form class="relabel" method="post" action="{url}" hx-post="{url}" '
        'hx-target="closest li.step" hx-swap="outerHTML">'
        f'<input type="hidden" name="csrfmiddlewaretoken" value="{_e(csrf)}">'
        f'<input type="hidden" name="version" value="{step.label_version}">'
        f'<div class="label-buttons" role="group" aria-label="Label step {step.index}">{buttons}'
        '<button type="button" class="reason-toggle" data-reason-toggle aria-expanded="false">'
        f"<kbd>r</kbd> reason</button>{undo}</div>"
        f'<div class="reason" hidden><label>Reason for step {step.index} '
        f'<input type="text" name="reason" maxlength="2000" autocomplete="off" value="{reason}">'
        "</label><small>Enter saves with the chosen label · 1–4 buttons save with another · "
        "Esc leaves</small></div></form>"
    )


def step_item_html(step: Any, *, trace: Any, csrf: str, conflict: str = "") -> str:
    trace_id = int(trace.pk)
    parts = [_head(step, trace.agent)]
    if conflict:
        parts.append(
            f'<p class="conflict" role="alert"><strong>Not saved.</strong> {_e(conflict)}. '
            "The step below shows the current value; choose again to change it.</p>"
        )
    parts += _body(step, trace_id)
    parts.append(_form(step, trace_id, csrf))
    error = " is-error" if step.is_error else ""
    # data-kind / is-error / data-mine: what the step filters (tool calls, errors, my changes) match
    mine = " data-mine" if getattr(step, "is_own_change", False) else ""
    return (
        f'<li class="step{error}" id="step-{step.index}" data-index="{step.index}" '
        f'data-source="{_e(step.label_source if step.label else "")}" '
        f'data-version="{step.label_version}" data-kind="{_e(step.kind)}"{mine} tabindex="-1" '
        f'aria-label="Step {step.index}">' + "\n".join(parts) + "</li>"
    )


@register.simple_tag(takes_context=True)
def step_item(context: Context, step: Any, conflict: str = "") -> SafeString:
    """One step of the inspector's timeline (every value escaped in `step_item_html`)."""
    csrf = str(context.get("csrf_token", ""))
    return mark_safe(step_item_html(step, trace=context["trace"], csrf=csrf, conflict=conflict))  # noqa: S308
