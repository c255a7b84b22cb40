import os

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from accounts.services.sign_in_links import sign_in_link_token


class Command(BaseCommand):
    help = (
        "Print a one-time sign-in link for an account, past the sign-in throttle: the way in "
        "for an admin whose sign-in is delayed (or who lost the password: change it then)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument(
            "--base-url",
            help="the site's address as its users reach it (default: http://localhost:"
            "HINDSIGHT_PORT)",
        )

    def handle(self, *args, username: str, base_url: str | None, **options):
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active account named {username!r}")
        port = os.environ.get("HINDSIGHT_PORT", "").strip() or "8000"  # the launcher's
        base = (base_url or f"http://localhost:{port}").rstrip("/")
        path = reverse("sign_in_link", args=[sign_in_link_token(user=user)])
        self.stdout.write(base + path)
        self.stderr.write(
            f"It signs in once, within {_duration(settings.HINDSIGHT_SIGN_IN_LINK_SECONDS)} "
            "(HINDSIGHT_SIGN_IN_LINK_SECONDS)."
        )


def _duration(seconds: int) -> str:
    if seconds % 60:
        return f"{seconds} seconds" if seconds != 1 else "1 second"
    minutes = seconds // 60
    return f"{minutes} minutes" if minutes != 1 else "1 minute"
