"""API-key authentication and the per-key rate limit for the ninja API."""

import hashlib
import logging
from datetime import timedelta

import redis
from django.conf import settings
from django.db import connections, router
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import APIKeyHeader, HttpBearer
from ninja.throttling import BaseThrottle

from accounts.models import ApiKey, Project
from accounts.services.rate_limit import rate_limit_check
from core.errors import PermissionDenied

logger = logging.getLogger(__name__)

# last_used_at is written at most this often per key, so auth does not write on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


# The key and its project in one plain statement: the ORM spent ~0.8 ms per request compiling
# the same select_related query and building it (auth runs on every API call).
_KEY_FIELDS = [f.attname for f in ApiKey._meta.concrete_fields]
_PROJECT_FIELDS = [f.attname for f in Project._meta.concrete_fields]
_KEY_LOOKUP_SQL = (
    "SELECT "
    + ", ".join([f"k.{name}" for name in _KEY_FIELDS] + [f"p.{name}" for name in _PROJECT_FIELDS])
    + " FROM traces_apikey k JOIN traces_project p ON p.id = k.project_id"
    " WHERE k.key_hash = %s AND k.revoked_at IS NULL"
)


def api_key_lookup(raw_key: str) -> ApiKey | None:
    raw_key = raw_key.strip()
    if not raw_key:
        return None
    alias = router.db_for_read(ApiKey)
    with connections[alias].cursor() as cursor:
        cursor.execute(_KEY_LOOKUP_SQL, [hash_key(raw_key)])
        row = cursor.fetchone()
    if row is None:
        return None
    key = ApiKey.from_db(alias, _KEY_FIELDS, row[: len(_KEY_FIELDS)])
    key.project = Project.from_db(alias, _PROJECT_FIELDS, row[len(_KEY_FIELDS) :])
    now = timezone.now()
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


class BearerKey(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        return api_key_lookup(token)


class HeaderKey(APIKeyHeader):
    param_name = "X-API-Key"

    def authenticate(self, request: HttpRequest, key: str | None) -> ApiKey | None:
        return api_key_lookup(key or "")


API_KEY_AUTH = [BearerKey(), HeaderKey()]


# Reading trajectories (raw observations included), the library and the KB export is not an
# agent's job: `ingest` sends, `recall` answers at run time, `read` (or `admin`) reads.
READ_SCOPES = ("read", "admin")


def require_scope(request: HttpRequest, *scopes: str) -> ApiKey:
    """The request's key if it holds any of `scopes`, else PermissionDenied (403)."""
    key: ApiKey = request.auth  # type: ignore[attr-defined]
    if not set(scopes) & set(key.scopes):
        wanted = " or ".join(f"'{s}'" for s in scopes)
        raise PermissionDenied(f"this API key lacks the {wanted} scope")
    return key


class ApiKeyRateThrottle(BaseThrottle):
    """HINDSIGHT_RATE_LIMIT_PER_MINUTE per API key (GCRA in Redis, see services/rate_limit.py).

    If Redis is unreachable the request is allowed: ingest must keep working without Redis.
    """

    def __init__(self) -> None:
        self._wait = 0.0

    def allow_request(self, request: HttpRequest) -> bool:
        limit = settings.HINDSIGHT_RATE_LIMIT_PER_MINUTE
        key = getattr(request, "auth", None)
        if not limit or not isinstance(key, ApiKey):
            return True
        try:
            self._wait = rate_limit_check(subject=f"key:{key.key_hash[:32]}", limit=limit)
        except redis.RedisError:  # fail open, and say so in the log
            logger.warning("rate limit not enforced: Redis unreachable", exc_info=True)
            return True
        return self._wait == 0

    def wait(self) -> float:
        return self._wait
