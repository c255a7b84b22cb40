"""What `hindsight run` starts: the embedded services (PostgreSQL, Redis) when no external ones
are configured, kept running while the site runs, and the commands of web, worker and beat."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hindsight_site import embedded, orphan_watch
from hindsight_site.env import env_int

if TYPE_CHECKING:
    from hindsight_site.supervisor import Supervisor


@dataclass
class EmbeddedServices:
    """The embedded PostgreSQL and Redis this launcher owns (None: an external one is used)."""

    directory: Path
    postgres: Any = None
    redis: embedded.RedisServer | None = None

    def start(
        self, database_url: str, redis_url: str, supervisor: Supervisor, say: Callable[[str], None]
    ) -> tuple[str, str]:
        """The database and Redis URLs, starting an embedded service for each one not given."""
        if not database_url:
            say(f"starting embedded PostgreSQL in {self.directory / 'postgres'}")
            self.postgres = embedded.start_postgres(self.directory, owned=True)
            database_url = embedded.postgres_url(self.postgres)
        if not redis_url:
            say(f"starting embedded Redis on {embedded.redis_socket(self.directory)}")
            self.redis = embedded.RedisServer(self.directory)
            self.redis.start()
            redis_url = self.redis.url
            if self.redis.process is not None:
                supervisor.record("Redis", self.redis.process.pid)
        return database_url, redis_url

    def watch(self, supervisor: Supervisor) -> None:
        """The supervisor restarts an embedded service that stopped."""
        if self.redis is not None:
            supervisor.watch_service(
                "Redis", self.redis.is_running, partial(self._restart_redis, supervisor)
            )
        if self.postgres is not None:
            running = partial(embedded.postgres_is_running, self.directory)
            supervisor.watch_service("PostgreSQL", running, self._restart_postgres)

    def _restart_redis(self, supervisor: Supervisor) -> None:
        assert self.redis is not None
        self.redis.start()
        if self.redis.process is not None:
            supervisor.record("Redis", self.redis.process.pid)

    def _restart_postgres(self) -> None:
        self.postgres = embedded.start_postgres(self.directory, owned=True)

    def stop(self) -> None:
        if self.redis is not None:
            self.redis.stop()
        if self.postgres is not None:
            self.postgres.stop()


def web_command(host: str, port: int, directory: Path) -> list[str]:
    return [
        sys.executable, "-m", "gunicorn", "hindsight_site.wsgi:application",
        "--bind", f"{host}:{port}",
        "--workers", str(env_int("HINDSIGHT_WEB_WORKERS", 3, minimum=1)),
        # Load the app (and its URLconf, see wsgi.py) once in the master before forking, so the
        # first request to each worker is not the one that pays for imports.
        "--preload",
        "--config", "python:hindsight_site.gunicorn_conf",
        "--graceful-timeout", "10",
        "--access-logfile", "-",
        "--control-socket", str(directory / "gunicorn.ctl"),
    ]  # fmt: skip


def web_nice() -> int:
    """A little below the worker when both want the CPU (HINDSIGHT_WEB_NICE): under
    bench/load.py's load the worker had a quarter of the two cores and the backlog took 59-69 s
    to drain; at 2, 41-60 s, recall p95 +8-30 % (at 5: 30 s, 2.5x)."""
    return env_int("HINDSIGHT_WEB_NICE", 2, minimum=0, maximum=19)


def worker_command(launcher_pid: int) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "hindsight_site", "worker",
        "--loglevel", "INFO",
        "--concurrency", str(env_int("HINDSIGHT_WORKER_CONCURRENCY", 2, minimum=1)),
        "--hostname", orphan_watch.worker_hostname(launcher_pid),
    ]  # fmt: skip


def beat_command(directory: Path) -> list[str]:
    return [
        sys.executable, "-m", "celery", "-A", "hindsight_site", "beat",
        "--loglevel", "INFO",
        "--schedule", str(directory / "celerybeat-schedule"),
    ]  # fmt: skip
