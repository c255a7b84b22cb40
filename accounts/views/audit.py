import json
from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.dashboard import project_page
from accounts.forms import AuditFilterForm
from accounts.models import AuditEvent
from accounts.selectors.access import ProjectAccess
from accounts.selectors.audit import audit_known_values, audit_list
from core.http import AuthedRequest
from core.pages import page_cursor, query_without_cursor, render_page_or_partial


@require_GET
@project_page(admin=True)
def audit(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    known = audit_known_values(project=access.project)
    form = AuditFilterForm(request.GET, actions=known.actions, object_types=known.object_types)
    page = audit_list(project=access.project, cursor=page_cursor(request), **form.values())
    context = {
        "form": form,
        "page": page,
        "rows": [_row(event) for event in page.items],
        "query": query_without_cursor(request),
    }
    return render_page_or_partial(request, "accounts/audit.html", "results", context)


@dataclass(frozen=True)
class AuditRow:
    event: AuditEvent
    before: str  # indented JSON, escaped by the template like any text
    after: str
    own_link: str  # the object's own page, or ""
    links: list[tuple[str, str]]  # (text, url) of other objects the event names


def _row(event: AuditEvent) -> AuditRow:
    return AuditRow(
        event=event,
        before=_pretty(event.before),
        after=_pretty(event.after),
        own_link=_own_link(event),
        links=_links(event),
    )


def _pretty(value: Any) -> str:
    if value is None:
        return ""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _id(value: Any) -> int | None:
    """An object id from the log (a string column, or a value in before/after), if it is one."""
    text = str(value) if isinstance(value, int | str) else ""
    return int(text) if text.isdigit() else None


def _own_link(event: AuditEvent) -> str:
    """The page of the object itself, when there is one for its kind."""
    kind, own = event.object_type, _id(event.object_id)
    if own is not None and kind == "trace":
        return reverse("traces:detail", args=[own])
    if own is not None and kind == "experience":
        return reverse("experiences:detail", args=[own])
    if own is not None and kind == "kb_article":
        return reverse("experiences:kb") + f"#article-{own}"
    if kind == "api_key":
        return reverse("accounts:settings") + "#keys"
    if kind == "membership":
        return reverse("accounts:settings") + "#members"
    if event.action == "kb.rebuild":
        return reverse("experiences:kb")
    return ""


def _links(event: AuditEvent) -> list[tuple[str, str]]:
    """Links to the other objects an event names in its before/after (a step's trace, the
    experiences of a merge or a proposal)."""
    data = {**(event.before or {}), **(event.after or {})} if _both_dicts(event) else {}
    links: list[tuple[str, str]] = []
    trace_id = _id(data.get("trace_id"))
    if event.object_type == "step" and trace_id is not None:
        index = _id(data.get("index"))
        url = reverse("traces:detail", args=[trace_id])
        if index is None:
            links.append((f"trace {trace_id}", url))
        else:
            links.append((f"trace {trace_id}, step {index}", f"{url}#step-{index}"))
    if event.object_type in ("experience", "merge_proposal"):
        for key in ("absorbed_id", "restored", "first", "second"):
            other = _id(data.get(key))
            if other is not None:
                url = reverse("experiences:detail", args=[other])
                links.append((f"experience {other}", url))
    return list(dict.fromkeys(links))


def _both_dicts(event: AuditEvent) -> bool:
    return isinstance(event.before or {}, dict) and isinstance(event.after or {}, dict)
