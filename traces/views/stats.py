from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.dashboard import project_page
from accounts.selectors.access import ProjectAccess
from core.http import AuthedRequest
from traces.selectors.stats import project_stats


@require_GET
@project_page()
def stats(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The figures as tables (readable without JavaScript); static/js/stats.js draws charts."""
    stats = project_stats(project=access.project)
    names = [stats["source_names"][source] for source in stats["sources"]]
    context = {"stats": stats, "label_rows": _label_rows(stats), "source_names": names}
    return render(request, "traces/stats.html", context)


def _label_rows(stats: dict) -> list[tuple[str, list[int], int]]:
    """(label, count per source in stats["sources"] order, total): the rows of one table."""
    by_source = stats["by_source"]
    rows = []
    for label in stats["labels"]:
        counts = [by_source.get(source, {}).get(label, 0) for source in stats["sources"]]
        rows.append((label, counts, sum(counts)))
    return rows
