"""The knowledge base: promoted experiences as best-practice articles, and their export.

One article per primary tool (the first tool the experience used) or, without tools, per task
type. Bodies come from a template, or from the configured LLM (falling back to the template).
An article a person edited is kept as edited. Exports are deterministic: the same data gives
byte-identical files (sorted, no timestamps), so every export can be reproduced.

A rebuild from the dashboard runs in the worker (an LLM writer can take minutes): the request
queues it, and its state (queued, running n of m, done, failed and why) is kept in Redis, where
the page polls it. One rebuild per project at a time: a second request gets the queued or
running one back.
"""

import io
import json
import logging
import re
import uuid
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator
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

from core.errors import DomainError, InvalidInput, NotFound
from experiences.models import Experience, KbArticle
from experiences.services.llm_text import complete_text
from traces.models import Project
from traces.services.audit import audit_event

logger = logging.getLogger(__name__)
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
REWRITE_PROMPT = """Rewrite these experiences of an AI agent as a short best-practice article in
Markdown for other agents and their operators: a title line ('# ...'), then sections for what to
do and what to avoid. Keep every concrete tool, argument and environment detail; add nothing."""


def group_key(experience: Experience) -> str:
    return (
        f"tool:{experience.tools[0]}" if experience.tools else f"task_type:{experience.task_type}"
    )


def _title(key: str) -> str:
    kind, _, name = key.partition(":")
    return f"Best practices: {name}" if kind == "tool" else f"Best practices for {name} tasks"


def template_body(key: str, experiences: list[Experience]) -> str:
    strategies = [e for e in experiences if e.polarity == Experience.Polarity.SUCCESS]
    lessons = [e for e in experiences if e.polarity == Experience.Polarity.FAILURE]
    lines = [f"# {_title(key)}", ""]
    lines.append(
        f"_{len(experiences)} promoted experience(s), "
        f"{sum(e.support_count for e in experiences)} supporting trajectories._"
    )
    for heading, group in (("What works", strategies), ("What to avoid", lessons)):
        if group:
            lines += ["", f"## {heading}", ""]
            for e in group:
                where = f" (environments: {', '.join(e.environment)})" if e.environment else ""
                lines.append(
                    f"- {e.advice}{where} — seen {e.support_count}×, "
                    f"{e.upvotes} up / {e.downvotes} down"
                )
    return "\n".join(lines) + "\n"


def _llm_body(key: str, experiences: list[Experience]) -> str | None:
    listing = "\n".join(f"- ({e.polarity}) {e.advice}" for e in experiences)
    return complete_text(
        system=REWRITE_PROMPT, user=f"Topic: {_title(key)}\n{listing}", purpose="KB rewrite"
    )


def kb_rebuild(
    *,
    project: Project,
    user: User | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[KbArticle]:
    """Regenerate the articles from the currently promoted experiences.

    `on_progress(done, total)` is called as each article is written (edited ones count as done).
    """
    groups: dict[str, list[Experience]] = defaultdict(list)
    promoted = (
        Experience.objects.filter(
            project=project, status=Experience.Status.PROMOTED, merged_into__isnull=True
        )
        .order_by("pk")
        .defer("embedding")
    )
    for experience in promoted:
        groups[group_key(experience)].append(experience)
    bodies = {}
    edited = set(
        KbArticle.objects.filter(project=project, is_edited=True).values_list("key", flat=True)
    )
    if on_progress:
        on_progress(0, len(groups))
    for done, (key, experiences) in enumerate(groups.items(), start=1):
        if key not in edited:
            text = _llm_body(key, experiences)
            bodies[key] = (text, "llm") if text else (template_body(key, experiences), "template")
        if on_progress:
            on_progress(done, len(groups))
    with transaction.atomic():
        for key, experiences in groups.items():
            ids = [e.pk for e in experiences]
            if key in bodies:
                body, generator = bodies[key]
                KbArticle.objects.update_or_create(
                    project=project,
                    key=key,
                    defaults={
                        "title": _title(key),
                        "body": body,
                        "experience_ids": ids,
                        "generated_by": generator,
                    },
                )
            else:
                KbArticle.objects.filter(project=project, key=key).update(experience_ids=ids)
        KbArticle.objects.filter(project=project, is_edited=False).exclude(
            key__in=list(groups)
        ).delete()
        audit_event(
            action="kb.rebuild",
            object_type="project",
            object_id=project.pk,
            project=project,
            user=user,
            after={"articles": sorted(groups)},
        )
    return list(KbArticle.objects.filter(project=project))


# ---------------------------------------------------------------------------- rebuild in the worker

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


def kb_article_edit(
    *, project: Project, article_id: int, title: str, body: str, user: User
) -> KbArticle:
    if not title.strip() or not body.strip():
        raise InvalidInput("an article needs a title and a body")
    with transaction.atomic():
        article = (
            KbArticle.objects.select_for_update().filter(project=project, pk=article_id).first()
        )
        if article is None:
            raise NotFound(f"article {article_id} not found")
        before = {"title": article.title, "body": article.body}
        article.title, article.body = title.strip(), body.strip() + "\n"
        article.is_edited, article.edited_by = True, user
        article.save()
        audit_event(
            action="kb.edit",
            object_type="kb_article",
            object_id=article.pk,
            project=project,
            user=user,
            before=before,
            after={"title": article.title, "body": article.body},
        )
    return article


def _slug(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-") or "article"


def _articles(project: Project) -> list[KbArticle]:
    return list(KbArticle.objects.filter(project=project).order_by("key"))


def kb_export_jsonl(*, project: Project) -> str:
    experiences = {
        e.pk: e
        for e in Experience.objects.filter(
            project=project, status=Experience.Status.PROMOTED
        ).defer("embedding")
    }
    lines = []
    for article in _articles(project):
        items = [experiences[i] for i in sorted(article.experience_ids) if i in experiences]
        lines.append(
            json.dumps(
                {
                    "key": article.key,
                    "title": article.title,
                    "body": article.body,
                    "generated_by": article.generated_by,
                    "is_edited": article.is_edited,
                    "experiences": [
                        {
                            "id": e.pk,
                            "advice": e.advice,
                            "polarity": e.polarity,
                            "tools": e.tools,
                            "environment": e.environment,
                            "task_type": e.task_type,
                            "support_count": e.support_count,
                            "upvotes": e.upvotes,
                            "downvotes": e.downvotes,
                        }
                        for e in items
                    ],
                },
                sort_keys=True,
                ensure_ascii=False,
            )
        )
    return "".join(line + "\n" for line in lines)


def kb_export_markdown_zip(*, project: Project) -> bytes:
    buffer = io.BytesIO()
    articles = _articles(project)
    index = [f"# Knowledge base: {project.name}", ""]
    index += [f"- [{a.title}]({_slug(a.key)}.md)" for a in articles]
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in [("README.md", "\n".join(index) + "\n")] + [
            (f"{_slug(a.key)}.md", a.body) for a in articles
        ]:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
    return buffer.getvalue()


def kb_export_file(*, project: Project, format: str) -> tuple[bytes, str, str]:
    """(content, content type, file name) of an export: "jsonl", or Markdown articles zipped."""
    name = re.sub(r"[^a-z0-9-]+", "-", project.name.lower()).strip("-") or "project"
    if format == "jsonl":
        return kb_export_jsonl(project=project).encode(), "application/x-ndjson", f"{name}-kb.jsonl"
    return kb_export_markdown_zip(project=project), "application/zip", f"{name}-kb.zip"
