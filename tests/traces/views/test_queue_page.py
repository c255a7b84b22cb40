"""/queue/ as a work list: n of N, pages, filters, why, who holds what, progress, guidelines."""

import re
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import AuditEvent, Project
from traces.models import ReviewClaim, Step
from traces.services.review_claims import claim_next

HTMX = {"HX-Request": "true"}


def _rows(body: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr id="queue-row-(\d+)"', body)]


def test_the_queue_says_which_of_how_many_and_pages_on(client_for, reviewer, project, make_trace):
    traces = [make_trace(project, task=f"Task number {n}") for n in range(25)]
    client = client_for(reviewer)

    first = client.get("/queue/")
    body = first.content.decode()
    assert "1–20 of 25" in body
    cursor = first.context["result"].page.next_cursor
    second = client.get(f"/queue/?cursor={cursor}").content.decode()

    assert "21–25 of 25" in second and 'id="queue-next"' not in second
    assert "← First page" in second
    assert _rows(body) + _rows(second) == [t.pk for t in traces]  # all, once, oldest first


def test_a_mangled_cursor_shows_the_first_page(client_for, reviewer, project, make_trace):
    make_trace(project)

    response = client_for(reviewer).get("/queue/?cursor=bm9wZQ")

    assert response.status_code == 200 and "1–1 of 1" in response.content.decode()


def test_filters_narrow_the_queue_by_agent_outcome_and_why(
    client_for, reviewer, project, make_trace
):
    mine = make_trace(project, agent="gpt-4o-mini", outcome="failure", task="Mine to check")
    make_trace(project, agent="ops-bot", outcome="failure", task="Other agent")
    unsure = make_trace(project, agent="gpt-4o-mini", outcome="success", task="Unsure one")
    Step.objects.filter(trace=unsure, index=0).update(label_confidence=0.3)
    client = client_for(reviewer)

    by_agent = client.get("/queue/?agent=gpt-4o-mini&outcome=failure").content.decode()
    by_why = client.get("/queue/?why=low-confidence").content.decode()

    assert _rows(by_agent) == [mine.pk] and "1–1 of 1 matching these filters" in by_agent
    assert "<strong>3</strong> waiting" in by_agent  # the queue's size, not the filtered count
    assert _rows(by_why) == [unsure.pk]
    assert '<option value="gpt-4o-mini" selected>' in by_agent


def test_a_filter_without_match_says_so(client_for, reviewer, project, make_trace):
    make_trace(project)

    body = client_for(reviewer).get("/queue/?why=disagreement").content.decode()

    assert "Nothing waiting matches these filters" in body


def test_filtering_with_htmx_gets_the_results_alone(client_for, reviewer, project, make_trace):
    make_trace(project)

    response = client_for(reviewer).get("/queue/?outcome=success", headers=HTMX)

    assert response.content.lstrip().startswith(b'<section id="results"')
    assert b"<html" not in response.content and "HX-Request" in response["Vary"]


def test_the_why_explains_the_priority_of_each_row(client_for, reviewer, project, make_trace):
    plain = make_trace(project, labelled="heuristic")
    unsure = make_trace(project)
    Step.objects.filter(trace=unsure, index=1).update(label_confidence=0.2)
    Step.objects.filter(trace=unsure, index=2).update(label_confidence=0.9)
    corrected = make_trace(project)
    Step.objects.filter(trace=corrected, index=0).update(label_source="human")
    failed = make_trace(project, outcome="failure", steps=4)
    Step.objects.filter(trace=failed, index=1).update(label="failed", label_confidence=0.95)
    Step.objects.filter(trace=failed, index=3).update(label="misleading", label_confidence=0.55)
    # the heuristic's fallback confidence is exactly the threshold: not under it
    at_threshold = make_trace(project)
    Step.objects.filter(trace=at_threshold).update(label_confidence=0.6)

    body = client_for(reviewer).get("/queue/").content.decode()

    assert _rows(body) == [failed.pk, corrected.pk, unsure.pk, at_threshold.pk, plain.pk]
    assert (
        "the machine blames steps 1 (failed), 3 (misleading); "
        "4 machine labels unchecked, the least sure 55 %"
    ) in body
    assert 'class="why-title why-failure">Failed run<' in body
    assert "a person changed 1 label; 2 machine labels unchecked" in body
    assert "1 of 3 labels under 60 % confidence (lowest 20 %)" in body
    assert "no person has looked at it: 3 machine labels unchecked, the least sure 60 %" in body
    assert "0 of 3 labels under" not in body
    assert "heuristic labels" not in body


def test_the_why_filter_reaches_failed_runs(client_for, reviewer, project, make_trace):
    make_trace(project)
    failed = make_trace(project, outcome="partial")

    body = client_for(reviewer).get("/queue/?why=failure").content.decode()

    assert _rows(body) == [failed.pk]
    assert "Partly failed run</span><small>the machine blames no step" in body


def test_a_trace_held_by_another_reviewer_shows_who_holds_it_until_when(
    client_for, reviewer, admin_user, project, make_trace
):
    held = make_trace(project)
    free = make_trace(project)
    claim = claim_next(project=project, user=admin_user)
    assert claim.trace_id == held.pk
    until = timezone.localtime(claim.expires_at).strftime("%H:%M")

    body = client_for(reviewer).get("/queue/").content.decode()

    row = body[body.index(f'id="queue-row-{held.pk}"') : body.index(f'id="queue-row-{free.pk}"')]
    assert 'class="held"' in row and "<bdi>ada</bdi>" in row and f"{until} UTC" in row
    assert claim_next(project=project, user=reviewer).trace_id == free.pk  # never handed out


def test_my_own_claim_says_you(client_for, reviewer, project, make_trace):
    make_trace(project)
    claim_next(project=project, user=reviewer)

    body = client_for(reviewer).get("/queue/").content.decode()

    assert "<strong>you</strong>" in body and "Continue trace" in body
    assert re.search(r"yours until <time [^>]+>\d\d:\d\d UTC</time>", body)


def test_progress_counts_what_the_reviewer_finished_against_the_queue(
    client_for, reviewer, admin_user, project, make_trace
):
    for _ in range(3):
        make_trace(project, steps=1)
    client = client_for(reviewer)
    client.post("/queue/claim/")
    claim = ReviewClaim.objects.get()
    client.post(f"/queue/{claim.pk}/finish/", {"versions": "0:1", "confirmed": "1"})
    other = claim_next(project=project, user=admin_user)  # someone else's work is not mine
    ReviewClaim.objects.filter(pk=other.pk).update(finished_at=timezone.now())

    body = client.get("/queue/").content.decode()

    assert "You finished <strong>1</strong> this session, 1 today" in body
    assert '<progress value="1" max="3"' in body  # 1 done, 2 waiting (one claimed by me)


def test_rows_link_the_task_and_show_when_they_came_with_a_timezone(
    client_for, reviewer, project, make_trace
):
    trace = make_trace(project, task="Find the <b>OOM</b> cause")

    body = client_for(reviewer).get("/queue/").content.decode()

    link = f'<a href="/traces/{trace.pk}/"><bdi>Find the &lt;b&gt;OOM&lt;/b&gt; cause</bdi></a>'
    assert link in body
    received = timezone.localtime(trace.created_at).strftime("%H:%M")
    assert f"{received} UTC</time>" in body


def test_an_admin_writes_guidelines_that_every_reviewer_reads_as_text(
    client_for, reviewer, admin_user, project
):
    text = "Label a retry as redundant.\n<script>alert(1)</script> is text.\r\nAsk in #review."

    response = client_for(admin_user).post("/queue/guidelines/", {"guidelines": text}, follow=True)

    assert response.redirect_chain == [("/queue/", 302)]
    assert "Guidelines saved." in response.content.decode()
    project.refresh_from_db()
    assert project.review_guidelines == text.replace("\r\n", "\n")
    event = AuditEvent.objects.get(action="project.guidelines")
    assert event.after == {"guidelines": project.review_guidelines}
    body = client_for(reviewer).get("/queue/").content.decode()
    assert "Guidelines for reviewers" in body
    assert (
        "Label a retry as redundant.<br>&lt;script&gt;alert(1)&lt;/script&gt; is text.<br>"
        "Ask in #review." in body
    )
    assert "<script>alert(1)" not in body
    assert 'action="/queue/guidelines/"' not in body  # reviewers read, admins write


def test_no_guidelines_show_no_panel_to_reviewers(client_for, reviewer, admin_user, project):
    assert "Guidelines for reviewers" not in client_for(reviewer).get("/queue/").content.decode()
    admin_page = client_for(admin_user).get("/queue/").content.decode()
    assert "Write guidelines for this project" in admin_page


def test_emptying_the_guidelines_removes_them(client_for, admin_user, project):
    Project.objects.filter(pk=project.pk).update(review_guidelines="Old rules")

    response = client_for(admin_user).post("/queue/guidelines/", {"guidelines": "  "}, follow=True)

    assert "Guidelines removed." in response.content.decode()
    project.refresh_from_db()
    assert project.review_guidelines == ""


def test_reviewers_and_strangers_cannot_write_guidelines(client_for, reviewer, project, client):
    assert client_for(reviewer).post("/queue/guidelines/", {"guidelines": "x"}).status_code == 403
    assert client.post("/queue/guidelines/", {"guidelines": "x"}).status_code == 302  # login
    project.refresh_from_db()
    assert project.review_guidelines == ""


def test_too_long_guidelines_are_refused_with_a_reason(client_for, admin_user, project):
    response = client_for(admin_user).post(
        "/queue/guidelines/", {"guidelines": "x" * 10_001}, follow=True
    )

    assert "Guidelines not saved: guidelines are at most 10,000 characters." in (
        response.content.decode()
    )
    project.refresh_from_db()
    assert project.review_guidelines == ""


def test_guidelines_only_take_a_post(client_for, admin_user):
    assert client_for(admin_user).get("/queue/guidelines/").status_code == 405


def test_another_page_of_the_queue_runs_as_many_queries_as_the_first(
    client_for, reviewer, admin_user, project, make_trace
):
    def count_queries(client, path: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(path).status_code == 200
        return len(captured)

    for _ in range(25):
        make_trace(project)
    claim_next(project=project, user=admin_user)
    client = client_for(reviewer)
    first = count_queries(client, "/queue/")
    cursor = client.get("/queue/").context["result"].page.next_cursor

    assert count_queries(client, f"/queue/?cursor={cursor}&agent=ops-bot") <= first + 1


def _backlog(body: str) -> str:
    found = re.search(r'<p class="machine-backlog" id="machine-backlog">(.*?)</p>', body, re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", found.group(1))).strip() if found else ""


def test_the_machine_reviews_backlog_and_its_drain_time_are_shown(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    from traces.models import Trace

    waiting = [make_trace(project, labelled=None) for _ in range(30)]
    Trace.objects.filter(pk__in=[t.pk for t in waiting]).update(review_status="queued")
    done = [make_trace(project) for _ in range(5)]  # reviewed just now: 0.5 a minute
    Trace.objects.filter(pk__in=[t.pk for t in done]).update(review_status_at=timezone.now())
    client = client_for(reviewer)

    said = _backlog(client.get("/queue/").content.decode())
    assert said == (
        "Machine review: 30 trajectories not reviewed yet; 5 reviewed in the last 10 minutes, "
        "so about 60 minutes to go."
    )

    # nothing reviewed lately: no made-up estimate, a question about the worker instead
    Trace.objects.filter(pk__in=[t.pk for t in done]).update(
        review_status_at=timezone.now() - timedelta(hours=1)
    )
    Trace.objects.filter(pk=waiting[0].pk).update(review_status="failed")
    said = _backlog(client.get("/queue/").content.decode())
    assert said.startswith("Machine review: 29 trajectories not reviewed yet; none reviewed")
    assert "is a worker running?" in said and said.endswith(
        "1 failed and can be sent back to review from the trace."
    )


def test_no_backlog_line_when_the_machine_review_is_through(
    client_for, reviewer, project, make_trace
):  # fmt: skip
    make_trace(project)

    assert 'id="machine-backlog"' not in client_for(reviewer).get("/queue/").content.decode()
