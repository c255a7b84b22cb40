"""Projects and API keys: keys are shown once, stored as a hash, and revocable."""

import secrets
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from accounts.auth import hash_key
from accounts.models import ApiKey, Project
from accounts.services.audit import audit_event
from core.errors import InvalidInput

KEY_PREFIX = "hs_"
VISIBLE_PREFIX_CHARS = 10


@dataclass(frozen=True)
class NewApiKey:
    key: ApiKey
    raw: str  # shown once, never stored


def project_get_or_create(*, name: str) -> Project:
    project, _ = Project.objects.get_or_create(name=name)
    return project


def api_key_create(
    *,
    project: Project,
    scopes: list[str],
    name: str = "",
    user: User | None = None,
) -> NewApiKey:
    valid = set(ApiKey.Scope.values)
    unknown = sorted(set(scopes) - valid)
    if unknown or not scopes:
        raise InvalidInput(
            f"scopes must be a non-empty subset of {', '.join(sorted(valid))}; got {scopes}"
        )
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey(
        project=project,
        name=name,
        prefix=raw[:VISIBLE_PREFIX_CHARS],
        key_hash=hash_key(raw),
        scopes=sorted(set(scopes)),
        created_by=user if user is not None and user.is_authenticated else None,
    )
    with transaction.atomic():
        key.full_clean()
        key.save()
        audit_event(
            action="api_key.create",
            object_type="api_key",
            object_id=key.pk,
            project=project,
            user=user,
            after={"prefix": key.prefix, "scopes": key.scopes, "name": name},
        )
    return NewApiKey(key=key, raw=raw)


def api_key_revoke(*, key: ApiKey, user: User | None = None) -> ApiKey:
    if key.revoked_at is not None:
        return key
    with transaction.atomic():
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit_event(
            action="api_key.revoke",
            object_type="api_key",
            object_id=key.pk,
            project=key.project,
            user=user,
            before={"revoked_at": None},
            after={"revoked_at": key.revoked_at.isoformat()},
        )
    return key
