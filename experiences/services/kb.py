"""The knowledge base: promoted experiences as best-practice articles, and their export.

One article per primary tool (the first tool the experience used) or, without tools, per task
type. Bodies come from a template, or from the configured LLM (falling back to the template).
An article a person edited is kept as edited. Exports are deterministic: the same data gives
byte-identical files (sorted, no timestamps), so every export can be reproduced.
"""

import io
import json
import logging
import re
import zipfile
from collections import defaultdict

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from experiences.models import Experience, KbArticle
from experiences.services.llm_text import complete_text
from traces.errors import InvalidInput, NotFound
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


def kb_rebuild(*, project: Project, user: AbstractBaseUser | None = None) -> list[KbArticle]:
    """Regenerate the articles from the currently promoted experiences."""
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
    for key, experiences in groups.items():
        existing = KbArticle.objects.filter(project=project, key=key, is_edited=True).exists()
        if not existing:
            text = _llm_body(key, experiences)
            bodies[key] = (text, "llm") if text else (template_body(key, experiences), "template")
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


def kb_article_edit(
    *, project: Project, article_id: int, title: str, body: str, user: AbstractBaseUser
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
