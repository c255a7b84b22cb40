"""The knowledge base page: articles by tool and task type, rebuild, edit, export downloads."""

import io
import zipfile

import pytest

from accounts.models import AuditEvent
from experiences.models import KbArticle
from experiences.services.kb_articles import kb_rebuild
from experiences.services.kb_export import kb_export_jsonl, kb_export_markdown_zip
from tests.support.pages import HTMX, count_queries


@pytest.fixture
def promoted(project, make_experience):
    return [
        make_experience(
            project, status="promoted", tools=["docker_logs"], advice="Read docker_logs --tail 200."
        ),
        make_experience(
            project, status="promoted", tools=["kubectl"], advice="Describe the pod first."
        ),
        make_experience(
            project,
            status="promoted",
            tools=[],
            task_type="query",
            advice="Ask for the exact error.",
        ),
    ]


def test_the_empty_knowledge_base_says_how_articles_are_made(client_for, admin_user):
    body = client_for(admin_user).get("/kb/").content.decode()

    assert "No articles yet" in body and "promote the best, then rebuild" in body


def test_promoted_experiences_waiting_for_a_rebuild_are_counted(client_for, admin_user, promoted):
    body = client_for(admin_user).get("/kb/").content.decode()

    assert "3 promoted experiences are waiting" in body


def test_an_admin_rebuilds_and_sees_articles_by_tool_and_task_type(
    client_for, admin_user, project, promoted, run_queued_rebuild
):
    client = client_for(admin_user)

    response = client.post("/kb/rebuild/", follow=True)
    assert response.redirect_chain == [("/kb/", 302)]
    assert "Rebuild queued by ada" in response.content.decode()
    assert run_queued_rebuild(project) == "rebuilt"
    body = client.get("/kb/").content.decode()

    assert "Knowledge base rebuilt: 3 articles." in body
    assert (
        body.index("By tool")
        < body.index("Best practices: docker_logs")
        < body.index("By task type")
    )
    assert body.index("By task type") < body.index("Best practices for query tasks")
    assert "Read docker_logs --tail 200." in body
    assert f'href="/experiences/{promoted[0].pk}/">#{promoted[0].pk}</a>' in body
    assert AuditEvent.objects.filter(action="kb.rebuild", actor_user=admin_user).exists()


def test_reviewers_read_but_cannot_rebuild_or_edit(client_for, reviewer, project, promoted):
    kb_rebuild(project=project)
    article = KbArticle.objects.first()
    client = client_for(reviewer)

    body = client.get("/kb/").content.decode()
    assert "Best practices" in body and "kb-rebuild" not in body and "/edit/" not in body
    assert client.post("/kb/rebuild/").status_code == 403
    assert client.get(f"/kb/articles/{article.pk}/edit/", headers=HTMX).status_code == 403
    assert (
        client.post(f"/kb/articles/{article.pk}/edit/", {"title": "x", "body": "y"}).status_code
        == 403
    )


def test_the_edit_partial_and_the_edit_page(client_for, admin_user, project, promoted):
    kb_rebuild(project=project)
    article = KbArticle.objects.get(key="tool:kubectl")
    client = client_for(admin_user)

    partial = client.get(f"/kb/articles/{article.pk}/edit/", headers=HTMX)
    page = client.get(f"/kb/articles/{article.pk}/edit/")

    assert partial.content.lstrip().startswith(
        f'<article class="kb-article editing" id="article-{article.pk}">'.encode()
    )
    assert b"<html" not in partial.content
    assert b"<html" in page.content and b"Edit an article" in page.content


def test_an_edited_article_is_saved_and_survives_a_rebuild(
    client_for, admin_user, project, promoted, run_queued_rebuild
):
    kb_rebuild(project=project)
    article = KbArticle.objects.get(key="tool:kubectl")
    client = client_for(admin_user)

    response = client.post(
        f"/kb/articles/{article.pk}/edit/",
        {"title": "Kubernetes pods", "body": "# Pods\n\nDescribe first."},
        headers=HTMX,
    )
    client.post("/kb/rebuild/")
    assert run_queued_rebuild(project) == "rebuilt"

    assert response.status_code == 200
    assert b"Kubernetes pods" in response.content and b"edited by ada" in response.content
    article.refresh_from_db()
    assert (article.title, article.is_edited) == ("Kubernetes pods", True)
    assert AuditEvent.objects.filter(action="kb.edit").exists()


def test_an_article_needs_a_title_and_a_body(client_for, admin_user, project, promoted):
    kb_rebuild(project=project)
    article = KbArticle.objects.first()

    response = client_for(admin_user).post(
        f"/kb/articles/{article.pk}/edit/", {"title": "", "body": "x"}, headers=HTMX
    )

    assert response.status_code == 422 and b"This field is required" in response.content


def test_an_edit_without_htmx_goes_back_to_the_article(client_for, admin_user, project, promoted):
    kb_rebuild(project=project)
    article = KbArticle.objects.first()

    response = client_for(admin_user).post(
        f"/kb/articles/{article.pk}/edit/", {"title": "T", "body": "B"}
    )

    assert response.url == f"/kb/#article-{article.pk}"


def test_another_projects_article_is_not_found(client_for, outsider, project, promoted):
    kb_rebuild(project=project)
    article = KbArticle.objects.first()

    assert client_for(outsider).get(f"/kb/articles/{article.pk}/edit/").status_code == 404
    assert "Best practices" not in client_for(outsider).get("/kb/").content.decode()


@pytest.mark.parametrize("user", ["admin_user", "reviewer"])
def test_exports_download_the_same_files_as_the_api(client_for, project, promoted, request, user):
    kb_rebuild(project=project)
    client = client_for(request.getfixturevalue(user))

    markdown = client.get("/kb/export/?format=markdown")
    jsonl = client.get("/kb/export/?format=jsonl")

    assert markdown["Content-Type"] == "application/zip"
    assert markdown["Content-Disposition"] == 'attachment; filename="acme-kb.zip"'
    assert markdown.content == kb_export_markdown_zip(project=project)
    assert "tool-docker-logs.md" in zipfile.ZipFile(io.BytesIO(markdown.content)).namelist()
    assert jsonl["Content-Disposition"] == 'attachment; filename="acme-kb.jsonl"'
    assert jsonl.content.decode() == kb_export_jsonl(project=project)
    assert len(jsonl.content.splitlines()) == 3


def test_the_page_has_download_buttons(client_for, reviewer):
    body = client_for(reviewer).get("/kb/").content.decode()

    assert (
        'href="/kb/export/?format=markdown"' in body and 'href="/kb/export/?format=jsonl"' in body
    )


def test_an_anonymous_download_is_sent_to_log_in(client, db):
    assert client.get("/kb/export/?format=jsonl").url.startswith("/accounts/login/")


def test_the_page_reads_a_constant_number_of_queries(
    client_for, admin_user, project, make_experience
):
    client = client_for(admin_user)
    make_experience(project, status="promoted", tools=["a"])
    kb_rebuild(project=project)
    few = count_queries(client, "/kb/")
    for tool in "bcdefg":
        make_experience(project, status="promoted", tools=[tool])
    kb_rebuild(project=project)
    KbArticle.objects.filter(key="tool:b").update(is_edited=True, edited_by=admin_user)
    many = count_queries(client, "/kb/")

    assert few == many, (few, many)


def test_article_text_is_escaped(client_for, reviewer, project):
    KbArticle.objects.create(
        project=project,
        key="tool:x",
        title="<script>t()</script>",
        body="<img src=x>",
        generated_by="llm",
    )

    body = client_for(reviewer).get("/kb/").content.decode()

    assert "<script>t()" not in body and "<img src=x>" not in body


def test_article_markdown_is_shown_as_html_built_from_escaped_text():
    from experiences.templatetags.curation import markdown_subset_html

    html = markdown_subset_html(
        "# Pods\n\n_2 experiences._\n\n## What works\n\n"
        "- Run `kubectl describe` **first** <script>x()</script>\n"
        "- [a link](javascript:alert(1))\nAfter the list.",
        title="Pods",
    )

    assert html.splitlines() == [
        "<p><em>2 experiences.</em></p>",
        "<h5>What works</h5>",
        "<ul>",
        "<li>Run <code>kubectl describe</code> <strong>first</strong> "
        "&lt;script&gt;x()&lt;/script&gt;</li>",
        "<li>[a link](javascript:alert(1))</li>",
        "</ul>",
        "<p>After the list.</p>",
    ]
