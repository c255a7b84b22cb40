"""One-time sign-in links made at the console: the way in that no sign-in throttle can close.

`manage.py sign_in_link USERNAME` signs the account's id and its last sign-in time; the link
works for HINDSIGHT_SIGN_IN_LINK_SECONDS (600) and only once, because signing in through it
changes that time (Django's `update_last_login`). It needs no storage (Redis may be the thing
that is down) and nothing secret beyond SECRET_KEY; whoever can run manage.py can read that
anyway.
"""

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing

SALT = "hindsight.sign-in-link"


def _last_login(user: User) -> str:
    return user.last_login.isoformat() if user.last_login else ""


def sign_in_link_token(*, user: User) -> str:
    return signing.dumps({"user": user.pk, "last_login": _last_login(user)}, salt=SALT)


def sign_in_link_user(token: str) -> User | None:
    """The active account the token signs in, or None (forged, cut, expired or used)."""
    try:
        data = signing.loads(token, salt=SALT, max_age=settings.HINDSIGHT_SIGN_IN_LINK_SECONDS)
        user = User.objects.get(pk=data["user"], is_active=True)
    except (signing.BadSignature, User.DoesNotExist, KeyError, TypeError, ValueError):
        return None
    return user if _last_login(user) == data.get("last_login") else None
