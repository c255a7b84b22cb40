"""The knowledge-base page's reads: its articles by tool and by task type, one article."""

from dataclasses import dataclass

from accounts.models import Project
from experiences.models import Experience, KbArticle


@dataclass(frozen=True)
class KbOverview:
    by_tool: list[KbArticle]
    by_task_type: list[KbArticle]
    promoted_count: int

    @property
    def article_count(self) -> int:
        return len(self.by_tool) + len(self.by_task_type)


def kb_overview(*, project: Project) -> KbOverview:
    articles = list(
        KbArticle.objects.filter(project=project).select_related("edited_by").order_by("key")
    )
    promoted = Experience.objects.filter(
        project=project, status=Experience.Status.PROMOTED, merged_into__isnull=True
    )
    return KbOverview(
        by_tool=[a for a in articles if a.key.startswith("tool:")],
        by_task_type=[a for a in articles if not a.key.startswith("tool:")],
        promoted_count=promoted.count(),
    )


def kb_article_for_user(*, projects: list[Project], article_id: int) -> KbArticle | None:
    return (
        KbArticle.objects.filter(project__in=projects, pk=article_id)
        .select_related("project", "edited_by")
        .first()
    )
