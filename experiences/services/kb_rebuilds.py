"""Rebuilding a project's knowledge base in the worker: the request, its status, the run.

The articles themselves are written by `kb_articles.kb_rebuild` (one per primary tool or task
type, from a template or the configured LLM) and exported by `kb_export`. A rebuild from the
dashboard runs in the worker (an LLM writer can take minutes): the request queues it, and its
state (queued, running n of m, done, failed and why) is kept in Redis, where the page polls it.
One rebuild per project at a time: a second request gets the queued or running one back.
"""

import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from redis.exceptions import RedisError

from accounts.models import Project
from core.errors import DomainError
from experiences.services.kb_articles import kb_rebuild

logger = logging.getLogger(__name__)

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
# The latest rebuild of a project stays readable this long (the page shows how it went).
STATUS_TTL = 7 * 24 * 3600
REBUILD_TASK = "experiences.rebuild_kb"
NOT_QUEUED = "Redis is unreachable: the rebuild was not queued"


class KbRebuildUnavailable(DomainError):
    """Redis (broker and status store) cannot be reached: nothing was queued."""

    status_code = 503


@dataclass(frozen=True)
class KbRebuild:
    """A project's latest rebuild, as the page shows it."""

    id: str
    state: str
    requested_by: str
    queued_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    done: int = 0  # articles written so far...
    total: int = 0  # ...of this many (known once it runs)
    articles: int = 0  # the knowledge base's articles once done
    error: str = ""

    @property
    def is_active(self) -> bool:
        return self.state in (QUEUED, RUNNING)


def rebuild_status_key(project_id: int) -> str:
    return f"kb-rebuild:{project_id}"


def _lost_after() -> timedelta:
    # A running rebuild is killed at the time limit, so past it (and a margin) it is not running;
    # a queued one that waited this long was lost or no worker is running.
    return timedelta(seconds=settings.HINDSIGHT_KB_REBUILD_TIME_LIMIT + 60)


def kb_rebuild_status(*, project: Project) -> KbRebuild | None:
    """The project's latest rebuild (None before the first); raises KbRebuildUnavailable."""
    try:
        stored = cache.get(rebuild_status_key(project.pk))
    except RedisError as error:
        raise KbRebuildUnavailable("Redis is unreachable: the rebuild status is unknown") from error
    if not isinstance(stored, dict):
        return None  # no rebuild yet (or none for a week)
    try:
        rebuild = KbRebuild(**stored)
    except TypeError:  # written by a version of this code with other fields
        return None
    since = rebuild.started_at or rebuild.queued_at
    if rebuild.is_active and timezone.now() - since > _lost_after():
        minutes = round(_lost_after().total_seconds() / 60)
        what = "no worker started it" if rebuild.state == QUEUED else "its worker stopped"
        return replace(rebuild, state=FAILED, error=f"no result after {minutes} minutes: {what}")
    return rebuild


def _status_save(project_id: int, rebuild: KbRebuild) -> None:
    cache.set(rebuild_status_key(project_id), asdict(rebuild), timeout=STATUS_TTL)


def _status_restore_quietly(project_id: int, previous: KbRebuild | None) -> None:
    """A rebuild that could not be queued: show what was shown before it (or nothing)."""
    try:
        if previous is None:
            cache.delete(rebuild_status_key(project_id))
        else:
            _status_save(project_id, previous)
    except RedisError:
        logger.warning("kb rebuild: status not restored (Redis unreachable)")


def _status_save_quietly(project_id: int, rebuild: KbRebuild) -> None:
    """From the worker: a status that cannot be written must not stop the rebuild itself."""
    try:
        _status_save(project_id, rebuild)
    except RedisError:
        logger.warning("kb rebuild %s: status not saved (Redis unreachable)", rebuild.id)


def kb_rebuild_request(*, project: Project, user: User) -> tuple[KbRebuild, bool]:
    """Queue a rebuild of the project's articles; (the rebuild, whether it was queued now).

    While one is queued or running, that one is returned instead. Raises KbRebuildUnavailable
    when Redis is down (nothing queued; the status shown before stays).
    """
    from core.publish import tasks_publish

    with transaction.atomic():
        # Two requests at once (two admins, a double click) queue one rebuild.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"kb-rebuild-request:{project.pk}"],
            )
        try:
            current = kb_rebuild_status(project=project)
        except KbRebuildUnavailable as error:
            raise KbRebuildUnavailable(NOT_QUEUED) from error
        if current is not None and current.is_active:
            return current, False
        rebuild = KbRebuild(
            id=uuid.uuid4().hex,
            state=QUEUED,
            requested_by=user.get_username(),
            queued_at=timezone.now(),
        )
        try:
            _status_save(project.pk, rebuild)
        except RedisError as error:
            raise KbRebuildUnavailable(NOT_QUEUED) from error
    # Published once the lock is released (the status above already makes a second request
    # return this rebuild), with the site's bounded publishing.
    if not tasks_publish(REBUILD_TASK, [(project.pk, rebuild.id, user.pk)]):
        _status_restore_quietly(project.pk, current)
        raise KbRebuildUnavailable(NOT_QUEUED)
    return rebuild, True


@contextmanager
def _run_lock(project_id: int) -> Iterator[bool]:
    """Whether this process may rebuild the project's articles now.

    A session lock in PostgreSQL: a second delivery of the same task (Redis hands an unfinished
    task to another worker after the visibility timeout) finds it taken; a worker that died
    released it with its connection.
    """
    name = f"kb-rebuild-run:{project_id}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", [name])
        locked = cursor.fetchone()[0]
    try:
        yield locked
    finally:
        if locked:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [name])
            except DatabaseError:
                logger.warning(
                    "kb rebuild lock of project %s released with the connection", project_id
                )


def kb_rebuild_run(*, project_id: int, rebuild_id: str, user_id: int | None) -> str:
    """The worker's side of a queued rebuild; idempotent (a finished or replaced one is skipped)."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return "project gone"
    with _run_lock(project_id) as locked:
        current = kb_rebuild_status(project=project)
        if current is None or current.id != rebuild_id or not current.is_active:
            return "superseded or finished"
        if locked:
            return _run(project, current, user_id)
        if current.state == RUNNING:
            return "already running"  # another delivery of this very task is writing it
        _status_save_quietly(
            project_id,
            replace(current, state=FAILED, finished_at=timezone.now(),
                    error="another rebuild of this project was still running"),
        )  # fmt: skip
        return "busy"


def _run(project: Project, queued: KbRebuild, user_id: int | None) -> str:
    status = replace(queued, state=RUNNING, started_at=timezone.now(), done=0, total=0)
    _status_save_quietly(project.pk, status)

    def progress(done: int, total: int) -> None:
        nonlocal status
        status = replace(status, done=done, total=total)
        _status_save_quietly(project.pk, status)

    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    try:
        articles = kb_rebuild(project=project, user=user, on_progress=progress)
    except Exception as error:
        reason = (
            f"it took longer than {settings.HINDSIGHT_KB_REBUILD_TIME_LIMIT} s"
            if isinstance(error, SoftTimeLimitExceeded)
            else f"{type(error).__name__}: {error}"
        )
        failed = replace(status, state=FAILED, error=reason, finished_at=timezone.now())
        _status_save_quietly(project.pk, failed)
        raise
    done = replace(status, state=DONE, articles=len(articles), finished_at=timezone.now())
    _status_save_quietly(project.pk, done)
    return "rebuilt"
