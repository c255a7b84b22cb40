"""Exports of the knowledge base: JSON lines (articles with their experiences) and Markdown
articles zipped. Exports are deterministic: the same data gives byte-identical files (sorted, no
timestamps), so every export can be reproduced."""

import io
import json
import re
import zipfile

from accounts.models import Project
from experiences.models import Experience, KbArticle

ZIP_TIME = (1980, 1, 1, 0, 0, 0)


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
