"""The inspector's step item in HTML: one `<li>` of the timeline, its label chip, its folded
parts, the machine's opinion and the relabel form, and a stored raw observation.

A trajectory can have 2,000 steps; the template engine costs ~2 ms per step item, so the item
is built here (~0.1 ms): every value goes through `_e` (reveal + escape), nothing else is
interpolated. The page and the htmx partial both use `step_item_html` (through the `step_item`
tag of traces/templatetags/hindsight.py), so markup cannot drift.
"""

import html
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.urls import reverse

from traces.display.markdown import markdown_gist, markdown_html
from traces.display.text import PREVIEW_CHARS, is_long, json_pretty, preview, reveal, text_size
from traces.models import Step

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

KIND_NAMES = {
    "user_input": "User input",
    "llm_reasoning": "LLM",
    "tool_call": "Tool call",
    "system": "System",
    "state_change": "State change",
}  # the choices' automatic labels would say "Llm Reasoning"


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


def _fold(
    name: str, text: str, inner: str, *, key: str, is_open: bool, note: str = "",
    gist: str | None = None,
) -> str:  # fmt: skip
    """A labelled part that folds: the summary names it, gives its size and previews `gist`
    (default: the text itself) on one line; CSS hides the preview while the part is open."""
    return (
        f'<details class="fold fold-{key}" data-fold="{key}"{" open" if is_open else ""}>'
        f'<summary><span class="part">{name}</span>{note}'
        f' <small class="size">{_e(text_size(text))}</small>'
        f' <span class="preview"><bdi>{_e(preview(text if gist is None else gist))}</bdi></span>'
        f"</summary>{inner}</details>"
    )


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
    gist = markdown_gist(text) if step.kind == Step.Kind.LLM_REASONING else text
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
    # data-kind / is-error / data-mine / data-low / data-blamed: what the step filters (tool
    # calls, errors, my changes, low confidence, blamed) match (traces.selectors.inspector)
    marks = " data-mine" if getattr(step, "is_own_change", False) else ""
    if step.label and step.label_source in Step.MACHINE_LABEL_SOURCES:
        confidence = step.label_confidence
        if confidence is not None and confidence < settings.HINDSIGHT_LOW_CONFIDENCE:
            marks += " data-low"
        if step.label in (Step.Label.FAILED, Step.Label.MISLEADING):
            marks += " data-blamed"
    return (
        f'<li class="step{error}" id="step-{step.index}" data-index="{step.index}" '
        f'data-source="{_e(step.label_source if step.label else "")}" '
        f'data-version="{step.label_version}" data-kind="{_e(step.kind)}"{marks} tabindex="-1" '
        f'aria-label="Step {step.index}">' + "\n".join(parts) + "</li>"
    )
