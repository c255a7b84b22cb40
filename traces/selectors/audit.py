"""The audit log, filtered and paged."""

from datetime import datetime

from core.pagination import Page, paginate_by_id
from traces.models import (
    AuditEvent,
    Project,
)


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
