"""Template filters for untrusted trace text."""

import html
import re
from typing import Any

from django import template
from django.template import Context
from django.utils.safestring import SafeString, mark_safe

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


def _head(step: Any, trace_agent: str) -> str:
    parts = [
        f'<span class="step-no">{step.index}</span>',
        f'<span class="kind kind-{_e(step.kind)}">{_e(step.get_kind_display())}</span>',
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


def _body(step: Any, base: str) -> list[str]:
    parts = [was] if (was := _machine_was(step)) else []
    if step.label_reason:
        parts.append(f'<p class="label-reason"><bdi>{_e(step.label_reason)}</bdi></p>')
    if step.content:
        parts.append(f'<div class="content"><bdi>{_e(step.content)}</bdi></div>')
    if step.arguments_json:
        parts.append(
            '<details class="args"><summary>Arguments</summary>'
            f"<pre><code>{_e(step.arguments_json)}</code></pre></details>"
        )
    if step.observation:
        cut = " (cut at the storage limit)" if step.is_observation_truncated else ""
        raw = f"{base}{step.index}/raw/"
        parts.append(
            f'<div class="observation"><pre class="obs"><code>{_e(step.observation)}</code></pre>'
            f'<details class="raw" hx-get="{raw}" hx-trigger="toggle once" '
            f'hx-target="find .raw-body"><summary>Raw observation{cut}</summary>'
            f'<div class="raw-body"><a href="{raw}">Open as text</a></div></details></div>'
        )
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
            f'<details class="context"><summary>Context</summary><dl>{items}</dl>{extra}</details>'
        )
    return parts


def _form(step: Any, base: str, csrf: str) -> str:
    url = f"{base}{step.index}/label/"
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
    base = f"/traces/{int(trace.pk)}/steps/"
    parts = [_head(step, trace.agent)]
    if conflict:
        parts.append(
            f'<p class="conflict" role="alert"><strong>Not saved.</strong> {_e(conflict)}. '
            "The step below shows the current value; choose again to change it.</p>"
        )
    parts += _body(step, base)
    parts.append(_form(step, base, csrf))
    error = " is-error" if step.is_error else ""
    return (
        f'<li class="step{error}" id="step-{step.index}" data-index="{step.index}" '
        f'data-source="{_e(step.label_source if step.label else "")}" '
        f'data-version="{step.label_version}" tabindex="-1" '
        f'aria-label="Step {step.index}">' + "\n".join(parts) + "</li>"
    )


@register.simple_tag(takes_context=True)
def step_item(context: Context, step: Any, conflict: str = "") -> SafeString:
    """One step of the inspector's timeline (every value escaped in `step_item_html`)."""
    csrf = str(context.get("csrf_token", ""))
    return mark_safe(step_item_html(step, trace=context["trace"], csrf=csrf, conflict=conflict))  # noqa: S308
