"""Brute-force protection for signing in: growing delays per account and per address, in Redis.

Every wrong password counts for its username, for its address, and for the two together. The
first HINDSIGHT_LOGIN_MAX_FAILURES (5) of a username or of a username at one address, and the
first HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS (20) of an address (any usernames), cost
nothing; from then on each failure makes the next attempt wait, 1 s, 2 s, 4 s … up to
HINDSIGHT_LOGIN_MAX_DELAY_SECONDS (300). An attempt made while it has to wait is refused with
the seconds left before its password is checked, and is not counted: guessing is slowed, and
hammering does not lengthen the wait. Failures are forgotten HINDSIGHT_LOGIN_WINDOW_SECONDS
(900) after the last one; signing in clears the username's at that address.

No hard lockout, and no lockout of others: a wait never exceeds the cap, and the username's own
wait does not hold an address the account signed in from before (its last 20, for 90 days):
someone guessing the admin's password elsewhere slows the guessers, while the admin at her
usual address is held only by her own mistakes there. And an admin can always get in from the
console: `manage.py sign_in_link USERNAME` prints a one-time link past all of this
(accounts.services.sign_in_links).

The address is the connection's (REMOTE_ADDR); behind a proxy, HINDSIGHT_CLIENT_ADDRESS_HEADER
names the header the proxy sets (X-Forwarded-For: its last entry, the address the proxy saw;
entries a client sent itself come before it), else every user shares the proxy's address.

Failures are counted from Django's `user_login_failed` signal, so the dashboard's and the
admin's sign-in count alike. The first wait of a username or address is audited
(`login.delayed`). If Redis cannot be reached, sign-in is not throttled (logged), as the API's
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

from accounts.services.audit import audit_event

logger = logging.getLogger(__name__)

KNOWN_ADDRESSES = 20  # per account: where it signed in from lately
KNOWN_FOR_SECONDS = 90 * 86400


def _digest(subject: str) -> str:
    # Hashed: usernames and addresses are arbitrary text, cache keys are not.
    return hashlib.sha256(subject.lower().encode()).hexdigest()[:32]


def _key(kind: str, what: str, subject: str) -> str:
    return f"login:{kind}:{what}:{_digest(subject)}"


def client_address(request) -> str:
    """The client's address: REMOTE_ADDR, or the trusted proxy's header when one is set."""
    if request is None:
        return ""
    header = settings.HINDSIGHT_CLIENT_ADDRESS_HEADER
    if header:
        forwarded = request.META.get("HTTP_" + header.upper().replace("-", "_"), "")
        last = forwarded.split(",")[-1].strip()
        if last:
            return last[:100]
    return request.META.get("REMOTE_ADDR") or ""


def _subjects(username: str, address: str) -> list[tuple[str, str, int]]:
    """(kind, subject, failures that cost nothing) an attempt counts for."""
    username = username.strip()
    per_account = settings.HINDSIGHT_LOGIN_MAX_FAILURES
    subjects = [("account", username, per_account)] if username else []
    if address:
        if username:
            subjects.append(("pair", f"{username}\n{address}", per_account))
        subjects.append(("address", address, settings.HINDSIGHT_LOGIN_MAX_FAILURES_PER_ADDRESS))
    return subjects


def login_delay_seconds(failures: int, free: int) -> int:
    """The wait after the `failures`-th failure: none for the free ones, then 1, 2, 4 … s."""
    if failures < free:
        return 0
    return min(settings.HINDSIGHT_LOGIN_MAX_DELAY_SECONDS, 2 ** min(failures - free, 30))


def _is_known(username: str, address: str) -> bool:
    known = cache.get(_key("known", "addresses", username.strip())) or {}
    return _digest(address) in known


def login_wait_seconds(*, username: str, address: str) -> int:
    """Seconds this username at this address must wait before trying again (0: now)."""
    try:
        subjects = _subjects(username, address)
        if address and _is_known(username, address):
            subjects = [s for s in subjects if s[0] != "account"]
        until = cache.get_many([_key(kind, "until", subject) for kind, subject, _ in subjects])
    except RedisError:
        logger.warning("Redis unreachable: sign-in is not throttled", exc_info=True)
        return 0
    return max([math.ceil(u - time.time()) for u in until.values()] + [0])


def login_failure_record(*, username: str, address: str) -> None:
    window = settings.HINDSIGHT_LOGIN_WINDOW_SECONDS
    try:
        for kind, subject, free in _subjects(username, address):
            key = _key(kind, "failures", subject)
            cache.add(key, 0, timeout=window)
            failures = cache.incr(key)
            cache.touch(key, window)  # forgotten a window after the last failure
            delay = login_delay_seconds(failures, free)
            if not delay:
                continue
            cache.set(_key(kind, "until", subject), time.time() + delay, timeout=delay)
            if failures == free and kind != "pair":
                audit_event(
                    action="login.delayed",
                    object_type=kind,
                    object_id=subject[:64],
                    after={"failures": failures, "seconds": delay, "address": address},
                )
    except RedisError:
        logger.warning("Redis unreachable: a failed sign-in was not counted", exc_info=True)


def login_success_record(*, username: str, address: str) -> None:
    """Clear the username's failures at this address and remember the address as one the
    account signs in from. The username's own count stays: the owner signing in does not give
    whoever guesses elsewhere a fresh start."""
    username = username.strip()
    if not address:
        return
    pair = f"{username}\n{address}"
    try:
        known_key = _key("known", "addresses", username)
        known = cache.get(known_key) or {}
        known[_digest(address)] = time.time()
        newest = sorted(known.items(), key=lambda item: item[1])[-KNOWN_ADDRESSES:]
        cache.set(known_key, dict(newest), timeout=KNOWN_FOR_SECONDS)
        cache.delete_many([_key("pair", what, pair) for what in ("failures", "until")])
    except RedisError:
        logger.warning("Redis unreachable: sign-in failures not cleared", exc_info=True)


@receiver(user_login_failed, dispatch_uid="hindsight-login-failed")
def _on_login_failed(sender, credentials, request=None, **kwargs) -> None:
    login_failure_record(
        username=str(credentials.get("username") or ""), address=client_address(request)
    )


@receiver(user_logged_in, dispatch_uid="hindsight-logged-in")
def _on_logged_in(sender, request, user, **kwargs) -> None:
    login_success_record(username=user.get_username(), address=client_address(request))
