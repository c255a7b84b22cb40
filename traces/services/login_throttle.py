"""Brute-force protection for signing in: per account and per address, kept in Redis.

HINDSIGHT_LOGIN_MAX_FAILURES wrong passwords for one username, or
HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS from one address (any usernames), within
HINDSIGHT_LOGIN_LOCKOUT_SECONDS lock that username / address out for that long: every sign-in
is refused with the time left, even with the right password. A successful sign-in clears the
account's failures. Each lockout is audited (`login.locked`). The address is the connection's
(REMOTE_ADDR): behind a proxy, that is the proxy's unless it sets REMOTE_ADDR itself.

Failures are counted from Django's `user_login_failed` signal, so the dashboard's sign-in and the
admin's count alike. If Redis cannot be reached, sign-in is not throttled (logged), as the API's
rate limit: an outage of the cache must not lock everybody out.
"""

import hashlib
import logging
import math
import time

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from redis.exceptions import RedisError

from traces.services.audit import audit_event

logger = logging.getLogger(__name__)


def _key(kind: str, what: str, subject: str) -> str:
    # Hashed: usernames and addresses are arbitrary text, cache keys are not.
    digest = hashlib.sha256(subject.lower().encode()).hexdigest()[:32]
    return f"login:{kind}:{what}:{digest}"


def _subjects(username: str, address: str) -> list[tuple[str, str, int]]:
    subjects = [("account", username.strip(), settings.HINDSIGHT_LOGIN_MAX_FAILURES)]
    if address:
        subjects.append(("address", address, settings.HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS))
    return [s for s in subjects if s[1]]


def login_lockout_seconds(*, username: str, address: str) -> int:
    """Seconds until this username / address may sign in again (0: now)."""
    try:
        until = cache.get_many([_key(k, "locked", s) for k, s, _ in _subjects(username, address)])
    except RedisError:
        logger.warning("Redis unreachable: sign-in is not throttled", exc_info=True)
        return 0
    return max([math.ceil(u - time.time()) for u in until.values()] + [0])


def login_failure_record(*, username: str, address: str) -> None:
    window = settings.HINDSIGHT_LOGIN_LOCKOUT_SECONDS
    try:
        for kind, subject, limit in _subjects(username, address):
            key = _key(kind, "failures", subject)
            cache.add(key, 0, timeout=window)  # the window opens at the first failure
            locked = _key(kind, "locked", subject)  # holds when the pause ends
            if cache.incr(key) >= limit and cache.add(locked, time.time() + window, window):
                cache.delete(key)
                audit_event(
                    action="login.locked",
                    object_type=kind,
                    object_id=subject[:64],
                    after={"failures": limit, "seconds": window, "address": address},
                )
    except RedisError:
        logger.warning("Redis unreachable: a failed sign-in was not counted", exc_info=True)


def login_success_record(*, username: str) -> None:
    try:
        cache.delete(_key("account", "failures", username.strip()))
    except RedisError:
        logger.warning("Redis unreachable: sign-in failures not cleared", exc_info=True)


def _address(request) -> str:
    return (request.META.get("REMOTE_ADDR") or "") if request is not None else ""


@receiver(user_login_failed, dispatch_uid="hindsight-login-failed")
def _on_login_failed(sender, credentials, request=None, **kwargs) -> None:
    login_failure_record(username=str(credentials.get("username") or ""), address=_address(request))


@receiver(user_logged_in, dispatch_uid="hindsight-logged-in")
def _on_logged_in(sender, request, user, **kwargs) -> None:
    login_success_record(username=user.get_username())
