"""Loaded by pytest (`-p hindsight_site.pytest_env`) before Django settings are read.

The suite always runs on its own embedded PostgreSQL and Redis in `.hindsight/test` (one set per
pytest-xdist worker: `.hindsight/test-gw0`, ...), apart from
the data of `hindsight run` and from any DATABASE_URL / REDIS_URL of the shell: some tests stop
and restart Redis, which must never touch a real deployment.
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Under pytest-xdist each worker process has services of its own (`.hindsight/test-gw0`, ...):
# tests that stop Redis or read the broker's queue never see another worker's.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_BASE = os.environ.get("HINDSIGHT_TEST_DATA_DIR") or str(ROOT / ".hindsight" / "test")
os.environ["HINDSIGHT_DATA_DIR"] = f"{_BASE}-{_WORKER}" if _WORKER else _BASE
os.environ.pop("DATABASE_URL", None)
os.environ.pop("REDIS_URL", None)
os.environ.pop("DATABASE_REPLICA_URL", None)
# Playwright's sync API runs an event loop in the test thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from hindsight_site import bootstrap  # noqa: E402 - after the data dir is chosen

bootstrap.prepare()
