"""The audit log: who did what to which object, with before/after."""

from typing import Any

from django.contrib.auth.models import User

from accounts.models import ApiKey, AuditEvent, Project


def audit_event(
    *,
    action: str,
    object_type: str,
    object_id: Any,
    project: Project | None = None,
    user: User | None = None,
    api_key: ApiKey | None = None,
    before: Any = None,
    after: Any = None,
    save: bool = True,
) -> AuditEvent:
    event = AuditEvent(
        project=project,
        actor_user=user if user is not None and user.is_authenticated else None,
        actor_api_key=api_key,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        before=before,
        after=after,
    )
    if save:
        event.save()
    return event
