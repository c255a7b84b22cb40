"""An admin curates in a real browser: clears the merge queue (a chosen wording, a combined one,
an undo), approves a selection in the library, edits a row inline, and publishes the knowledge
base. Screenshots go to test-artifacts/curation-*.png."""

import pytest
from playwright.sync_api import expect

from accounts.models import AuditEvent
from experiences.models import Experience, ExperienceMerge, KbArticle, MergeProposal
from experiences.services.kb_articles import kb_rebuild

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_admin_clears_the_merge_queue_and_undoes_a_merge(
    page, live_server, login, admin_user, project, make_experience, make_proposal, make_trace,
    shot, console_errors,
):  # fmt: skip
    trace = make_trace(project)
    first = make_experience(
        project,
        cosine=1.0,
        trace=trace,
        support_count=2,
        upvotes=1,
        advice="When the web container keeps restarting, read docker_logs first.",
    )
    second = make_experience(
        project,
        cosine=0.93,
        tools=["docker_logs", "grep"],
        success_count=1,
        advice="When a container keeps restarting, read docker_logs --tail 200 and grep for OOM "
        "first.",
    )
    third = make_experience(
        project,
        cosine=0.88,
        polarity="failure",
        advice="Do not restart the container before reading its logs.",
    )
    fourth = make_experience(
        project,
        cosine=0.87,
        polarity="failure",
        environment=["k8s"],
        advice="Never restart the pod before you read its logs with kubectl logs --previous.",
    )
    wording = make_proposal(first, second, similarity=0.931)
    combined = make_proposal(third, fourth, similarity=0.874)
    errors = console_errors(page)
    login(page.context, admin_user)

    page.goto(live_server.url + "/merges/")
    expect(page.get_by_role("heading", name="Merge queue")).to_be_visible()
    card = page.locator(f"#proposal-{wording.pk}")
    expect(card.locator("ins", has_text="--tail 200")).to_be_visible()
    expect(card.locator("del", has_text="the web")).to_be_visible()
    shot(page, "curation-01-merge-queue", full_page=True)

    card.get_by_label(f"#{second.pk}'s").check()  # the second wording, longer and more specific
    card.get_by_role("button", name=f"Merge #{second.pk} into #{first.pk}").click()
    expect(card).to_contain_text(f"Merged #{second.pk} into #{first.pk}.")
    expect(page.locator("#history tr.merge-row")).to_have_count(1)  # the history reloaded itself
    first.refresh_from_db()
    assert first.advice == second.advice and first.support_count == 3

    other = page.locator(f"#proposal-{combined.pk}")
    text = "Never restart a container or pod before reading its logs (kubectl logs --previous)."
    other.get_by_role("textbox", name="Your wording").fill(text)
    expect(other.get_by_label("my own wording, below")).to_be_checked()  # typing chose it
    other.get_by_role("button", name=f"Merge #{fourth.pk} into #{third.pk}").click()
    expect(other).to_contain_text(f"Merged #{fourth.pk} into #{third.pk}.")
    expect(page.locator("#history tr.merge-row")).to_have_count(2)
    shot(page, "curation-02-merge-queue-decided", full_page=True)
    third.refresh_from_db()
    assert third.advice == text

    merge = ExperienceMerge.objects.get(survivor=first)
    row = page.locator(f"#merge-{merge.pk}")
    row.get_by_role("button", name="Undo").click()
    expect(row).to_contain_text("undone")
    shot(page, "curation-03-merge-undone", full_page=True)
    second.refresh_from_db()
    first.refresh_from_db()
    assert second.merged_into is None and first.support_count == 2

    page.goto(live_server.url + "/merges/")
    # Undoing puts the pair back in the queue, to be decided again.
    expect(page.locator(f"#proposal-{wording.pk}")).to_be_visible()
    assert list(MergeProposal.objects.filter(status="open")) == [wording]
    assert AuditEvent.objects.filter(action__startswith="experience.merge").count() == 3
    page.goto(f"{live_server.url}/experiences/{first.pk}/")
    expect(page.get_by_role("heading", name="Provenance")).to_be_visible()
    shot(page, "curation-04-experience-detail", full_page=True)
    assert errors == []


def test_an_admin_approves_a_selection_and_edits_a_row_inline(
    page, live_server, login, admin_user, project, make_experience, shot, console_errors,
):  # fmt: skip
    made = [
        make_experience(
            project,
            advice="When you rotate a TLS certificate, first check its expiry with openssl.",
            tools=["openssl"],
            environment=["bare-metal"],
            support_count=4,
            success_count=4,
        ),
        make_experience(
            project,
            advice="When a migration locks a table, first look at pg_stat_activity.",
            tools=["psql"],
            task_type="analysis",
            support_count=2,
            success_count=1,
            failure_count=1,
            last_recalled_at="2026-11-29T10:00Z",
        ),
        make_experience(
            project,
            advice="Do not run kubectl delete pod in a loop: read the events first.",
            polarity="failure",
            tools=["kubectl"],
            environment=["k8s"],
            scope_environments=["k8s"],
        ),
        make_experience(
            project,
            advice="When disk is full, find the biggest directories with du -sh first.",
            tools=["shell"],
            source="llm",
            upvotes=3,
            downvotes=1,
        ),
        make_experience(project, advice="Rejected: always restart first.", status="rejected"),
    ]
    errors = console_errors(page)
    login(page.context, admin_user)

    page.goto(live_server.url + "/experiences/")
    expect(page.get_by_role("heading", name="Experiences")).to_be_visible()
    expect(page.get_by_text("None selected")).to_be_visible()
    expect(page.get_by_role("button", name="Approve selected")).to_be_disabled()
    shot(page, "curation-05-library", full_page=True)

    for experience in made[:3]:
        page.get_by_label(f"Select experience {experience.pk}", exact=True).check()
    expect(page.get_by_text("3 selected")).to_be_visible()
    shot(page, "curation-06-library-selected", full_page=True)
    page.get_by_role("button", name="Approve selected").click()
    expect(page.get_by_text("3 experiences approved.")).to_be_visible()
    statuses = dict(Experience.objects.values_list("pk", "status"))
    assert [statuses[e.pk] for e in made] == [
        "approved",
        "approved",
        "approved",
        "candidate",
        "rejected",
    ]
    shot(page, "curation-07-library-approved", full_page=True)

    page.get_by_label("Select all experiences on this page").check()
    expect(page.get_by_text("5 selected")).to_be_visible()
    page.get_by_label("Select all experiences on this page").uncheck()

    row = page.locator(f"#experience-{made[3].pk}")
    row.get_by_role("button", name=f"Edit advice and scene of experience {made[3].pk}").click()
    editing = page.locator(f"#experience-{made[3].pk}.editing")
    editing.get_by_label("Advice").fill("   ")  # passes the browser's check, not the server's
    editing.get_by_role("button", name="Save as version 2").click()
    expect(editing.locator(".errorlist")).to_contain_text("This field is required.")
    expect(editing.get_by_label("Advice")).to_be_focused()  # on the field to correct
    editing.get_by_label("Advice").fill(
        "When the disk is full, run du -sh /var/* | sort -h before deleting anything."
    )
    editing.get_by_label("Tools").fill("shell, du")
    shot(page, "curation-08-library-inline-edit", full_page=True)
    editing.get_by_role("button", name="Save as version 2").click()
    expect(row).not_to_have_class("editing")
    expect(row).to_contain_text("sort -h before deleting")
    expect(row.locator("code.tool")).to_have_count(2)
    edited = Experience.objects.get(pk=made[3].pk)
    assert (edited.version, edited.source, edited.tools) == (2, "human", ["shell", "du"])

    row.get_by_role("button", name="Approve").click()
    expect(row.locator(".badge.st-approved")).to_be_visible()
    row.get_by_role("button", name="Promote").click()
    expect(row.locator(".badge.st-promoted")).to_be_visible()
    # Chromium logs every 4xx response; the 422 of the refused edit above is the expected one
    assert [e for e in errors if "status of 422" not in e] == []


def test_a_reviewer_votes_and_an_admin_publishes_the_knowledge_base(
    browser, live_server, login, admin_user, reviewer, project, make_experience, shot,
    celery_worker,  # the rebuild runs in the worker; the page follows it and reloads when done
):  # fmt: skip
    make_experience(
        project,
        status="promoted",
        tools=["docker_logs"],
        support_count=3,
        advice="When a container restarts, read docker_logs --tail 200 first.",
    )
    make_experience(
        project,
        status="promoted",
        tools=["docker_logs"],
        polarity="failure",
        advice="Do not tail docker_logs without --since on a chatty container.",
    )
    make_experience(
        project,
        status="promoted",
        tools=[],
        task_type="query",
        advice="When the user's question is vague, ask for the exact error message first.",
    )
    voted = make_experience(project, advice="When a pod is pending, describe it before scaling.")
    viewport = {"width": 1440, "height": 900}
    rita_context = browser.new_context(viewport=viewport)
    ada_context = browser.new_context(viewport=viewport, accept_downloads=True)
    login(rita_context, reviewer)
    login(ada_context, admin_user)
    rita, ada = rita_context.new_page(), ada_context.new_page()

    rita.goto(live_server.url + "/experiences/")
    row = rita.locator(f"#experience-{voted.pk}")
    row.get_by_role("button", name="Helpful (0 up votes)").click()
    expect(row.locator("button.vote-up")).to_have_attribute("aria-pressed", "true")
    expect(rita.locator("#bulk")).to_have_count(0)
    shot(rita, "curation-09-library-reviewer")
    voted.refresh_from_db()
    assert voted.upvotes == 1

    ada.goto(live_server.url + "/kb/")
    expect(ada.get_by_text("3 promoted experiences are waiting")).to_be_visible()
    ada.get_by_role("button", name="Rebuild from promoted experiences").click()
    # The worker rebuilds and the page reloads when it is done: seconds on a loaded machine.
    expect(ada.get_by_text("Knowledge base rebuilt: 2 articles.")).to_be_visible(timeout=20_000)
    article = KbArticle.objects.get(key="tool:docker_logs")
    card = ada.locator(f"#article-{article.pk}")
    card.get_by_role("button", name="Edit").click()
    ada.get_by_label("Title").fill("Reading container logs")
    ada.get_by_role("button", name="Save article").click()
    expect(card).to_contain_text("edited by ada")
    expect(card.locator(".kb-body li")).to_have_count(2)
    ada.evaluate("window.scrollTo(0, 0)")
    shot(ada, "curation-10-kb", full_page=True)
    with ada.expect_download() as download:
        ada.get_by_role("button", name="Download Markdown (zip)").click()
    assert download.value.suggested_filename == "acme-kb.zip"
    with ada.expect_download() as download:
        ada.get_by_role("button", name="Download JSONL").click()
    assert download.value.suggested_filename == "acme-kb.jsonl"
    rita_context.close()
    ada_context.close()


def test_a_finished_rebuild_does_not_reload_over_an_article_being_edited(
    page, live_server, login, admin_user, project, make_experience, run_queued_rebuild, shot,
):  # fmt: skip
    make_experience(
        project, status="promoted", tools=["docker_logs"], advice="Read docker_logs first."
    )
    kb_rebuild(project=project)  # an article to edit
    article = KbArticle.objects.get()
    login(page.context, admin_user)

    page.goto(live_server.url + "/kb/")
    page.get_by_role("button", name="Rebuild from promoted experiences").click()
    expect(page.get_by_text("waiting for a worker")).to_be_visible()  # the page follows it
    page.locator(f"#article-{article.pk}").get_by_role("button", name="Edit").click()
    page.get_by_label("Title").fill("A title not saved yet")
    run_queued_rebuild(project)  # the worker's side of the queued task

    expect(page.get_by_text("Knowledge base rebuilt: 1 article.")).to_be_visible()
    expect(page.get_by_role("link", name="Reload to see the new articles")).to_be_visible()
    expect(page.get_by_label("Title")).to_have_value("A title not saved yet")
    shot(page, "curation-13-kb-rebuilt-while-editing")


def test_empty_pages_say_where_things_come_from(page, live_server, login, admin_user, shot):
    login(page.context, admin_user)

    page.goto(live_server.url + "/experiences/")
    expect(page.get_by_role("heading", name="No experiences yet")).to_be_visible()
    shot(page, "curation-11-empty-library")
    page.goto(live_server.url + "/merges/")
    expect(page.get_by_role("heading", name="Nothing to decide")).to_be_visible()
    page.goto(live_server.url + "/kb/")
    expect(page.get_by_role("heading", name="No articles yet")).to_be_visible()
    shot(page, "curation-12-empty-kb")
