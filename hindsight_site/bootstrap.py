"""What a process must have before Django reads its settings, done by the process's entry point.

Importing `hindsight_site.settings` does no I/O: it reads the environment and what `prepare()`
left here. Each entry point that uses the database or Redis calls `prepare()` first (or
`setup_django()`, which also runs `django.setup()`): `manage.py`, `wsgi.py`, the Celery app (on
configure), the launcher, the pytest plugin and the benchmarks. `prepare()`

* creates the data dir and its `static/` folder (WhiteNoise warns about a missing one),
* reads the data dir's secret key, generating it on first use (unless HINDSIGHT_SECRET_KEY),
* resolves DATABASE_URL / REDIS_URL when they are not set: the live launcher's record, else
  embedded servers this process starts or joins (see `hindsight_site.embedded`), unless
  HINDSIGHT_EMBEDDED=off (commands that only speak HTTP to a running site).

It runs once per process; later calls return what the first one found.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from hindsight_site import embedded
from hindsight_site.env import env_bool


@dataclass(frozen=True)
class Prepared:
    data_dir: Path
    secret_key: str = ""
    database_url: str = ""
    redis_url: str = ""


_prepared: Prepared | None = None


def prepared() -> Prepared:
    """What `prepare()` found, or only the data dir's path when it has not run (no I/O)."""
    return _prepared or Prepared(data_dir=embedded.data_dir_path())


def read_or_create_secret(path: Path, make=lambda: secrets.token_urlsafe(50)) -> tuple[str, bool]:
    """The secret kept in `path` (mode 0600), made on first use; True when it was just made."""
    if path.exists():
        return path.read_text().strip(), False
    value = make()
    path.write_text(value)
    path.chmod(0o600)
    return value, True


def prepare() -> Prepared:
    global _prepared
    if _prepared is not None:
        return _prepared
    directory = embedded.data_dir_path()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "static").mkdir(exist_ok=True)
    secret_key = os.environ.get("HINDSIGHT_SECRET_KEY", "").strip()
    if not secret_key:
        secret_key, _ = read_or_create_secret(directory / "secret_key")
    database_url = os.environ.get("DATABASE_URL", "").strip()
    redis_url = os.environ.get("REDIS_URL", "").strip()
    if env_bool("HINDSIGHT_EMBEDDED", True) and (not database_url or not redis_url):
        embedded_database, embedded_redis = embedded.resolve_urls(
            need_database=not database_url, need_redis=not redis_url
        )
        database_url = database_url or embedded_database
        redis_url = redis_url or embedded_redis
    _prepared = Prepared(directory, secret_key, database_url, redis_url)
    return _prepared


def setup_django() -> Prepared:
    """prepare(), then django.setup(): for scripts that use the ORM in process."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hindsight_site.settings")
    done = prepare()
    django.setup()
    return done
