"""The knowledge base page: articles, their edit, the rebuild and its status, the export."""

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.dashboard import project_page
from accounts.selectors.access import ProjectAccess
from core.http import AuthedRequest
from core.pages import render_page_or_partial, vary_on_htmx, wants_partial
from experiences import selectors
from experiences.forms import KbArticleForm
from experiences.services import kb_articles, kb_rebuilds
from experiences.services.kb_export import kb_export_file
from experiences.views._shared import _forbidden, object_of_user

KB = "experiences/kb.html"


@require_GET
@project_page()
def kb_page(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    overview = selectors.kb_overview(project=access.project)
    context = {
        "kb": overview,
        "is_admin": access.is_admin,
        "llm_configured": bool(settings.OPENAI_BASE_URL),
        **_rebuild_context(access),
    }
    return render(request, KB, context)


def _rebuild_context(access: ProjectAccess) -> dict[str, Any]:
    try:
        return {"rebuild": kb_rebuilds.kb_rebuild_status(project=access.project)}
    except kb_rebuilds.KbRebuildUnavailable as failure:  # Redis down: the page still works
        return {"rebuild": None, "rebuild_unavailable": failure.detail}


@require_POST
@project_page(admin=True)
def kb_rebuild(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """Queue a rebuild in the worker (or find the one already queued); the page follows it."""
    try:
        rebuild, queued = kb_rebuilds.kb_rebuild_request(project=access.project, user=request.user)
    except kb_rebuilds.KbRebuildUnavailable as failure:
        messages.error(
            request, f"{failure.detail}; the articles stay as they are. Try again later."
        )
        return redirect("experiences:kb")
    if not queued:
        messages.info(
            request, f"A rebuild requested by {rebuild.requested_by} is already {rebuild.state}."
        )
    return redirect("experiences:kb")


@require_GET
@project_page()
def kb_rebuild_status(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The rebuild's progress, polled by the KB page while it is queued or running."""
    if not wants_partial(request):
        return vary_on_htmx(redirect("experiences:kb"))
    context = {"is_admin": access.is_admin, **_rebuild_context(access)}
    response = vary_on_htmx(render(request, f"{KB}#rebuild", context))
    if context["rebuild"] is not None and context["rebuild"].state == kb_rebuilds.DONE:
        # Only a page that was polling asks. experiences.js reloads it to show the new articles,
        # unless an article is being edited there (a reload would lose the unsaved text).
        response.headers["HX-Trigger-After-Swap"] = "kb-rebuilt"
    return response


@require_http_methods(["GET", "POST"])
@login_required
def kb_article_edit(request: AuthedRequest, article_id: int) -> HttpResponse:
    article, access = object_of_user(
        request, selectors.kb_article_for_user, "article", article_id=article_id
    )
    if not access.is_admin:
        return _forbidden(request)
    data = request.POST if request.method == "POST" else None
    form = KbArticleForm(data, initial={"title": article.title, "body": article.body})
    if request.method == "POST" and form.is_valid():
        article = kb_articles.kb_article_edit(
            project=article.project, article_id=article.pk, user=request.user, **form.cleaned_data
        )
        if not wants_partial(request):
            return redirect(reverse("experiences:kb") + f"#article-{article.pk}")
        return render(request, f"{KB}#article", {"article": article, "is_admin": True})
    status = 422 if form.is_bound else 200
    context = {"article": article, "form": form}
    return render_page_or_partial(
        request, "experiences/kb_edit.html", "article_form", context, status=status
    )


@require_GET
@project_page()
def kb_export(request: AuthedRequest, access: ProjectAccess) -> HttpResponse:
    """The same files as GET /api/v1/kb/export, for people: Markdown (zip) or JSONL."""
    format = "jsonl" if request.GET.get("format") == "jsonl" else "markdown"
    content, content_type, name = kb_export_file(project=access.project, format=format)
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
