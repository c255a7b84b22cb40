"""API-key authentication and the per-key rate limit for the ninja API."""

import hashlib
import logging
from datetime import timedelta

import redis
from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import APIKeyHeader, HttpBearer
from ninja.throttling import BaseThrottle

from core.errors import PermissionDenied
from traces.models import ApiKey
from traces.services.rate_limit import rate_limit_check

logger = logging.getLogger(__name__)

# last_used_at is written at most this often per key, so auth does not write on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


def api_key_lookup(raw_key: str) -> ApiKey | None:
    raw_key = raw_key.strip()
    if not raw_key:
        return None
    # Slicing, not .first(): key_hash is unique, an ORDER BY would only cost time on every call.
    found = ApiKey.objects.select_related("project").filter(
        key_hash=hash_key(raw_key), revoked_at__isnull=True
    )[:1]
    key = next(iter(found), None)
    if key is None:
        return None
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
