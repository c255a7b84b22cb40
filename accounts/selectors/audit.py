"""The audit log, filtered and paged, and the actions and object types it holds (the
pickers of its filters)."""

from dataclasses import dataclass
from datetime import datetime

from accounts.models import AuditEvent, Project
from core.list_filters import MAX_VALUES
from core.pagination import Page, paginate_by_id

RECENT_EVENTS = 20_000  # the latest events whose values the pickers offer


def audit_list(
    *,
    project: Project,
    action: str | None = None,
    object_type: str | None = None,
    actor: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> Page[AuditEvent]:
    events = AuditEvent.objects.filter(project=project).select_related(
        "actor_user", "actor_api_key"
    )
    if action:
        events = events.filter(action__startswith=action)
    if object_type:
        events = events.filter(object_type=object_type)
    if actor:
        events = events.filter(actor_user__username=actor)
    if since:
        events = events.filter(created_at__gte=since)
    if until:
        events = events.filter(created_at__lt=until)
    return paginate_by_id(events, cursor=cursor, limit=limit)


@dataclass(frozen=True)
class KnownAuditValues:
    actions: list[str]
    object_types: list[str]


def audit_known_values(*, project: Project) -> KnownAuditValues:
    """The distinct actions and object types of the project's latest audit events (one query)."""
    recent = AuditEvent.objects.filter(project=project).order_by("-id").values("id")[:RECENT_EVENTS]
    pairs = (
        AuditEvent.objects.filter(id__in=recent)
        .values_list("action", "object_type")
        .distinct()
        .order_by()
    )
    actions, object_types = set(), set()
    for action, object_type in pairs[: MAX_VALUES * 4]:
        actions.add(action)
        object_types.add(object_type)
    return KnownAuditValues(actions=sorted(actions), object_types=sorted(object_types))
