"""The KB rebuild runs in the worker: queued from the page, followed by polling, one at a time."""

from dataclasses import replace
from datetime import timedelta

import psycopg
import pytest
from django.utils import timezone

from accounts.models import AuditEvent
from experiences.models import KbArticle
from experiences.services import kb_rebuilds
from experiences.services.kb_articles import kb_rebuild
from experiences.services.kb_export import kb_export_jsonl, kb_export_markdown_zip
from experiences.tasks import rebuild_kb
from tests.support.experiences import forget_rebuilds, take_queued_tasks
from tests.support.pages import HTMX
from tests.support.waiting import wait_until
from tests.support.worker import WorkerProcess, worker_database_url

STATUS = "/kb/rebuild/status/"


@pytest.fixture
def promoted(project, make_experience):
    return [
        make_experience(project, status="promoted", tools=["docker_logs"], advice="Read logs."),
        make_experience(project, status="promoted", tools=["kubectl"], advice="Describe pods."),
        make_experience(project, status="promoted", tools=[], task_type="query", advice="Ask."),
    ]


@pytest.fixture(autouse=True)
def _nothing_queued_before() -> None:
    """The tests read the broker's queue: tasks earlier tests of this process published (a
    review's re-derivations, an export's completions) are taken out first."""
    take_queued_tasks()


@pytest.fixture
def queued(project, admin_user):
    """A rebuild queued by the admin (its task taken out of the broker: no worker here)."""
    rebuild, _ = kb_rebuilds.kb_rebuild_request(project=project, user=admin_user)
    take_queued_tasks()
    yield rebuild
    forget_rebuilds([project])


def put_status(project, rebuild: kb_rebuilds.KbRebuild) -> None:
    kb_rebuilds._status_save(project.pk, rebuild)


def test_a_rebuild_is_queued_and_the_page_polls_its_status(client_for, admin_user, project):
    response = client_for(admin_user).post("/kb/rebuild/", follow=True)

    body = response.content.decode()
    assert response.redirect_chain == [("/kb/", 302)]
    assert "Rebuild queued by ada" in body and "waiting for a worker" in body
    assert f'hx-get="{STATUS}" hx-trigger="every 1s"' in body
    assert 'id="kb-rebuild"' not in body  # no second button while one is queued
    ((name, args),) = take_queued_tasks()
    rebuild = kb_rebuilds.kb_rebuild_status(project=project)
    assert (name, args) == ("experiences.rebuild_kb", [project.pk, rebuild.id, admin_user.pk])
    forget_rebuilds([project])


def test_a_second_click_shows_the_rebuild_already_queued(client_for, admin_user, project, queued):
    response = client_for(admin_user).post("/kb/rebuild/", follow=True)

    assert "A rebuild requested by ada is already queued." in response.content.decode()
    assert take_queued_tasks() == []
    assert kb_rebuilds.kb_rebuild_status(project=project).id == queued.id


def test_the_status_partial_shows_the_progress(client_for, reviewer, project, queued):
    put_status(project, replace(queued, state="running", done=1, total=3))

    response = client_for(reviewer).get(STATUS, headers=HTMX)

    body = response.content.decode()
    assert body.lstrip().startswith('<div id="rebuild" class="kb-actions" hx-get=')
    assert "<html" not in body and "HX-Request" in response["Vary"]
    assert "Rebuilding: 1 of 3 articles written." in body
    assert '<progress value="1" max="3"' in body
    assert "HX-Trigger-After-Swap" not in response.headers


def test_a_finished_rebuild_tells_the_polling_page(client_for, admin_user, project, queued):
    put_status(project, replace(queued, state="done", done=3, total=3, articles=3))

    response = client_for(admin_user).get(STATUS, headers=HTMX)

    # experiences.js reloads the page on this event, unless an article is being edited there
    assert response["HX-Trigger-After-Swap"] == "kb-rebuilt"
    assert "Knowledge base rebuilt: 3 articles." in response.content.decode()
    assert "hx-trigger" not in response.content.decode()  # polling stops


def test_the_status_without_htmx_is_the_page(client_for, admin_user, queued):
    assert client_for(admin_user).get(STATUS).url == "/kb/"


def test_the_status_needs_a_login_and_a_project(client, client_for, outsider, queued):
    signed_out = client.get(STATUS, headers=HTMX)  # htmx: a 401 the page acts on
    assert signed_out.status_code == 401
    assert signed_out.json()["login_url"].startswith("/accounts/login/")
    body = client_for(outsider).get(STATUS, headers=HTMX).content.decode()
    assert "Rebuild queued" not in body  # the outsider's own project has no rebuild


def test_a_failed_rebuild_says_why_and_an_admin_retries_it(
    client_for, admin_user, reviewer, project, queued
):
    failed = replace(queued, state="failed", error="OperationalError: the database went away")
    put_status(project, failed)

    admin_page = client_for(admin_user).get("/kb/").content.decode()
    reviewer_page = client_for(reviewer).get("/kb/").content.decode()
    retried = client_for(admin_user).post("/kb/rebuild/", follow=True).content.decode()

    assert "The rebuild failed:</strong> OperationalError: the database went away." in admin_page
    assert "Retry the rebuild" in admin_page and "Retry" not in reviewer_page
    assert "The rebuild failed" in reviewer_page
    assert "Rebuild queued by ada" in retried
    assert kb_rebuilds.kb_rebuild_status(project=project).id != queued.id


@pytest.mark.parametrize("state", ["queued", "running"])
def test_a_rebuild_without_news_past_the_time_limit_counts_as_failed(
    client_for, admin_user, project, queued, settings, state
):
    long_ago = timezone.now() - timedelta(seconds=settings.HINDSIGHT_KB_REBUILD_TIME_LIMIT + 61)
    put_status(project, replace(queued, state=state, queued_at=long_ago, started_at=long_ago))

    body = client_for(admin_user).get("/kb/").content.decode()

    reason = "no worker started it" if state == "queued" else "its worker stopped"
    assert f"The rebuild failed:</strong> no result after 31 minutes: {reason}." in body
    assert "Retry the rebuild" in body
    assert rebuild_kb(project.pk, queued.id, None) == "superseded or finished"


def test_reviewers_cannot_queue_a_rebuild(client_for, reviewer, project):
    assert client_for(reviewer).post("/kb/rebuild/").status_code == 403
    assert kb_rebuilds.kb_rebuild_status(project=project) is None


def test_with_redis_down_the_page_says_so_instead_of_failing(
    client_for, admin_user, project, promoted, redis_control
):
    kb_rebuild(project=project)
    client = client_for(admin_user)
    redis_control.stop()

    page = client.get("/kb/")
    posted = client.post("/kb/rebuild/", follow=True)

    assert page.status_code == 200 and "Best practices: docker_logs" in page.content.decode()
    assert "Redis is unreachable: the rebuild status is unknown." in page.content.decode()
    assert "Redis is unreachable: the rebuild was not queued; the articles stay as they are." in (
        posted.content.decode()
    )


# ---------------------------------------------------------------------------- the task


def test_the_task_writes_the_articles_and_records_its_progress(
    project, admin_user, promoted, queued, monkeypatch
):
    seen: list[tuple[str, int, int]] = []
    save = kb_rebuilds._status_save

    def recording_save(project_id, rebuild):
        seen.append((rebuild.state, rebuild.done, rebuild.total))
        save(project_id, rebuild)

    monkeypatch.setattr(kb_rebuilds, "_status_save", recording_save)

    assert rebuild_kb(project.pk, queued.id, admin_user.pk) == "rebuilt"

    assert seen == [
        ("running", 0, 0),
        ("running", 0, 3),
        ("running", 1, 3),
        ("running", 2, 3),
        ("running", 3, 3),
        ("done", 3, 3),
    ]
    done = kb_rebuilds.kb_rebuild_status(project=project)
    assert (done.articles, done.requested_by) == (3, "ada") and done.finished_at is not None
    assert KbArticle.objects.filter(project=project).count() == 3
    assert AuditEvent.objects.filter(action="kb.rebuild", actor_user=admin_user).exists()
    assert rebuild_kb(project.pk, queued.id, admin_user.pk) == "superseded or finished"


def test_a_rebuild_that_raises_is_recorded_as_failed(project, promoted, queued, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(kb_rebuilds, "kb_rebuild", broken)

    with pytest.raises(RuntimeError):
        rebuild_kb(project.pk, queued.id, None)

    failed = kb_rebuilds.kb_rebuild_status(project=project)
    assert (failed.state, failed.error) == ("failed", "RuntimeError: the disk is full")


def test_a_second_delivery_of_a_running_rebuild_leaves_it_alone(project, promoted, queued):
    put_status(project, replace(queued, state="running", started_at=timezone.now()))
    # the first delivery's worker holds the project's run lock on its own connection
    with psycopg.connect(worker_database_url(), autocommit=True) as other:
        other.execute(
            "SELECT pg_advisory_lock(hashtextextended(%s, 0))", [f"kb-rebuild-run:{project.pk}"]
        )

        assert rebuild_kb(project.pk, queued.id, None) == "already running"

    assert kb_rebuilds.kb_rebuild_status(project=project).state == "running"
    assert not KbArticle.objects.exists()


def test_rebuilds_in_the_worker_give_byte_identical_exports(project, admin_user, promoted):
    exports = []
    for _ in range(2):
        rebuild, queued = kb_rebuilds.kb_rebuild_request(project=project, user=admin_user)
        ((_name, args),) = take_queued_tasks()
        assert queued and rebuild_kb(*args) == "rebuilt"
        exports.append((kb_export_markdown_zip(project=project), kb_export_jsonl(project=project)))
    forget_rebuilds([project])

    assert exports[0] == exports[1]


# ---------------------------------------------------------------------------- a real worker


@pytest.mark.worker
def test_the_page_follows_a_rebuild_through_a_real_worker(
    client_for, admin_user, project, promoted, celery_worker
):
    client = client_for(admin_user)

    client.post("/kb/rebuild/")
    finished = wait_until(
        lambda: (r := client.get(STATUS, headers=HTMX)).has_header("HX-Trigger-After-Swap") and r,
        timeout=30,
    )
    page = client.get("/kb/").content.decode()

    assert "Knowledge base rebuilt: 3 articles." in finished.content.decode()
    assert "Knowledge base rebuilt: 3 articles." in page and "Best practices: kubectl" in page
    assert AuditEvent.objects.filter(action="kb.rebuild", actor_user=admin_user).exists()
    assert b"experiences.rebuild_kb" in celery_worker.log.read_bytes()
    forget_rebuilds([project])


@pytest.mark.worker
def test_a_slow_llm_writer_shows_its_progress_and_a_second_click_joins_it(
    client_for, admin_user, project, promoted, fake_openai, transactional_db, tmp_path
):
    fake_openai.delay = 1.0
    worker = WorkerProcess(
        tmp_path / "worker.log",
        {"OPENAI_BASE_URL": fake_openai.base_url, "OPENAI_API_KEY": "k",
         "HINDSIGHT_LLM_MODEL": "fake-writer", "HINDSIGHT_LLM_TIMEOUT": "10"},
    )  # fmt: skip
    client = client_for(admin_user)
    try:
        client.post("/kb/rebuild/")
        first = kb_rebuilds.kb_rebuild_status(project=project)
        progress = wait_until(
            lambda: (
                "Rebuilding: 1 of 3 articles written."
                in (body := client.get(STATUS, headers=HTMX).content.decode())
                and body
            ),
            timeout=30,
        )
        again = client.post("/kb/rebuild/", follow=True).content.decode()
        wait_until(
            lambda: kb_rebuilds.kb_rebuild_status(project=project).state == "done", timeout=30
        )
    finally:
        worker.stop()

    assert '<progress value="1" max="3"' in progress
    assert "A rebuild requested by ada is already running." in again
    assert kb_rebuilds.kb_rebuild_status(project=project).id == first.id
    assert len(fake_openai.chat_requests) == 3  # one rebuild, three articles
    assert set(KbArticle.objects.values_list("generated_by", flat=True)) == {"llm"}
    forget_rebuilds([project])
