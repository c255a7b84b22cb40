"""The knowledge base's articles: promoted experiences grouped into best-practice articles.

One article per primary tool (the first tool the experience used) or, without tools, per task
type. Bodies come from a template, or from the configured LLM (falling back to the template).
An article a person edited is kept as edited.
"""

from collections import defaultdict
from collections.abc import Callable

from django.contrib.auth.models import User
from django.db import transaction

from accounts.models import Project
from accounts.services.audit import audit_event
from core.errors import InvalidInput, NotFound
from experiences.models import Experience, KbArticle
from experiences.services.llm_text import complete_text

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
