"""The client tests' site: pytest-django's live server with a key, and the client's retry policy
with short waits."""

from dataclasses import dataclass

from accounts.models import Project
from hindsight_client import Backoff, HindsightClient

# Short waits keep the retry tests quick; the policy is the same as in production.
FAST_BACKOFF = Backoff(base=0.02, cap=0.2)


@dataclass
class Site:
    url: str
    key: str
    project: Project

    def client(self, url: str | None = None, **options) -> HindsightClient:
        """A client of this site, or of `url` (a relay in front of it) with this site's key."""
        return HindsightClient(url or self.url, self.key, **options)
