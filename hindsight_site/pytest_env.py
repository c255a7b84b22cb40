"""Loaded by pytest (`-p hindsight_site.pytest_env`) before Django settings are read.

The suite always runs on its own embedded PostgreSQL and Redis in `.hindsight/test`, apart from
the data of `hindsight run` and from any DATABASE_URL / REDIS_URL of the shell: some tests stop
and restart Redis, which must never touch a real deployment.
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

os.environ["HINDSIGHT_DATA_DIR"] = os.environ.get("HINDSIGHT_TEST_DATA_DIR") or str(
    ROOT / ".hindsight" / "test"
)
os.environ.pop("DATABASE_URL", None)
os.environ.pop("REDIS_URL", None)
os.environ.pop("DATABASE_REPLICA_URL", None)
# Playwright's sync API runs an event loop in the test thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from hindsight_site import bootstrap  # noqa: E402 - after the data dir is chosen

bootstrap.prepare()
